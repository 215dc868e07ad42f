"""Oracle and no-op runs of exported tasks, the harness's way, in the local sandbox: the
demo's SQL and SWE tasks and a real SWE-bench instance score 1 with ``solve.sh`` and 0
untouched; the result is in ``validation.json``; a task whose oracle fails is exported only
in a draft."""

import json
import subprocess

import pytest
from django.core.management.base import CommandError

from exchange.bundles import layout
from exchange.importers import import_swebench
from exchange.models import ExportJob
from exchange.selectors import export_entries
from hilbench_annotate.models import SqlEnvironment, Task
from tests.conftest import FIXTURES, shared_path

from .bundle_helpers import approve_validated, export, extract, members, seed_demo, sql_task, user

pytestmark = pytest.mark.django_db
MODES = ("baseline", "full_info", "ask_human")


def _oracle(files: dict[str, bytes], folder: str) -> dict:
    return json.loads(files[f"{folder}/{layout.VALIDATION}"])["oracle"]


def test_the_demo_tasks_score_1_with_solve_sh_and_0_untouched(settings, tmp_path):
    project = seed_demo(settings, tmp_path)
    swe = Task.objects.get(project=project, domain="swe")
    files = members(export(project, tmp_path / "b.tar.gz", tasks=[sql_task(project), swe]))
    for folder in ("sql_0", "swe_0"):
        runs = _oracle(files, folder)
        assert runs["oracle"]["reward"] == 1, runs
        assert runs["noop"]["reward"] == 0, runs
    assert "golden output" in _oracle(files, "sql_0")["oracle"]["reason"]
    # The no-op SWE run fails on exactly the FAIL_TO_PASS tests of the task.
    assert "4 of 18 tests do not pass" in _oracle(files, "swe_0")["noop"]["reason"]


def test_a_task_whose_oracle_fails_is_exported_only_as_a_draft(settings, tmp_path):
    project = seed_demo(settings, tmp_path)
    sql = sql_task(project)
    approve_validated(sql)
    # The golden output no longer matches what the ground truth returns (changed behind the
    # app's back, so every gate is still green): the verifier must fail the oracle.
    SqlEnvironment.objects.filter(task=sql).update(golden_output="amount\n-1\n")

    with pytest.raises(CommandError, match="the oracle run scores 0, not 1"):
        export(project, tmp_path / "final.tar.gz", tasks=[sql], draft=False)
    job = ExportJob.objects.get()
    assert job.status == "failed"
    assert "the oracle run scores 0, not 1" in job.error
    assert "only a draft can be exported" in job.error
    assert Task.objects.get(pk=sql.pk).status == "approved"  # not marked exported

    files = members(export(project, tmp_path / "draft.tar.gz", tasks=[sql], draft=True))
    runs = _oracle(files, "sql_0")
    assert runs["oracle"]["reward"] == 0 and runs["noop"]["reward"] == 0
    assert "no predicted row left holds the values of gold row (-1)" in runs["oracle"]["reason"]
    # Approved with every gate green, yet never called validated: its oracle is not 1.
    (entry,) = json.loads(files[layout.MANIFEST])["tasks"]
    assert entry["validated"] is False and entry["oracle"] == "oracle 0, no-op 0"
    assert entry["reason"].startswith("the oracle run scores 0, not 1")
    job = ExportJob.objects.order_by("-pk").first()
    assert next(export_entries(job=job))["validated"] is False


def test_a_release_task_records_why_its_oracle_is_not_run(settings, tmp_path):
    from exchange.importers import import_hilbench

    project = seed_demo(settings, tmp_path)
    import_hilbench(project=project, root=FIXTURES / "hilbench", actor=user("author"))
    task = Task.objects.filter(project=project, release_files__isnull=False).distinct().first()
    files = members(export(project, tmp_path / "r.tar.gz", tasks=[task]))
    folder = task.source_metadata["folder"]
    assert "prebuilt image" in _oracle(files, folder)["not_run"]


@pytest.mark.slow
@pytest.mark.shared_data
def test_a_real_swebench_instance_scores_1_and_0(settings, tmp_path):
    project = seed_demo(settings, tmp_path)
    data = shared_path("data", "swe-bench")
    records = [json.loads(line) for line in (data / "pytest-instances.jsonl").open()]
    chosen = tmp_path / "instance.jsonl"
    chosen.write_text(
        "".join(
            json.dumps(r) + "\n" for r in records if r["instance_id"] == "pytest-dev__pytest-7432"
        )
    )
    import_swebench(
        project=project,
        instances=chosen,
        repo=str(data / "pytest-dev__pytest.bundle"),
        actor=user("author"),
    )
    task = Task.objects.get(project=project, source_id="pytest-dev__pytest-7432")
    out = export(project, tmp_path / "real.tar.gz", tasks=[task])
    files = members(out)
    runs = _oracle(files, "swe_0")
    assert runs["oracle"]["reward"] == 1, runs
    assert runs["noop"]["reward"] == 0, runs
    root = extract(out, tmp_path / "tree")
    for mode in MODES:
        assert (root / "swe_0" / mode / "solution" / "solve.sh").is_file()
    metadata = json.loads((root / "swe_0" / layout.METADATA).read_text())
    spec = task.swe_environment.environment_spec
    assert (metadata["language"], metadata["log_parser"]) == ("python", spec["log_parser"])
    shipped = tmp_path / "shipped"
    subprocess.run(["git", "init", "-q", str(shipped)], check=True)
    with (root / "swe_0" / layout.SWE_REPOSITORY).open("rb") as stream:
        subprocess.run(
            ["git", "-C", str(shipped), "fast-import", "--quiet"], stdin=stream, check=True
        )
    subprocess.run(
        ["git", "-C", str(shipped), "cat-file", "-e", metadata["base_commit"]], check=True
    )
