import json
import shutil
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from exchange.importers import import_bird
from hilbench_annotate.errors import ImportRefused
from hilbench_annotate.models import Revision, SqlDatabase, Task

from ..conftest import FIXTURES, shared_path

pytestmark = pytest.mark.django_db


@pytest.fixture(
    params=[
        pytest.param("fixtures", id="fixtures"),
        pytest.param("spider-bird", id="spider-bird", marks=pytest.mark.shared_data),
    ]
)
def bird_set(request) -> tuple[Path, Path]:
    """(questions, databases) of a BIRD-format set: the project's own (fixtures/bird), and
    five real Spider databases in BIRD's layout where ../shared is."""
    if request.param == "fixtures":
        return FIXTURES / "bird" / "dev.json", FIXTURES / "bird" / "dev_databases"
    root = shared_path("data", "spider-bird")
    return root / "dev.json", root / "dev_databases"


def _distinct(records: list[dict]) -> list[dict]:
    """The records once each: an exact repeat is imported once."""
    seen = {}
    for record in records:
        seen.setdefault((record["db_id"], record["question_id"]), record)
    return list(seen.values())


def test_bird_dev_imports_every_task_with_databases_and_descriptions(project, bird_set):
    questions, databases = bird_set
    records = json.loads(questions.read_text())

    call_command("import_bird", questions=questions, databases=databases, project=project.slug)

    tasks = Task.objects.filter(project=project)
    assert tasks.count() == len(_distinct(records))
    assert SqlDatabase.objects.count() == len({r["db_id"] for r in records})
    first = Task.objects.get(project=project, source_id=f"{records[0]['db_id']}/0")
    env = first.sql_environment
    assert env.database.path.is_file()
    assert env.gold_sql == records[0]["SQL"]
    assert set(env.descriptions) == {
        p.stem for p in (databases / records[0]["db_id"] / "database_description").glob("*.csv")
    }
    assert first.original_spec["question"] == records[0]["question"]
    # BIRD's evidence is the answer's hint: kept in the original, withheld from the agent.
    assert first.original_spec["evidence"] == records[0]["evidence"]
    assert first.blocked_spec["evidence"] == ""
    # Every imported task starts with one revision.
    assert Revision.objects.filter(task__project=project).count() == tasks.count()


def test_description_csvs_in_every_encoding_bird_uses_are_read(project):
    import_bird(
        project=project,
        questions=FIXTURES / "bird" / "dev.json",
        databases=FIXTURES / "bird" / "dev_databases",
    )
    library = SqlDatabase.objects.get(db_id="library").descriptions
    weather = SqlDatabase.objects.get(db_id="weather").descriptions
    assert library["loan"].startswith("original_column_name,")  # its byte-order mark dropped
    assert "météo" in weather["station"]  # Windows-1252
    assert "°C" in weather["reading"]  # UTF-8


def test_an_exact_repeat_is_imported_once_and_said(project):
    records = json.loads((FIXTURES / "bird" / "dev.json").read_text())
    report = import_bird(
        project=project,
        questions=FIXTURES / "bird" / "dev.json",
        databases=FIXTURES / "bird" / "dev_databases",
    )
    assert len(report.created) == len(records) - 1
    assert report.notes == ["record 6 repeats record 3 (weather/3) exactly; imported once"]


def test_reimport_adds_nothing(project, bird_set):
    questions, databases = bird_set
    import_bird(project=project, questions=questions, databases=databases)
    before = list(Task.objects.order_by("pk").values_list("pk", "version", "updated_at"))

    report = import_bird(project=project, questions=questions, databases=databases)

    assert report.created == []
    assert len(set(report.unchanged)) == len(before)
    assert list(Task.objects.order_by("pk").values_list("pk", "version", "updated_at")) == before
    assert Revision.objects.count() == len(before)


def test_one_malformed_record_imports_nothing_and_is_named(project, tmp_path, bird_set):
    questions, databases = bird_set
    records = json.loads(questions.read_text())
    bad_sql, bad_question = 1, len(records) - 2
    del records[bad_sql]["SQL"]
    records[bad_question]["question"] = ""
    bad = tmp_path / "dev-broken.json"
    bad.write_text(json.dumps(records))

    with pytest.raises(CommandError) as err:
        call_command("import_bird", questions=bad, databases=databases, project=project.slug)

    message = str(err.value)
    assert f"record {bad_sql}: missing field(s) SQL" in message
    assert f"record {bad_question}: question must be non-empty text" in message
    assert Task.objects.count() == 0


def test_truncated_json_is_refused_naming_where(project, tmp_path, demo_data):
    text = demo_data["sql"]["questions"].read_text()
    bad = tmp_path / "cut.json"
    bad.write_text(text[: len(text) // 2])

    with pytest.raises(ImportRefused) as err:
        import_bird(project=project, questions=bad, databases=demo_data["sql"]["databases"])

    assert "not valid JSON" in str(err.value)
    assert Task.objects.count() == 0


@pytest.fixture(
    params=[
        pytest.param("fixtures", id="fixtures"),
        pytest.param("bird-minidev", id="bird-minidev", marks=pytest.mark.shared_data),
    ]
)
def without_databases(request, tmp_path) -> tuple[Path, Path]:
    """(questions, folder of <db_id>/<table>.csv) with no SQLite file, as BIRD mini-dev is
    published: the fixtures' description CSVs alone, or the real mini-dev where ../shared is."""
    if request.param == "bird-minidev":
        root = shared_path("data", "bird-minidev")
        return root / "mini_dev_sqlite.json", root / "database_description"
    descriptions = tmp_path / "database_description"
    for folder in sorted((FIXTURES / "bird" / "dev_databases").iterdir()):
        shutil.copytree(folder / "database_description", descriptions / folder.name)
    return FIXTURES / "bird" / "dev.json", descriptions


def test_questions_without_databases_are_refused_naming_them(project, without_databases):
    questions, databases = without_databases
    names = {r["db_id"] for r in json.loads(questions.read_text())}

    with pytest.raises(ImportRefused) as err:
        import_bird(project=project, questions=questions, databases=databases)

    for name in names:
        assert name in err.value.summary
    assert Task.objects.count() == 0


def test_skip_missing_databases_imports_and_notes_absence(project, without_databases):
    questions, databases = without_databases
    records = json.loads(questions.read_text())

    report = import_bird(
        project=project, questions=questions, databases=databases, skip_missing_databases=True
    )

    # BIRD mini-dev repeats two records verbatim (the fixture one): imported once, said.
    assert len(report.created) == len(_distinct(records))
    assert any("repeats record" in note for note in report.notes)
    with_evidence = next(r for r in records if r["evidence"])
    task = Task.objects.get(
        project=project, source_id=f"{with_evidence['db_id']}/{with_evidence['question_id']}"
    )
    assert task.sql_environment.database is None
    assert "absent" in task.import_notes
    # The description CSVs still came in.
    assert set(task.sql_environment.descriptions) == {
        p.stem for p in (databases / with_evidence["db_id"]).glob("*.csv")
    }
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
