"""Which revision judges an imported pass's questions (issue 44, item 5): the one the trial ran
on — the revision its folder was exported from (``provenance/validation.json``), else the
task's current revision when the import was queued — never what the task became since. A
blocker edited after the run changes neither the stored verdicts nor the Ask-F1, whether the
edit comes before the worker stores the pass, before another worker takes the run over, or
before the same trials are imported again. The sidecar's own verdicts are checked against
that revision and the pass says where they differ."""

import json

import pytest
from django.conf import settings

from evaluation.models import TaskPass
from evaluation.results import PassRecord
from evaluation.selectors import mode_summary, project_passes
from evaluation.services import evaluation_run_execute, results_import_start
from evaluation.services.results_import import imported_pass_store
from exchange.demo.blocked_task import DEMO_BLOCKERS
from hilbench_annotate import services as core
from hilbench_annotate.errors import ImportRefused
from hilbench_annotate.selectors import revision_current

from .test_harbor_tries import bundle_task, jobs_folder
from .util import import_results

pytestmark = pytest.mark.django_db
TRIGGER = DEMO_BLOCKERS[0]["trigger_questions"][0]
FIRST, SECOND = DEMO_BLOCKERS[0]["key"], DEMO_BLOCKERS[1]["key"]
IRRELEVANT = "What is the capital of France?"


def _ask_logs(jobs, logs: dict[str, list[tuple[str, str | None]]]) -> None:
    """Each trial's ask-human sidecar log: (question, blocker the sidecar matched)."""
    for name, asked in logs.items():
        path = next(jobs.glob(f"*/{name}")) / "artifacts" / "harbor_shared"
        path.mkdir(parents=True)
        questions = [{"question": q, "response": "…", "blocker_name": b} for q, b in asked]
        (path / "ask_human_metrics.json").write_text(json.dumps({"questions": questions}))


def _edit_away_first_blocker(task, author) -> None:
    task.refresh_from_db()
    blocker = task.blockers.get(key=FIRST)
    core.blocker_delete(blocker=blocker, actor=author, expected_version=task.version)


def _figures(run) -> tuple[list, float]:
    passes = TaskPass.objects.filter(run=run).order_by("index")
    verdicts = [[c.blocker_key for c in p.ask_human_run.calls.order_by("id")] for p in passes]
    rows = [r for r in project_passes(project=run.project) if r.run_id == run.pk]
    return verdicts, mode_summary(rows=rows)["ask_f1"]


def test_a_blocker_edited_after_the_run_changes_no_stored_verdict(sql_task, lead, author, tmp_path):
    exported = revision_current(task=sql_task)
    folder = bundle_task(tmp_path / "bundle", sql_task)
    jobs = jobs_folder(tmp_path, folder, [
        ("sql_0__ask_human__a", "ask_human", 1.0, None),
        ("sql_0__ask_human__b", "ask_human", 0.0, None),
    ])  # fmt: skip
    _ask_logs(jobs, {
        "sql_0__ask_human__a": [(TRIGGER, FIRST), (IRRELEVANT, None)],
        "sql_0__ask_human__b": [(TRIGGER, FIRST), (IRRELEVANT, SECOND), ("", None)],
    })  # fmt: skip
    (run,) = results_import_start(project=sql_task.project, actor=lead, path=jobs)
    # The worker stores the first pass, then dies; the blocker is edited away; another
    # worker takes the run over and stores the second.
    pending = (settings.UPLOAD_STORE / run.pending["file"]).read_text().splitlines()
    imported_pass_store(run, sql_task, PassRecord(**json.loads(pending[0])))
    _edit_away_first_blocker(sql_task, author)
    assert revision_current(task=sql_task).number == exported.number + 1
    evaluation_run_execute(run_id=run.pk)

    passes = list(TaskPass.objects.filter(run=run).order_by("index"))
    assert {p.revision_id for p in passes} == {exported.pk}
    assert {p.ask_human_run.revision_id for p in passes} == {exported.pk}
    assert {p.blocker_count for p in passes} == {len(DEMO_BLOCKERS)}
    verdicts, ask_f1 = _figures(run)
    assert verdicts == [[FIRST, None], [FIRST, None, None]]
    precision, recall = 2 / 5, 2 / (2 * len(DEMO_BLOCKERS))  # micro over both passes
    assert ask_f1 == pytest.approx(2 * precision * recall / (precision + recall))
    # The sidecar's verdicts, checked on the same revision: one it gave the app does not.
    assert passes[0].detail["sidecar_check"] == {
        "revision": exported.number, "agree": 2, "differ": [], "not_in_revision": [],
    }  # fmt: skip
    assert passes[1].detail["sidecar_check"]["differ"] == [
        {"question": 2, "sidecar": SECOND, "app": None}
    ]

    # The same trials imported again, after the edit: the same figures.
    (again,) = results_import_start(project=sql_task.project, actor=lead, path=jobs)
    evaluation_run_execute(run_id=again.pk)
    assert _figures(again) == (verdicts, ask_f1)


def test_a_results_file_is_judged_on_the_revision_current_when_it_was_imported(
    sql_task, lead, author, monkeypatch
):
    """A harness's JSONL names no revision: its passes keep the one current at import, even
    when the blocker is edited before the worker stores them."""
    before = revision_current(task=sql_task)

    def edit_then_store(*, run_id: int) -> None:
        _edit_away_first_blocker(sql_task, author)
        evaluation_run_execute(run_id=run_id)

    monkeypatch.setattr("tests.evaluation.util.evaluation_run_execute", edit_then_store)
    (run,) = import_results(project=sql_task.project, actor=lead, records=[
        {"task": sql_task.pk, "mode": "ask_human", "pass": 1, "resolved": False,
         "questions": [TRIGGER]},
    ])  # fmt: skip
    task_pass = TaskPass.objects.get(run=run)
    assert revision_current(task=sql_task).pk != before.pk
    assert task_pass.revision_id == before.pk
    assert [c.blocker_key for c in task_pass.ask_human_run.calls.all()] == [FIRST]


def test_a_trial_whose_folder_names_a_revision_the_task_lacks_is_refused(sql_task, lead, tmp_path):
    folder = bundle_task(tmp_path / "bundle", sql_task)
    (folder / "provenance" / "validation.json").write_text(json.dumps({"revision": 99}))
    jobs = jobs_folder(tmp_path, folder, [("sql_0__baseline__a", "baseline", 1.0, None)])
    with pytest.raises(ImportRefused) as refused:
        results_import_start(project=sql_task.project, actor=lead, path=jobs)
    assert refused.value.problems == [
        ("sql_0__baseline__a", f"task {sql_task.pk} has no revision 99 to judge it on")
    ]
