import json
import shutil

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from exchange.importers import import_bird
from hilbench_annotate.errors import ImportRefused
from hilbench_annotate.models import Revision, SqlDatabase, Task

from ..conftest import shared_path

pytestmark = pytest.mark.django_db


def test_spider_bird_dev_imports_all_125_tasks_with_databases_and_descriptions(project):
    questions = shared_path("data", "spider-bird", "dev.json")
    databases = shared_path("data", "spider-bird", "dev_databases")

    call_command("import_bird", questions=questions, databases=databases, project=project.slug)

    tasks = Task.objects.filter(project=project)
    assert tasks.count() == 125
    assert SqlDatabase.objects.count() == 5
    records = json.loads(questions.read_text())
    first = Task.objects.get(project=project, source_id=f"{records[0]['db_id']}/0")
    env = first.sql_environment
    assert env.database.path.is_file()
    assert env.gold_sql == records[0]["SQL"]
    assert set(env.descriptions) == {
        p.stem for p in (databases / records[0]["db_id"] / "database_description").glob("*.csv")
    }
    assert first.original_spec["question"] == records[0]["question"]
    # Every imported task starts with one revision.
    assert Revision.objects.filter(task__project=project).count() == 125


def test_reimport_adds_nothing(project):
    questions = shared_path("data", "spider-bird", "dev.json")
    databases = shared_path("data", "spider-bird", "dev_databases")
    import_bird(project=project, questions=questions, databases=databases)
    before = list(Task.objects.order_by("pk").values_list("pk", "version", "updated_at"))

    report = import_bird(project=project, questions=questions, databases=databases)

    assert report.created == []
    assert len(report.unchanged) == 125
    assert list(Task.objects.order_by("pk").values_list("pk", "version", "updated_at")) == before
    assert Revision.objects.count() == 125


def test_one_malformed_record_imports_nothing_and_is_named(project, tmp_path):
    records = json.loads(shared_path("data", "spider-bird", "dev.json").read_text())
    del records[17]["SQL"]
    records[40]["question"] = ""
    bad = tmp_path / "dev-broken.json"
    bad.write_text(json.dumps(records))

    with pytest.raises(CommandError) as err:
        call_command(
            "import_bird",
            questions=bad,
            databases=shared_path("data", "spider-bird", "dev_databases"),
            project=project.slug,
        )

    message = str(err.value)
    assert "record 17: missing field(s) SQL" in message
    assert "record 40: question must be non-empty text" in message
    assert Task.objects.count() == 0


def test_truncated_json_is_refused_naming_where(project, tmp_path, demo_data):
    text = demo_data["sql"]["questions"].read_text()
    bad = tmp_path / "cut.json"
    bad.write_text(text[: len(text) // 2])

    with pytest.raises(ImportRefused) as err:
        import_bird(project=project, questions=bad, databases=demo_data["sql"]["databases"])

    assert "not valid JSON" in str(err.value)
    assert Task.objects.count() == 0


def test_minidev_without_databases_is_refused_naming_them(project):
    questions = shared_path("data", "bird-minidev", "mini_dev_sqlite.json")
    databases = shared_path("data", "bird-minidev", "database_description")

    with pytest.raises(ImportRefused) as err:
        import_bird(project=project, questions=questions, databases=databases)

    for name in ("california_schools", "financial", "toxicology", "formula_1"):
        assert name in err.value.summary
    assert Task.objects.count() == 0


def test_minidev_with_skip_missing_databases_imports_and_notes_absence(project):
    questions = shared_path("data", "bird-minidev", "mini_dev_sqlite.json")
    databases = shared_path("data", "bird-minidev", "database_description")

    report = import_bird(
        project=project, questions=questions, databases=databases, skip_missing_databases=True
    )

    # 500 records, two of which repeat earlier ones verbatim.
    assert len(report.created) == 498
    assert any("repeats record" in note for note in report.notes)
    task = Task.objects.get(project=project, source_id="financial/137")
    assert task.sql_environment.database is None
    assert "absent" in task.import_notes
    # The human-written description CSVs still came in.
    assert "loan" in task.sql_environment.descriptions
    assert task.original_spec["evidence"] and task.blocked_spec["evidence"] == ""


def test_db_id_and_limit_select_records(project, demo_data):
    report = import_bird(
        project=project,
        questions=demo_data["sql"]["questions"],
        databases=demo_data["sql"]["databases"],
        db_id="retail_bank",
        limit=2,
    )
    assert len(report.created) == 2


def test_jsonl_input_and_not_a_database_file(project, tmp_path, demo_data):
    records = json.loads(demo_data["sql"]["questions"].read_text())
    jsonl = tmp_path / "q.jsonl"
    jsonl.write_text("\n".join(json.dumps(r) for r in records))
    databases = tmp_path / "dbs"
    shutil.copytree(demo_data["sql"]["databases"], databases)
    (databases / "retail_bank" / "retail_bank.sqlite").write_text("not a database")

    with pytest.raises(ImportRefused) as err:
        import_bird(project=project, questions=jsonl, databases=databases)
    assert "retail_bank.sqlite is not a SQLite database file" in err.value.render()

    report = import_bird(project=project, questions=jsonl, databases=demo_data["sql"]["databases"])
    assert len(report.created) == len(records)


def test_db_id_with_path_separator_is_refused(project, tmp_path, demo_data):
    records = json.loads(demo_data["sql"]["questions"].read_text())
    records[2]["db_id"] = "../etc"
    bad = tmp_path / "q.json"
    bad.write_text(json.dumps(records))
    with pytest.raises(ImportRefused) as err:
        import_bird(project=project, questions=bad, databases=demo_data["sql"]["databases"])
    assert err.value.problems == [(2, "db_id '../etc' is not a plain database name")]


def _bad_record_and_unknown_database(demo_data, tmp_path):
    """The demo questions with one bad record and one naming a database not supplied."""
    records = json.loads(demo_data["sql"]["questions"].read_text())
    records[3]["SQL"] = 42
    records.append({**records[0], "question_id": 900, "db_id": "harbour_fees"})
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(records))
    return path


def test_a_bad_record_and_a_missing_database_are_reported_together(project, tmp_path, demo_data):
    questions = _bad_record_and_unknown_database(demo_data, tmp_path)
    databases = tmp_path / "dbs"
    shutil.copytree(demo_data["sql"]["databases"], databases)

    with pytest.raises(ImportRefused) as err:
        import_bird(project=project, questions=questions, databases=databases)

    assert err.value.problems == [
        (3, "SQL must be non-empty text"),
        (
            "database harbour_fees",
            "harbour_fees/harbour_fees.sqlite is missing (1 question(s) use it); add it, or "
            "pass --skip-missing-databases to import its questions without it",
        ),
    ]
    text = err.value.render()
    assert text.startswith("dev.json: 1 bad record(s); missing database file(s) harbour_fees.")
    assert "  record 3: SQL must be non-empty text" in text
    assert "  database harbour_fees: harbour_fees/harbour_fees.sqlite is missing" in text
    assert str(tmp_path) not in text  # folders are named inside the databases folder only
    assert Task.objects.count() == 0


def test_the_command_must_name_an_existing_project(project, tmp_path, demo_data):
    """Made on the fly, a project had no members: nobody saw the imported tasks."""
    files = {
        "questions": demo_data["sql"]["questions"],
        "databases": demo_data["sql"]["databases"],
    }
    with pytest.raises(CommandError) as unnamed:
        call_command("import_bird", **files)
    with pytest.raises(CommandError) as unknown:
        call_command("import_bird", **files, project="imports")

    assert str(unnamed.value).startswith("Name the project to import into. Give --project SLUG.")
    assert str(unknown.value).startswith("No project 'imports'. Give --project SLUG.")
    for err in (unnamed, unknown):
        assert f"Existing projects: {project.slug} ({project.name})." in str(err.value)
    assert not type(project).objects.filter(slug="imports").exists()
    assert Task.objects.count() == 0

    call_command("import_bird", **files, project=project.slug)
    assert Task.objects.filter(project=project).count() == 6
