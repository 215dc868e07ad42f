"""The oracle's results are kept by the hash of what a run reads (``bundles.oracle``): an
export's pool processes start on the same tasks at once, and processes that want the same
result compute it once, the others wait for it and read it."""

import multiprocessing
import time
import uuid
from functools import partial
from pathlib import Path

from exchange.bundles import oracle

SCORED = {"oracle": {"reward": 1, "reason": "ok"}, "noop": {"reward": 0, "reason": "ok"}}


def _compute(calls: Path, result: dict) -> dict:
    with open(calls, "a") as handle:
        handle.write("run\n")
    time.sleep(0.4)  # long enough for the other processes to ask meanwhile
    return result


def _ask(key: str, calls: Path, answers) -> None:
    answers.put(oracle._cached(key, partial(_compute, calls, SCORED)))


def test_processes_that_want_the_same_result_compute_it_once(tmp_path):
    key, calls = uuid.uuid4().hex, tmp_path / "calls"
    context = multiprocessing.get_context("fork")
    answers = context.Queue()
    processes = [context.Process(target=_ask, args=(key, calls, answers)) for _ in range(3)]
    for process in processes:
        process.start()
    results = [answers.get(timeout=60) for _ in processes]
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    assert calls.read_text() == "run\n"  # one of them ran it; the other two read its result
    assert results == [SCORED] * 3
    assert oracle._cached(key, partial(_compute, calls, {})) == SCORED  # kept: not run again
    assert calls.read_text() == "run\n"


def test_a_result_without_a_reward_is_not_kept(tmp_path):
    """A run that could not score (the sandbox failed) is tried again next time."""
    key, calls = uuid.uuid4().hex, tmp_path / "calls"
    unscored = {"oracle": {"reward": None, "reason": "the sandbox failed"}, "noop": SCORED["noop"]}
    assert oracle._cached(key, partial(_compute, calls, unscored)) == unscored
    assert oracle._cached(key, partial(_compute, calls, SCORED)) == SCORED
    assert calls.read_text() == "run\nrun\n"
