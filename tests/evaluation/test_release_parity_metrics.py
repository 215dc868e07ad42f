"""Ask-F1 and pass@k as the app shows them are the HiL-Bench release's (issue 44, items 3-4).

The release's code runs from ../shared (``release_code``): ``compute_hil_metrics`` of
``hil_bench/utils`` per ask log and pooled, and ``run_hil_bench.py``'s ``parse_metrics_rows``
and ``summarize_rows`` on a results folder laid out as its batch runner writes it (per pass:
``metrics.json``, ``preds.json``, ``ask_human_logs.json`` and each instance's ``.traj``). The
app's code is what fills the leaderboard: Harbor trials read by ``harbor_jobs``, each read
question a call (a blank one rejected, the others with the verdict the sidecar logged — the
judge's own reading is item 5's), scored by ``metrics`` and pooled by
``selectors.mode_summary``.

The corpus: 54 ask logs (18 tasks × 3 passes) as the release's ask-human server writes them:
blank and too-short questions, off-task ones, a blocker asked twice, questions past the
3-answer cap (logged as irrelevant), questions naming two blockers (the judge picks one).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from django.core.management import call_command

from evaluation import metrics
from evaluation.harbor_jobs import parse_harbor_jobs
from evaluation.selectors import PassRow, leaderboard, mode_summary

from . import release_code
from .util import import_results

pytestmark = pytest.mark.shared_data

MODEL = "model-x"
PASSES = 3
CAP = 3  # the release server's MAX_ANSWERED_QUESTIONS_PER_INSTANCE
IRRELEVANT = "irrelevant question"


def _entry(text: str, verdict: str | None) -> dict:
    return {"question": text, "response": verdict or IRRELEVANT, "blocker_name": verdict}


def _log(questions: list[tuple[str, str | None]], n_blockers: int) -> dict:
    """One instance's ask log as the release's server writes it: the judge's verdict on each
    question, and past the cap (3 answered) every question logged as irrelevant."""
    entries, answered = [], 0
    for text, verdict in questions:
        if verdict is not None and answered >= CAP:
            verdict = None
        answered += verdict is not None
        entries.append(_entry(text, verdict))
    blockers = [f"blocker_{i}" for i in range(1, n_blockers + 1)]
    return {
        "questions": entries,
        "n_blockers": n_blockers,
        "blockers": {b: any(e["blocker_name"] == b for e in entries) for b in blockers},
    }


def _questions(rng: random.Random, n_blockers: int) -> list[tuple[str, str | None]]:
    blockers = [f"blocker_{i}" for i in range(1, n_blockers + 1)]
    asked: list[str] = []
    out = []
    for _ in range(rng.randint(0, 7)):
        kind = rng.choice(["blank", "short", "off-task", "match", "match", "again", "two"])
        if kind == "blank":
            out.append((rng.choice(["", "   ", "\n\t"]), None))
        elif kind == "short":
            out.append(("ok", None))
        elif kind == "off-task":
            out.append(("What is the capital of France?", None))
        elif kind == "again" and asked:
            out.append((f"Again: which value should {asked[-1]} use?", asked[-1]))
        elif kind == "two":
            out.append(("Which filter and which date range?", rng.choice(blockers)))
        else:
            asked.append(rng.choice(blockers))
            out.append((f"Which value should {asked[-1]} use?", asked[-1]))
    return out


def _corpus() -> dict[str, list[tuple[dict, bool]]]:
    """task -> its three passes: (ask log, resolved)."""
    rng = random.Random(44)
    corpus = {}
    for t in range(18):
        n_blockers = 1 + t % 4
        resolved = [False, False, True] if t == 0 else [rng.random() < 0.4 for _ in "123"]
        corpus[f"task{t}"] = [(_log(_questions(rng, n_blockers), n_blockers), r) for r in resolved]
    # The kinds a random draw might miss, once each: blank questions only (what the app
    # dropped); five answerable questions, two of them past the cap; one question about two
    # blockers, and a blocker asked twice.
    corpus["task0"][0] = (_log([("", None), (" ", None)], 1), False)
    five = [
        (f"Which value should blocker_{i % 2 + 1} use?", f"blocker_{i % 2 + 1}") for i in range(5)
    ]
    corpus["task1"][0] = (_log(five, 2), corpus["task1"][0][1])
    two = [("Which filter and which date range?", "blocker_2"), ("Which filter?", "blocker_2"),
           ("", None), ("What is the capital of France?", None)]  # fmt: skip
    corpus["task2"][0] = (_log(two, 3), corpus["task2"][0][1])
    return corpus


CORPUS = _corpus()


def test_the_corpus_holds_every_kind_of_ask_log():
    logs = [log for passes in CORPUS.values() for log, _ in passes]
    texts = [q["question"] for log in logs for q in log["questions"]]
    assert len(logs) >= 50
    assert any(not t.strip() for t in texts) and "ok" in texts
    assert (
        "What is the capital of France?" in texts and "Which filter and which date range?" in texts
    )
    assert any(t.startswith("Again:") for t in texts)
    capped = [q for q in CORPUS["task1"][0][0]["questions"] if q["blocker_name"] is None]
    assert len(capped) == 2 and all(q["response"] == IRRELEVANT for q in capped)


# --- the release's figures ---------------------------------------------------------------


def _release_results(root: Path) -> Path:
    """The corpus as the release's batch runner leaves a results folder."""
    results = root / "results"
    for p in range(1, PASSES + 1):
        pass_dir = results / MODEL / "ask_human" / f"pass_{p}"
        pass_dir.mkdir(parents=True)
        logs, preds, sql = {}, {}, {}
        for task, passes in CORPUS.items():
            log, resolved = passes[p - 1]
            instance = f"{task}__{MODEL}__ask_human__pass_{p}"
            logs[instance] = json.loads(json.dumps(log))
            preds[instance] = {"model_patch": "SELECT 1"}
            sql[instance] = {"completed": True, "resolved": resolved}
            steps = [{"action": f"ask_human {q['question']}", "observation": q["response"]}
                     for q in log["questions"]]  # fmt: skip
            steps.append({"action": "submit", "observation": "submitted"})
            (pass_dir / instance).mkdir()
            (pass_dir / instance / f"{instance}.traj").write_text(
                json.dumps({"trajectory": steps, "info": {"model_stats": {}}})
            )
        (pass_dir / "ask_human_logs.json").write_text(json.dumps(logs))
        (pass_dir / "preds.json").write_text(json.dumps(preds))
        (pass_dir / "metrics.json").write_text(json.dumps({"results": sql}))
    return results


@pytest.fixture(scope="module")
def release_summary(tmp_path_factory) -> dict:
    run = release_code.runner()
    results = _release_results(tmp_path_factory.mktemp("release"))
    rows = run.parse_metrics_rows("sql", results, PASSES, None)
    return run.summarize_rows(rows, include_partial=False, expected_passes=PASSES)["ask_human"][
        MODEL
    ]


# --- the app's figures -------------------------------------------------------------------


def _trial(job: Path, name: str, source_id: str, started: str, log: dict, ok: bool) -> None:
    """One Harbor trial of an exported task's ask_human mode, with the sidecar's ask log."""
    trial = job / name
    (trial / "artifacts" / "harbor_shared").mkdir(parents=True)
    (trial / "config.json").write_text("{}")
    folder = job.parent.parent / "bundle" / name
    (folder / "annotate").mkdir(parents=True)
    (folder / "annotate" / "task.json").write_text(json.dumps({"source_id": source_id}))
    (trial / "result.json").write_text(json.dumps({
        "task_name": f"hilbench-annotate/{name}-ask_human",
        "task_id": {"path": str(folder / "ask_human")},
        "agent_info": {"name": "terminus-2", "model_info": {"name": MODEL}},
        "started_at": started,
        "exception_info": None,
        "verifier_result": {"rewards": {"reward": float(ok)}},
    }))  # fmt: skip
    (trial / "artifacts" / "harbor_shared" / "ask_human_metrics.json").write_text(json.dumps(log))


def _harbor_jobs(root: Path, corpus: dict) -> Path:
    job = root / "jobs" / "2026-12-02__10-00-00"
    job.mkdir(parents=True)
    (job / "job.log").write_text("")
    for t, (source_id, passes) in enumerate(corpus.items()):
        for p, (log, resolved) in enumerate(passes, start=1):
            started = f"2026-12-02T10:{t:02d}:{p:02d}Z"
            _trial(job, f"t{t}p{p}", source_id, started, log, resolved)
    return root / "jobs"


def _app_rows(root: Path) -> list[PassRow]:
    """The leaderboard's rows for the corpus's trials, read as the app reads them."""
    tasks = {task: n for n, task in enumerate(CORPUS, start=1)}
    trials = parse_harbor_jobs(_harbor_jobs(root, CORPUS), tasks.get)
    [(model, records)] = trials.by_model.items()
    assert model == MODEL
    names = {n: task for task, n in tasks.items()}
    rows = []
    for record in records:
        log = CORPUS[names[record.task_id]][record.index - 1][0]
        # The judge stand-in: each question with text gets the verdict the sidecar logged for
        # it, in order; a blank one is rejected, a call that matched nothing.
        verdicts = iter(q["blocker_name"] for q in log["questions"] if q["question"].strip())
        calls = [next(verdicts) if q["text"].strip() else None for q in record.questions]
        rows.append(
            PassRow(
                run_id=1, model=model, task_id=record.task_id, domain="sql",
                mode=record.mode, index=record.index, resolved=record.resolved,
                blocker_count=log["n_blockers"], revision_id=1, ask_human_run_id=1,
                tokens=None, source="harbor", served_model=None, calls=calls,
                blocker_ids=[f"blocker_{i}" for i in range(1, log["n_blockers"] + 1)],
            )
        )  # fmt: skip
    return rows


# --- Ask-F1 ------------------------------------------------------------------------------


def test_each_ask_log_scores_as_the_release_scores_it():
    hil = release_code.hil_metrics()
    logs = {
        f"{task}#{p}": json.loads(json.dumps(log))
        for task, passes in CORPUS.items()
        for p, (log, _) in enumerate(passes)
    }
    released = hil.compute_hil_metrics(logs)
    scores = []
    for key, log in logs.items():
        calls = [q["blocker_name"] for q in log["questions"]]
        score = metrics.ask_score(calls, blocker_count=log["n_blockers"])
        scores.append(score)
        assert (score.precision, score.recall, score.f1) == pytest.approx(
            (log["precision"], log["recall"], log["ask_f1"])
        ), key
    pooled = metrics.ask_score_micro(scores)
    assert (pooled.precision, pooled.recall, pooled.f1) == pytest.approx(
        (released["precision"], released["recall"], released["ask_f1"])
    )
    assert pooled.calls == released["n_questions"]


def test_every_logged_question_is_read_from_a_harbor_trial_blank_ones_too(tmp_path):
    tasks = {task: n for n, task in enumerate(CORPUS, start=1)}
    trials = parse_harbor_jobs(_harbor_jobs(tmp_path, CORPUS), tasks.get)
    names = {n: task for task, n in tasks.items()}
    for record in trials.by_model[MODEL]:
        log = CORPUS[names[record.task_id]][record.index - 1][0]
        read = [q["text"] for q in record.questions]
        assert read == [q["question"].strip() for q in log["questions"]], record.task_id


def test_the_leaderboard_shows_the_releases_ask_figures(tmp_path, release_summary):
    summary = mode_summary(rows=_app_rows(tmp_path))
    for app, release in (
        ("ask_precision", "ask_precision"),
        ("ask_recall", "ask_recall"),
        ("ask_f1", "ask_f1"),
        ("questions_per_pass", "avg_num_questions_per_pass"),
    ):
        assert summary[app] == pytest.approx(release_summary[release]), app


def test_blank_questions_count_in_the_stored_passes_denominator(sql_task, lead, tmp_path):
    """Through the import a lead runs: blank calls are stored (rejected) and counted."""
    log = {
        "questions": [
            {"question": text, "response": IRRELEVANT, "blocker_name": None}
            for text in ("", "   ", "\t")
        ],
        "n_blockers": 3,
        "blockers": {},
    }
    corpus = {sql_task.source_id: [(log, False)]}
    call_command("import_results", str(_harbor_jobs(tmp_path, corpus)),
                 project=sql_task.project.slug, username=lead.username, wait=True)  # fmt: skip
    (row,) = leaderboard(project=sql_task.project)
    released = release_code.hil_metrics().compute_hil_metrics({"x": json.loads(json.dumps(log))})
    assert row["questions_per_pass"] == released["n_questions"] == 3
    assert row["ask_precision"] == released["precision"] == 0.0


# --- pass@k ------------------------------------------------------------------------------


def test_pass_at_k_is_the_releases(tmp_path, release_summary):
    summary = mode_summary(rows=_app_rows(tmp_path))
    for k in range(1, PASSES + 1):
        assert summary[f"pass_at_{k}"] == pytest.approx(release_summary[f"pass_at_{k}"]), k
    assert summary["pass_at_tasks"] == release_summary["pass_at_1_n"] == len(CORPUS)


def _summarize(per_task: dict[str, list[bool]], expected: int, tmp: Path) -> dict:
    """The release's summary of baseline passes given as resolved flags, in pass order."""
    trajectory = tmp / "trajectory"  # every pass's trajectory is read for a re-run marker
    trajectory.mkdir(exist_ok=True)
    steps = [{"action": "submit", "observation": "submitted"}]
    (trajectory / "pass.traj").write_text(json.dumps({"trajectory": steps}))
    rows = [
        {"task_name": task, "model": MODEL, "mode": "baseline", "pass_num": n,
         "status": "resolved" if ok else "unresolved", "resolved": ok,
         "trajectory_dir": str(trajectory)}
        for task, passes in per_task.items()
        for n, ok in enumerate(passes, start=1)
    ]  # fmt: skip
    result = release_code.runner().summarize_rows(
        rows, include_partial=False, expected_passes=expected
    )
    return result["baseline"][MODEL]


@pytest.mark.parametrize(
    "per_task",
    [
        {"a": [False, False, True]},
        {"a": [False, True, False], "b": [True, False, False], "c": [False] * 3},
        {"a": [True] * 3, "b": [False, False, True], "c": [False, True]},  # c is short
        {"a": [False, False, False, True, True]},  # more passes than k: the first k count
    ],
)
def test_pass_at_k_rates_are_summarize_rows(per_task, tmp_path):
    # The release's num_passes is the run's number of passes; the leaderboard shows k <= 3.
    passes = max(len(p) for p in per_task.values())
    released = _summarize(per_task, passes, tmp_path)
    rates = metrics.pass_at_k_rates(per_task, (1, 2, 3))
    for k in range(1, min(3, passes) + 1):
        assert rates["rates"][k] == pytest.approx(released[f"pass_at_{k}"]), k
        assert rates["tasks"] == released[f"pass_at_{k}_n"]


def test_rewards_0_0_1_on_the_leaderboard(sql_task, lead, tmp_path):
    """The issue's case through the import and the leaderboard: release pass@1 0, pass@2 0;
    the unbiased estimate beside it, under its own name."""
    records = [
        {"task": sql_task.pk, "mode": "baseline", "pass": i, "resolved": r}
        for i, r in enumerate([False, False, True], start=1)
    ]
    import_results(project=sql_task.project, actor=lead, records=records, model=MODEL)
    (row,) = leaderboard(project=sql_task.project)
    released = _summarize({"t": [False, False, True]}, 3, tmp_path)
    assert (row["pass_at_1"], row["pass_at_2"], row["pass_at_3"]) == (0.0, 0.0, 1.0)
    assert [row[f"pass_at_{k}"] for k in (1, 2, 3)] == [released[f"pass_at_{k}"] for k in (1, 2, 3)]
    assert row["pass_at_1_unbiased"] == pytest.approx(1 / 3)
    assert row["pass_at_2_unbiased"] == pytest.approx(2 / 3)
