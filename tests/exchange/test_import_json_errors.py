"""Issue 30, item 4: an import error names the file as the user uploaded it (not the name the
server stores it under), and a file that is not valid JSON is named with the line and column,
that line shown with a caret under the column — on the Import page, through the API and from
the management commands alike."""

import io
import json
import random
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from exchange.importers.records import RecordStreamError, iter_records
from exchange.models import ImportJob
from exchange.tasks import import_job
from hilbench_annotate.models import Task

from ..conftest import FIXTURES

RECORDS = [
    {"question_id": i, "db_id": "library", "question": f"Q{i}?", "SQL": "SELECT 1"}
    for i in range(3)
]
BROKEN = '  {"question_id": 9, "db_id": "library" "question": "Q9?", "SQL": "SELECT 1"},'
MALFORMED = "[\n" + json.dumps(RECORDS[0]) + ",\n" + BROKEN + "\n" + json.dumps(RECORDS[1]) + "]\n"
MISSING_COMMA = BROKEN.index('"question"') + 1  # the column where the comma is missing


def _error(tmp_path, data: bytes | str, name: str = "malformed.json") -> RecordStreamError:
    path = tmp_path / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    with pytest.raises(RecordStreamError) as err:
        list(iter_records(path))
    return err.value


def _caret_points_at(reason: str) -> str:
    """What the reason's caret points at: the rest of the shown line from the caret."""
    lines = reason.splitlines()
    caret = next(i for i, line in enumerate(lines) if line.strip() == "^")
    return lines[caret - 1][lines[caret].index("^") :]


# --- where a file breaks --------------------------------------------------------------------


def test_a_missing_comma_is_named_by_line_and_column_with_a_caret_under_it(tmp_path):
    error = _error(tmp_path, MALFORMED)
    assert error.where == f"line 3, column {MISSING_COMMA}"
    assert error.syntax == f"not valid JSON at line 3, column {MISSING_COMMA}"
    assert error.reason.startswith("Expecting ',' delimiter\n")
    assert _caret_points_at(error.reason).startswith('"question": "Q9?"')


def test_a_file_cut_short_points_past_its_last_character_not_at_a_blank_line(tmp_path):
    """yajl's snippet for a file that ends early is blank, its caret under nothing."""
    error = _error(
        tmp_path, "[\n" + json.dumps(RECORDS[0]) + ",\n" + json.dumps(RECORDS[1]) + "\n\n"
    )
    line = json.dumps(RECORDS[1])
    assert error.where == f"line 3, column {len(line) + 1}"
    assert "ends before its array of records is closed" in error.reason
    shown = error.reason.splitlines()[-2]
    assert shown.endswith(line[-30:]) and _caret_points_at(error.reason) == ""


def test_json_lines_are_named_by_line_and_column(tmp_path):
    lines = [json.dumps(RECORDS[0]), "", '{"question_id": 1, "db_id": "library"']
    error = _error(tmp_path, "\n".join(lines) + "\n", name="records.jsonl")
    assert error.where == f"line 3, column {len(lines[2]) + 1}"
    assert _caret_points_at(error.reason) == ""  # just past the line's end


def test_a_json_object_spread_over_lines_is_told_what_a_json_file_should_hold(tmp_path):
    error = _error(tmp_path, '{\n  "questions": []\n}\n', name="dev.json")
    assert error.where == "line 1, column 2"
    assert "a JSON array of records" in error.reason


def test_bytes_that_are_not_utf8_are_named_where_they_are(tmp_path):
    line = ' {"question": "caf'
    data = ("[\n" + json.dumps(RECORDS[0]) + ",\n" + line).encode() + b'\xe9"}]'
    error = _error(tmp_path, data)
    assert error.where == f"line 3, column {len(line) + 1}"
    assert "not UTF-8" in error.reason


def test_nan_which_python_reads_but_the_streaming_parser_refuses_is_named(tmp_path):
    error = _error(tmp_path, "[\n" + json.dumps(RECORDS[0]) + ',\n {"question_id": NaN}]')
    assert error.where == "line 3, column 2"
    assert "NaN" in error.reason


def test_a_long_line_is_shown_cut_around_the_column(tmp_path):
    """A file on one line (as json.dumps writes it) is shown around the fault, not whole."""
    records = [{**RECORDS[0], "question_id": i, "question": "x" * 200} for i in range(2000)]
    text = json.dumps(records)
    fault = text.index('"question_id": 1500')
    text = text[:fault] + text[fault:].replace(",", "", 1)  # the comma after the id's value
    error = _error(tmp_path, text)
    with pytest.raises(json.JSONDecodeError) as python:
        json.loads(text)
    assert error.where == f"line 1, column {python.value.colno}"
    shown = error.reason.splitlines()[1]
    assert len(shown) < 120 and shown.lstrip().startswith("…")
    assert _caret_points_at(error.reason).startswith('"db_id"')


def test_the_place_is_pythons_for_faults_anywhere_in_a_large_file(tmp_path):
    """Faults planted at random in a pretty-printed file of several hundred kilobytes (so
    past the streaming parser's first block): the line and column are those Python's own
    parser gives for the whole text."""
    records = [{**RECORDS[0], "question_id": i, "evidence": "e" * (i % 97)} for i in range(3000)]
    valid = json.dumps(records, indent=2)
    structural = [i for i, c in enumerate(valid) if c in '{}[],:"' and i > len(valid) // 2]
    chance = random.Random(30)
    checked = 0
    for _ in range(40):
        at = chance.choice(structural)
        text = valid[:at] + chance.choice(["", "x", ",", "'", "}"]) + valid[at + 1 :]
        try:
            json.loads(text)
        except json.JSONDecodeError as python:
            if not text[python.pos :].strip():
                continue  # at the very end: shown past the last character instead
            error = _error(tmp_path, text)
            assert error.where == f"line {python.lineno}, column {python.colno}", at
            checked += 1
    assert checked >= 20


# --- every way in names the user's file -----------------------------------------------------


def _upload_bird(client, project, data: bytes, name: str) -> ImportJob:
    client.post(
        reverse("import-list"),
        {
            "kind": "bird",
            "project": project.pk,
            "questions": SimpleUploadedFile(name, data),
            "skip_missing_databases": "on",
        },
    )
    job = ImportJob.objects.latest("pk")
    import_job.apply(kwargs={"job_id": job.pk})
    job.refresh_from_db()
    return job


@pytest.mark.django_db
def test_the_import_page_names_the_uploaded_file_and_the_line_and_column(client, project, author):
    client.force_login(author)
    job = _upload_bird(client, project, MALFORMED.encode(), "malformed.json")
    assert job.status == "failed"
    assert job.error.startswith(
        f"malformed.json: not valid JSON at line 3, column {MISSING_COMMA}. Nothing was imported."
    )
    assert "questions.json" not in job.error and "record 0" not in job.error
    assert not Task.objects.filter(project=project).exists()
    page = client.get(reverse("import-detail", args=[job.pk])).content.decode()
    assert "malformed.json: not valid JSON at line 3" in page


@pytest.mark.django_db
def test_a_bad_record_names_the_uploaded_file_and_a_good_one_keeps_it_as_its_source(
    client, project, author
):
    client.force_login(author)
    bad = [dict(RECORDS[0], SQL=42)]
    failed = _upload_bird(client, project, json.dumps(bad).encode(), "my questions.json")
    assert failed.error.startswith("my questions.json: 1 bad record(s)")
    assert "questions.json:" not in failed.error.replace("my questions.json:", "")

    done = _upload_bird(client, project, json.dumps(RECORDS).encode(), "dev-2024.json")
    assert done.status == "succeeded", done.error
    task = Task.objects.get(project=project, source_id="library/0")
    assert task.source_metadata["file"] == "dev-2024.json"


@pytest.mark.django_db
def test_a_swebench_upload_names_its_file(client, project, author):
    client.force_login(author)
    client.post(
        reverse("import-list"),
        {
            "kind": "swebench",
            "project": project.pk,
            "instances": SimpleUploadedFile("pro-batch.jsonl", b'{"instance_id": "a"\n'),
            "repo_url": "https://github.com/example/repo",
        },
    )
    job = ImportJob.objects.latest("pk")
    import_job.apply(kwargs={"job_id": job.pk})
    job.refresh_from_db()
    assert job.error.startswith("pro-batch.jsonl: not valid JSON at line 1, column 20")
    assert "instances.jsonl" not in job.error


@pytest.mark.django_db
def test_a_release_archive_without_task_folders_is_named_as_uploaded(client, project, author):
    client.force_login(author)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("notes/readme.txt", "nothing here")
    client.post(
        reverse("import-list"),
        {
            "kind": "hilbench",
            "project": project.pk,
            "archive": SimpleUploadedFile("release-v1.zip", buffer.getvalue()),
        },
    )
    job = ImportJob.objects.latest("pk")
    import_job.apply(kwargs={"job_id": job.pk})
    job.refresh_from_db()
    assert "No HiL-Bench task folders under release-v1.zip" in job.error
    assert "folders" not in job.error.replace("task folders", "")


@pytest.mark.django_db
def test_the_management_command_says_the_same(project, tmp_path):
    path = tmp_path / "malformed.json"
    path.write_text(MALFORMED)
    with pytest.raises(CommandError) as err:
        call_command(
            "import_bird",
            project=project.slug,
            questions=path,
            databases=FIXTURES / "bird" / "dev_databases",
        )
    message = str(err.value)
    assert message.startswith(f"malformed.json: not valid JSON at line 3, column {MISSING_COMMA}")
    assert _caret_points_at(message).startswith('"question": "Q9?"')
