"""The bulk import path: a fixed number of queries a chunk, whatever the number of records."""

import json
import math

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from exchange.importers import import_bird
from hilbench_annotate.errors import DomainError
from hilbench_annotate.models import Project, Revision, Task, TaskEvent
from hilbench_annotate.services import task_create_many, task_snapshot
from hilbench_annotate.services.bulk import _column_values, _row_values

from ..conftest import FIXTURES

pytestmark = pytest.mark.django_db

DATABASES = FIXTURES / "bird" / "dev_databases"
# A chunk of BIRD tasks: SAVEPOINT, INSERT tasks, SELECT their ids (on SQLite the two ends
# of the ids just written), INSERT environments, revisions, search words, RELEASE.
QUERIES_PER_CHUNK = 7
CHUNK = 40  # small enough that no table's INSERT is split by SQLite's 999 parameters


def _questions(tmp_path, count: int, name: str):
    path = tmp_path / f"{name}.json"
    path.write_text(
        json.dumps(
            [
                {
                    "question_id": i,
                    "db_id": "library",
                    "question": f"How many books were lent in week {i}?",
                    "evidence": f"week {i} refers to loan_week = {i}",
                    "SQL": "SELECT COUNT(*) FROM loan",
                    "difficulty": "simple",
                }
                for i in range(count)
            ]
        )
    )
    return path


def _import_counting(tmp_path, count: int) -> int:
    project = Project.objects.create(name=f"Bulk {count}", slug=f"bulk-{count}")
    questions = _questions(tmp_path, count, f"dev-{count}")
    with CaptureQueriesContext(connection) as queries:
        report = import_bird(project=project, questions=questions, databases=DATABASES)
    assert len(report.created) == count
    assert Revision.objects.filter(task__project=project, number=1, reason="imported").count() == (
        count
    )
    # Revision 1 tells each task's making: no event a task beside it.
    assert not TaskEvent.objects.filter(project=project, task__isnull=False).exists()
    return len(queries.captured_queries)


def test_import_queries_do_not_grow_with_records_beyond_one_set_per_chunk(tmp_path, settings):
    settings.IMPORT_CHUNK_SIZE = CHUNK
    _import_counting(tmp_path, 1)  # stores the shared database once, for both runs below
    small = _import_counting(tmp_path, 50)
    large = _import_counting(tmp_path, 500)
    extra_chunks = math.ceil(500 / CHUNK) - math.ceil(50 / CHUNK)
    # Per-row writes would add some 450 × 4 queries; only the extra chunks may cost more.
    assert large - small <= extra_chunks * QUERIES_PER_CHUNK, (small, large)
    assert small <= 2 * QUERIES_PER_CHUNK + 10, small


def test_each_task_gets_its_own_environment_and_revision_across_chunks(tmp_path, settings):
    """The ids the INSERT gave (on SQLite taken from the last one written) are each task's:
    every environment and revision of a three-chunk import, after another project's
    tasks took ids before them, belongs to the task of its record."""
    settings.IMPORT_CHUNK_SIZE = CHUNK
    _import_counting(tmp_path, 7)  # another project's tasks first: the ids do not start at 1
    project = Project.objects.create(name="Mapped", slug="mapped")
    records = [
        {"question_id": i, "db_id": "library", "question": f"Question {i}?",
         "SQL": f"SELECT {i}", "evidence": ""}
        for i in range(2 * CHUNK + 3)
    ]  # fmt: skip
    questions = tmp_path / "mapped.json"
    questions.write_text(json.dumps(records))
    import_bird(project=project, questions=questions, databases=DATABASES)
    tasks = Task.objects.filter(project=project).select_related("sql_environment")
    assert tasks.count() == len(records)
    for task in tasks:
        number = int(task.source_id.split("/")[1])
        assert task.title == f"Question {number}?"
        assert task.sql_environment.gold_sql == f"SELECT {number}"
        revision = task.revisions.get()
        assert revision.snapshot["title"] == task.title
        assert revision.snapshot["environment"]["gold_sql"] == f"SELECT {number}"
        assert revision.reason == "imported"


def test_bulk_revision_is_the_snapshot_of_the_saved_task(project, author):
    task_create_many(
        project=project,
        records=[
            {
                "domain": "sql",
                "source": "bird",
                "source_id": "library/1",
                "title": "Mystery books",
                "original_spec": {"question": "How many?", "evidence": "e"},
                "environment": {"db_id": "library", "gold_sql": "SELECT 1"},
                "blockers": [
                    {
                        "key": "cutoff-year",
                        "type": "business info",
                        "subtype": "missing_information",
                        "description": "The year is not given.",
                        "resolution": "1950",
                        "trigger_questions": ["Which year?", "Before when?"],
                    }
                ],
            }
        ],
        author=author,
        reason="imported",
    )
    task = Task.objects.get(project=project, source_id="library/1")
    revision = task.revisions.get()
    assert revision.number == 1 and revision.author == author
    assert revision.snapshot == task_snapshot(task)
    assert task.blocker_count == 1
    assert [q.text for q in task.blockers.get().trigger_questions.all()] == [
        "Which year?",
        "Before when?",
    ]
    assert revision.reason == "imported"
    assert not TaskEvent.objects.filter(task=task).exists()  # revision 1 tells it


def test_a_bad_record_in_a_later_chunk_rolls_back_every_chunk(project):
    records = [
        {
            "domain": "sql" if i < 25 else "cobol",
            "source": "bird",
            "source_id": f"library/{i}",
            "title": f"Question {i}",
            "original_spec": {"question": "q", "evidence": ""},
            "environment": {"db_id": "library"},
        }
        for i in range(26)
    ]
    with pytest.raises(DomainError, match="cobol"):
        task_create_many(project=project, records=records, chunk_size=10)
    assert not Task.objects.filter(project=project).exists()


def test_progress_is_told_after_the_check_and_after_each_chunk(tmp_path, settings, project):
    settings.IMPORT_CHUNK_SIZE = 40
    questions = _questions(tmp_path, 100, "progress")
    told = []
    import_bird(
        project=project,
        questions=questions,
        databases=DATABASES,
        progress=lambda done, total: told.append((done, total)),
    )
    assert told == [(0, 100), (40, 100), (80, 100), (100, 100), (100, 100)]


def test_the_import_page_shows_a_running_jobs_progress(client, project, author):
    from exchange.models import ImportJob

    job = ImportJob.objects.create(
        project=project, kind="bird", created_by=author, upload_dir="x", status="running",
        done=1500, total=10000,
    )  # fmt: skip
    client.force_login(author)
    page = client.get(f"/imports/{job.pk}/", headers={"HX-Request": "true"}).content.decode()
    assert "1500 of 10000 records handled" in page
    assert '<progress max="10000" value="1500">15%</progress>' in page


def test_records_sent_without_their_database_read_each_stored_database_once(tmp_path, monkeypatch):
    """Issue 46: the databases a bulk import's records name were read joined to their
    environments, once a task that uses them, descriptions and all: 45,000 rows (some
    200 MB in the Celery job) for a project of 45,000 tasks on one database."""
    from collections import Counter

    from exchange.importers import bird
    from hilbench_annotate.models import SqlDatabase

    project = Project.objects.create(name="Many", slug="many")
    import_bird(project=project, questions=_questions(tmp_path, 30, "many"), databases=DATABASES)
    loaded = []
    real = SqlDatabase.from_db.__func__
    monkeypatch.setattr(
        SqlDatabase, "from_db", classmethod(lambda cls, *a: loaded.append(1) or real(cls, *a))
    )
    found, problems = bird._stored_databases(
        project, Counter({"library": 30, "absent": 1}), skip_missing_databases=True, advice=""
    )
    assert len(loaded) == 1 and not problems
    assert set(found.stored) == {"library"} and found.missing == {"absent": 1}
    assert found.descriptions["library"] == found.stored["library"].descriptions


def test_the_check_of_a_file_streamed_twice_holds_no_record(tmp_path, monkeypatch):
    """Issue 46: past KEEP_RECORDS_BYTES the write streams the file again, yet the check
    held every record to tell an exact repeat from another record under the same id: an
    import job of 50,000 records held some 250 MB of its own. It holds a digest a record."""
    import tracemalloc

    from exchange.importers import bird
    from exchange.importers import records as stream

    monkeypatch.setattr(bird, "KEEP_RECORDS_BYTES", 0)
    monkeypatch.setattr(stream, "WHOLE_ARRAY_BYTES", 0)
    records = json.loads(_questions(tmp_path, 2000, "large").read_text())
    records.append({key: records[7][key] for key in reversed(records[7])})  # keys reordered
    records.append({**records[8], "question": "Another question?"})  # same id, other content
    questions = tmp_path / "large-with-repeats.json"
    questions.write_text(json.dumps(records))
    tracemalloc.start()
    try:
        problems, repeats, _, broken, kept = bird._validate_records(questions, None, None)
        held = tracemalloc.get_traced_memory()[1]  # the peak, while it reads
    finally:
        tracemalloc.stop()
    assert kept is None and broken is None
    assert repeats == ["record 2000 repeats record 7 (library/7) exactly"]
    assert problems == [(2001, "same question_id as record 8 (library/8), different content")]
    assert held < 2000 * 600  # 470 bytes a record; holding the records, 1,250


def test_an_exact_repeat_is_the_same_json_text_whatever_the_key_order():
    from exchange.importers.bird import _record_digest

    same = _record_digest({"b": [1, {"y": 2, "x": "é"}], "a": None})
    assert same == _record_digest({"a": None, "b": [1, {"x": "é", "y": 2}]})
    # orjson writes NaN as null: those stay apart, as do 1 and 1.0, or a large integer.
    assert _record_digest({"a": float("nan")}) != _record_digest({"a": None})
    assert _record_digest({"a": 1}) != _record_digest({"a": 1.0})
    assert _record_digest({"a": 2**70}) == _record_digest({"a": 2**70})
    assert _record_digest({"a": 2**70}) != _record_digest({"a": 2**70 + 1})


@pytest.mark.parametrize("kept", [True, False], ids=["read-once", "streamed-twice"])
def test_a_file_read_once_and_one_streamed_twice_import_the_same(tmp_path, monkeypatch, kept):
    """A small file's records are kept from the check for the write; a large one (past
    KEEP_RECORDS_BYTES) is streamed again. Both write the same tasks, repeats once."""
    from exchange.importers import bird

    monkeypatch.setattr(bird, "KEEP_RECORDS_BYTES", 1 << 30 if kept else 0)
    records = json.loads(_questions(tmp_path, 30, "both").read_text())
    records.insert(5, dict(records[3]))  # an exact repeat: imported once
    questions = tmp_path / "with-repeat.json"
    questions.write_text(json.dumps(records))
    read = []
    monkeypatch.setattr(bird, "iter_records", _counting(bird.iter_records, read))
    project = Project.objects.create(name="Both", slug="both")

    report = import_bird(project=project, questions=questions, databases=DATABASES)

    assert read == ([questions] if kept else [questions, questions])
    assert len(report.created) == 30 and any("repeats record 3" in n for n in report.notes)
    titles = Task.objects.filter(project=project).order_by("source_id")
    assert titles.count() == 30
    assert {t.source_id for t in titles} == {f"library/{i}" for i in range(30)}


def _counting(function, calls: list):
    def wrapper(path):
        calls.append(path)
        return function(path)

    return wrapper


def test_json_the_fast_encoder_refuses_is_written_by_pythons(project):
    """orjson writes the JSON columns; an integer past 64 bits it refuses goes to json."""
    task_create_many(
        project=project,
        records=[
            {
                "domain": "sql",
                "source": "bird",
                "source_id": "library/big",
                "title": "Big ids",
                "original_spec": {"question": "How many?", "evidence": ""},
                "source_metadata": {"question_id": 2**70, "nested": {"é": [1, 2.5, None]}},
                "environment": {"db_id": "library", "gold_sql": "SELECT 1"},
            }
        ],
    )
    task = Task.objects.get(project=project, source_id="library/big")
    assert task.source_metadata == {"question_id": 2**70, "nested": {"é": [1, 2.5, None]}}
    assert task.revisions.get().snapshot == task_snapshot(task)


def test_the_embedded_database_is_made_with_16_kib_pages_in_wal_mode(tmp_path):
    """A snapshot of 2-4 kB filled a 4 KiB page alone: the embedded database is made with
    16 KiB pages (what ``make run`` gets; checked in a process without DATABASE_URL)."""
    import os
    import subprocess
    import sys

    from ..conftest import ROOT

    probe = (
        "import django; django.setup()\n"
        "from django.db import connection\n"
        "with connection.cursor() as cursor:\n"
        "    print(*(cursor.execute(f'PRAGMA {p}').fetchone()[0]"
        " for p in ('page_size', 'journal_mode')))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL")}
    env.update(
        DJANGO_SETTINGS_MODULE="hilbench_annotate.settings",
        DJANGO_DEBUG="1",
        HILBENCH_VAR_DIR=str(tmp_path),
        HILBENCH_SQLITE_PATH=str(tmp_path / "fresh.sqlite3"),
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, cwd=ROOT, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-2:] == ["16384", "wal"]


def test_a_database_given_by_id_is_in_revision_ones_snapshot(project, tmp_path):
    """An environment's foreign key given as ``database_id`` rather than an instance: the
    row and revision 1's snapshot name the same database (its sha256)."""
    from exchange.importers.common import database_store

    database = database_store(
        db_id="library", source=DATABASES / "library" / "library.sqlite", descriptions={}
    )
    (pk,) = task_create_many(
        project=project,
        records=[
            {
                "domain": "sql",
                "source": "bird",
                "source_id": "library/by-id",
                "title": "By id",
                "original_spec": {"question": "How many?", "evidence": ""},
                "environment": {"db_id": "library", "database_id": database.pk},
            }
        ],
    )
    task = Task.objects.get(pk=pk)
    assert task.sql_environment.database == database
    snapshot = task.revisions.get().snapshot
    assert snapshot["environment"]["database_sha256"] == database.sha256
    assert snapshot == task_snapshot(task)


def test_a_row_with_fewer_keys_than_the_first_takes_the_defaults(project):
    """Rows of one INSERT are read with the first row's keys; a later row lacking one (here
    ``data`` and ``actor_id``) gets the field's default, as every row once did."""
    full = {
        "project_id": project.pk,
        "task_id": None,
        "actor_id": None,
        "kind": "a",
        "data": {"x": 1},
        "created_at": None,
    }
    plan = _column_values(TaskEvent, connection, timezone.now())
    values = _row_values(TaskEvent, [full, {"project_id": project.pk, "kind": "b"}], plan)
    names = [name for name, _ in plan]
    second = dict(zip(names, values[1], strict=True))
    assert second["kind"] == "b" and second["data"] == "{}" and second["actor_id"] is None
    assert second["task_id"] is None and second["project_id"] == project.pk
