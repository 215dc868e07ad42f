"""The oracle's results are kept by the hash of what a run reads (``bundles.oracle``): an
export's pool processes start on the same tasks at once, and processes that want the same
result compute it once, the others wait for it and read it (or, when its runs did not
score, take that outcome without running them again)."""

import multiprocessing
import time
import uuid
from functools import partial
from pathlib import Path

from exchange.bundles import oracle
from validators.sandbox import sandbox_root

SCORED = {"oracle": {"reward": 1, "reason": "ok"}, "noop": {"reward": 0, "reason": "ok"}}


def _compute(calls: Path, result: dict) -> dict:
    with open(calls, "a") as handle:
        handle.write("run\n")
    time.sleep(0.4)  # long enough for the other processes to ask meanwhile
    return result


UNSCORED = {"oracle": {"reward": None, "reason": "the sandbox failed"}, "noop": SCORED["noop"]}


def _ask(key: str, calls: Path, result: dict, answers, together) -> None:
    together.wait(timeout=60)  # all three ask at once, however late each one started
    answers.put(oracle._cached(key, partial(_compute, calls, result)))


def _three_at_once(key: str, calls: Path, result: dict) -> list[dict]:
    context = multiprocessing.get_context("fork")
    answers, together = context.Queue(), context.Barrier(3)
    processes = [
        context.Process(target=_ask, args=(key, calls, result, answers, together)) for _ in range(3)
    ]
    for process in processes:
        process.start()
    results = [answers.get(timeout=60) for _ in processes]
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    return results


def test_processes_that_want_the_same_result_compute_it_once(tmp_path):
    key, calls = uuid.uuid4().hex, tmp_path / "calls"
    results = _three_at_once(key, calls, SCORED)
    assert calls.read_text() == "run\n"  # one of them ran it; the other two read its result
    assert results == [SCORED] * 3
    assert oracle._cached(key, partial(_compute, calls, {})) == SCORED  # kept: not run again
    assert calls.read_text() == "run\n"


def test_a_result_without_a_reward_is_not_kept(tmp_path):
    """A run that could not score (the sandbox failed) is tried again next time."""
    key, calls = uuid.uuid4().hex, tmp_path / "calls"
    assert oracle._cached(key, partial(_compute, calls, UNSCORED)) == UNSCORED
    assert oracle._cached(key, partial(_compute, calls, SCORED)) == SCORED
    assert calls.read_text() == "run\nrun\n"


def test_processes_that_waited_take_the_outcome_of_runs_that_did_not_score(tmp_path):
    """They do not queue to run them again one after the other; the next ask runs them."""
    key, calls = uuid.uuid4().hex, tmp_path / "calls"
    assert _three_at_once(key, calls, UNSCORED) == [UNSCORED] * 3
    assert calls.read_text() == "run\n"
    assert oracle._cached(key, partial(_compute, calls, SCORED)) == SCORED
    assert calls.read_text() == "run\nrun\n"


def test_a_result_that_cannot_be_read_is_made_again(tmp_path):
    key, calls = uuid.uuid4().hex, tmp_path / "calls"
    (sandbox_root() / "oracle").mkdir(exist_ok=True)
    (sandbox_root() / "oracle" / f"{key}.json").write_text('{"oracle": {"rew')  # cut short
    assert oracle._cached(key, partial(_compute, calls, SCORED)) == SCORED
    assert calls.read_text() == "run\n"
    assert oracle._read_json(sandbox_root() / "oracle" / f"{key}.json") == SCORED


def test_the_locks_are_the_workers_own():
    """Outside every folder a sandbox sees, and closed to other users."""
    oracle._cached(uuid.uuid4().hex, lambda: SCORED)
    locks = sandbox_root() / oracle.ORACLE_LOCKS
    assert locks.stat().st_mode & 0o777 == 0o700
    assert all(lock.stat().st_mode & 0o777 == 0o600 for lock in locks.glob("*.lock"))
