"""A bundle as the release's ``hil`` CLI runs it: ``manage.py hil_workspace`` writes the
instances and task folders ``run_hil_bench.py`` prepares from the dataset, from the bundle's
files; the release's own loader reads the SWE task folder."""

import csv
import importlib.util
import json
import sqlite3
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from hilbench_annotate.models import Task
from hilbench_annotate.toolkit.compare import golden_output_csv
from tests.conftest import shared_path

from .bundle_helpers import export, seed_demo, sql_task

pytestmark = pytest.mark.django_db

# The keys run_hil_bench.py's prepare_sql_task / prepare_swe_task give an instance.
SQL_ENV = {"database_type", "name", "max_rows", "database_name", "base_db_path",
           "working_db_path", "diff_queries", "chroma_path"}  # fmt: skip
SQL_PROBLEM = {"type", "id", "question", "ground_truth_query", "business_info", "database_name",
               "extra_fields", "expected_sorted", "required_unique", "no_extra_columns_allowed",
               "blocker_registry_path", "table_descriptions_path"}  # fmt: skip
SWE_INSTANCE = {"instance_id", "problem_statement", "repo_name", "base_commit", "image_name",
                "extra_fields"}  # fmt: skip
SWE_EXTRA = {"uid", "repo_or_db_name", "ground_truth_patch", "blocker_registry_path"}


@pytest.fixture
def workspace(settings, tmp_path):
    project = seed_demo(settings, tmp_path)
    sql, swe = sql_task(project), Task.objects.get(project=project, domain="swe")
    bundle = export(project, tmp_path / "b.tar.gz", tasks=[sql, swe])
    call_command("hil_workspace", str(bundle), out=str(tmp_path / "hil"))
    return tmp_path / "hil", sql, swe


def test_sql_instances_are_what_hil_reads(workspace):
    out, sql, _swe = workspace
    [instance] = json.loads((out / "sql_tasks" / "instances.json").read_text())
    assert set(instance["env"]) == SQL_ENV and set(instance["problem_statement"]) == SQL_PROBLEM
    problem, env = instance["problem_statement"], instance["env"]
    assert problem["question"] == sql.blocked_spec["question"]
    assert problem["ground_truth_query"] == sql.sql_environment.gold_sql
    task_dir = out / "sql_tasks" / problem["id"]
    assert env["chroma_path"] == str(task_dir / "chroma_db")
    # The database answers the ground truth with the golden output.
    with sqlite3.connect(f"file:{env['base_db_path']}?mode=ro", uri=True) as db:
        cursor = db.execute(problem["ground_truth_query"])
        rows = cursor.fetchall()
        columns = [c[0] for c in cursor.description]
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert golden_output_csv(columns, rows) == sql.sql_environment.golden_output
    with open(problem["table_descriptions_path"]) as handle:
        described = {row["table_name"] for row in csv.DictReader(handle)}
    assert described == tables
    assert {p.stem for p in task_dir.glob("*.csv")} - {"table_descriptions"} == tables
    registry = json.loads((task_dir / "blocker_registry.json").read_text())
    assert len(registry["blockers"]) == sql.blockers.count() == 3
    assert (out / "build_chroma.py").read_text().count("chroma_db") == 1


def test_swe_instances_build_their_image_and_hold_what_the_release_loader_reads(workspace):
    out, _sql, swe = workspace
    [instance] = json.loads((out / "swe_tasks" / "instances.json").read_text())
    assert set(instance) == SWE_INSTANCE and set(instance["extra_fields"]) == SWE_EXTRA
    assert instance["image_name"].startswith("hilbench-swe:")  # hil runs it as is
    assert instance["extra_fields"]["ground_truth_patch"] == swe.swe_environment.gold_patch
    build = (out / "build_images.sh").read_text().splitlines()[-1].split()
    assert build[:4] == ["docker", "build", "-t", instance["image_name"]]
    assert (Path(build[4]) / "repository.fast-export").is_file()
    task_dir = out / "swe_tasks" / instance["instance_id"]
    metadata = json.loads((task_dir / "metadata.json").read_text())
    assert (metadata["image_name"], metadata["base_commit"]) == (
        instance["image_name"],
        instance["base_commit"],
    )
    assert metadata["log_parser"] == "pytest"
    assert (task_dir / "problem_statement.txt").read_text().startswith("# PROBLEM STATEMENT")


@pytest.mark.shared_data
def test_the_releases_own_loader_reads_the_swe_task_folder(workspace):
    """The release's ``load_instance_from_task_dir`` (third-party code, read from ../shared
    and never copied here) on the folder ``hil_workspace`` wrote."""
    out, _sql, _swe = workspace
    [instance] = json.loads((out / "swe_tasks" / "instances.json").read_text())
    reference = shared_path(
        "examples", "hilbench", "harness-reference", "hil_bench", "utils", "instance_utils.py"
    )
    spec = importlib.util.spec_from_file_location("release_instance_utils", reference)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    loaded = module.load_instance_from_task_dir(out / "swe_tasks" / instance["instance_id"])
    assert loaded["repo_name"] == "app"  # SWE-agent's pre-existing /app repository
    assert loaded["image_name"] == instance["image_name"]
    assert loaded["base_commit"] == instance["base_commit"]
    assert loaded["problem_statement"].startswith("# PROBLEM STATEMENT")
    assert loaded["log_parser"] == "pytest"


def test_an_existing_folder_is_refused(tmp_path):
    (tmp_path / "hil").mkdir()
    with pytest.raises(CommandError, match="exists"):
        call_command("hil_workspace", str(tmp_path), out=str(tmp_path / "hil"))
