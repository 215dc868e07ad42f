"""Issue 45, item 2: imported files keep their bytes. A description CSV imported with CRLF
line ends, a UTF-8 byte order mark, Windows-1252 bytes (0xE9 "é", 0x96 "–", and 0x81, which
cp1252 leaves undefined) or no final newline is exported as the source's bytes; a workspace
save that changes nothing records nothing, and a save with one edit records that edit only,
the other files' bytes untouched."""

import csv
import html
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.urls import reverse

from exchange.importers import import_bird
from hilbench_annotate.models import Revision, Task
from hilbench_annotate.toolkit.textbytes import text_decode

from ..conftest import FIXTURES, shared_path
from .bundle_helpers import export, members

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("lead")]  # a lead exports

HEADER = "original_column_name,column_name,column_description,data_format,value_description"


def _crlf(text: str) -> bytes:
    return text.replace("\n", "\r\n").encode()


# Spider's description CSVs: UTF-8, CRLF, a final newline.
SPIDER = {
    "book": lambda t: _crlf(t),
    "branch": lambda t: _crlf(t),
    "loan": lambda t: _crlf(t),
    "member": lambda t: _crlf(t),
}
# BIRD's: a byte order mark, Windows-1252, no final newline, trailing bytes.
BIRD = {
    "book": lambda t: _crlf(t),
    "branch": lambda t: b"\xef\xbb\xbf" + _crlf(t).rstrip(b"\r\n"),
    "loan": lambda t: _crlf(t) + b"due_on,due on,date due \x96 caf\xe9 rule,date,\x81\r\n",
    "member": lambda t: t.encode() + b"joined,joined,first visit,date,  \t",
}


def _library(tmp_path: Path, variants) -> tuple[Path, dict[str, bytes]]:
    """The fixture library database with its description CSVs written as ``variants`` says:
    (the databases folder, {table: the source's bytes})."""
    databases = tmp_path / "databases"
    shutil.copytree(FIXTURES / "bird" / "dev_databases" / "library", databases / "library")
    sources = {}
    for path in sorted((databases / "library" / "database_description").glob("*.csv")):
        text = text_decode(path.read_bytes())[0].replace("\r\n", "\n")  # the fixture's text
        sources[path.stem] = variants[path.stem](text)
        path.write_bytes(sources[path.stem])
    assert set(sources) == set(variants)
    return databases, sources


def _import(project, author, databases) -> Task:
    import_bird(
        project=project,
        questions=FIXTURES / "bird" / "dev.json",
        databases=databases,
        db_id="library",
        limit=1,
        actor=author,
    )
    return Task.objects.get(project=project)


def _exported_csvs(project, task, out: Path) -> dict[str, list[bytes]]:
    """Every description CSV the bundle carries (shared/data and each mode's own copy)."""
    found: dict[str, list[bytes]] = {}
    for name, data in members(export(project, out, tasks=[task])).items():
        if "/database_description/" in name and name.endswith(".csv"):
            found.setdefault(Path(name).stem, []).append(data)
    return found


def _assert_bytes(found: dict[str, list[bytes]], expected: dict[str, bytes]) -> None:
    assert set(found) == set(expected)
    for table, copies in found.items():
        assert copies and all(c == expected[table] for c in copies), table


class _WorkspaceForm(HTMLParser):
    """The fields a browser submits from the workspace form: inputs (checked boxes only),
    selects, and textareas as a browser holds and sends them (the parser's line ends as LF,
    a textarea's first newline dropped, every line end sent as CRLF)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.fields: list[tuple[str, str]] = []
        self._in_form = False
        self._textarea: tuple[str, list[str]] | None = None
        self._select: tuple[str, list[tuple[str, bool]]] | None = None

    def _ours(self, attrs: dict) -> bool:
        return (self._in_form or attrs.get("form") == "workspace") and "disabled" not in attrs

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form" and attrs.get("id") == "workspace":
            self._in_form = True
        elif tag == "input" and self._ours(attrs) and attrs.get("name"):
            kind = attrs.get("type", "text")
            if kind in ("submit", "button", "file", "reset", "image"):
                return
            if kind in ("checkbox", "radio") and "checked" not in attrs:
                return
            self.fields.append(
                (attrs["name"], attrs.get("value", "on" if kind == "checkbox" else ""))
            )
        elif tag == "textarea" and self._ours(attrs) and attrs.get("name"):
            self._textarea = (attrs["name"], [])
        elif tag == "select" and self._ours(attrs) and attrs.get("name"):
            self._select = (attrs["name"], [])
        elif tag == "option" and self._select is not None:
            self._select[1].append((attrs.get("value", ""), "selected" in attrs))

    def handle_endtag(self, tag):
        if tag == "form":
            self._in_form = False
        elif tag == "textarea" and self._textarea is not None:
            name, parts = self._textarea
            text = "".join(parts).replace("\r\n", "\n").replace("\r", "\n")
            self.fields.append((name, text.removeprefix("\n").replace("\n", "\r\n")))
            self._textarea = None
        elif tag == "select" and self._select is not None:
            name, options = self._select
            chosen = [v for v, selected in options if selected] or [v for v, _ in options[:1]]
            self.fields += [(name, v) for v in chosen]
            self._select = None

    def handle_data(self, data):
        if self._textarea is not None:
            self._textarea[1].append(data)


def _browser_post(client, task, edit: dict[str, str] | None = None):
    """Open the workspace and press Save as a browser would, after typing ``edit``."""
    page = client.get(reverse("workspace", args=[task.pk]))
    assert page.status_code == 200
    form = _WorkspaceForm()
    form.feed(page.content.decode())
    data: dict[str, list[str]] = {}
    for name, value in form.fields:
        data.setdefault(name, []).append(value)
    for name, value in (edit or {}).items():
        assert name in data, name
        data[name] = [value.replace("\r\n", "\n").replace("\n", "\r\n")]
    return client.post(reverse("workspace-save", args=[task.pk]), data, HTTP_HX_REQUEST="true")


@pytest.mark.parametrize("variants", [SPIDER, BIRD], ids=["spider-crlf", "bird-bom-cp1252"])
def test_imported_csvs_export_as_the_source_bytes(project, author, tmp_path, variants):
    databases, sources = _library(tmp_path, variants)
    task = _import(project, author, databases)
    env = task.sql_environment
    # The workspace shows text: the mark is not in it, 0x96 reads as a dash.
    assert not any(text.startswith("\ufeff") for text in env.descriptions.values())
    if variants is BIRD:
        assert "date due – café rule" in env.descriptions["loan"]
        assert env.description_encodings == {"branch": "utf-8-sig", "loan": "cp1252"}
        assert env.database.description_encodings == env.description_encodings
    _assert_bytes(_exported_csvs(project, task, tmp_path / "b.tar.gz"), sources)


@pytest.mark.parametrize("variants", [SPIDER, BIRD], ids=["spider-crlf", "bird-bom-cp1252"])
def test_a_save_without_an_edit_records_nothing(client, project, author, tmp_path, variants):
    databases, sources = _library(tmp_path, variants)
    task = _import(project, author, databases)
    client.force_login(author)
    before = (task.version, Revision.objects.filter(task=task).count())
    response = _browser_post(client, task)
    assert response.status_code == 200, response.content[:500]
    task.refresh_from_db()
    assert (task.version, Revision.objects.filter(task=task).count()) == before
    _assert_bytes(_exported_csvs(project, task, tmp_path / "b.tar.gz"), sources)


def test_one_edit_is_the_one_change_recorded(client, project, author, tmp_path):
    databases, sources = _library(tmp_path, BIRD)
    task = _import(project, author, databases)
    client.force_login(author)
    old = task.sql_environment.descriptions["loan"]
    edited = old.replace("date due – café rule", "date due – café rule, edited")
    assert edited != old
    response = _browser_post(client, task, {"env.descriptions.loan": edited})
    assert response.status_code == 200, response.content[:500]
    latest = Revision.objects.filter(task=task).order_by("-number").first()
    assert latest.number == 2 and latest.summary == "Edited the description CSVs"
    task.refresh_from_db()
    assert task.sql_environment.descriptions["loan"] == edited
    expected = dict(sources)
    # The edited file is still Windows-1252 with CRLF line ends, its other bytes as they were.
    expected["loan"] = sources["loan"].replace(b"\x96 caf\xe9 rule", b"\x96 caf\xe9 rule, edited")
    _assert_bytes(_exported_csvs(project, task, tmp_path / "b.tar.gz"), expected)


def test_an_edit_the_source_encoding_cannot_hold_is_written_as_utf8(
    client, project, author, tmp_path
):
    databases, _ = _library(tmp_path, BIRD)
    task = _import(project, author, databases)
    client.force_login(author)
    edited = task.sql_environment.descriptions["loan"] + "due_on,due on,→ next day,date,\n"
    _browser_post(client, task, {"env.descriptions.loan": edited})
    found = _exported_csvs(project, task, tmp_path / "b.tar.gz")
    assert found["loan"][0] == edited.replace("\r\n", "\n").replace("\n", "\r\n").encode()


@pytest.mark.shared_data
def test_real_bird_description_csvs_export_as_their_bytes(project, author, tmp_path):
    """BIRD mini-dev's own CSVs: student_club's budget.csv is Windows-1252 (0x95), the others
    CRLF without a final newline; financial's carry a byte order mark."""
    root = shared_path("data", "bird-minidev")
    descriptions = root / "database_description"
    for db_id, encoding in (("student_club", "cp1252"), ("financial", "utf-8-sig")):
        import_bird(
            project=project,
            questions=root / "mini_dev_sqlite.json",
            databases=descriptions,
            db_id=db_id,
            limit=1,
            skip_missing_databases=True,
            actor=author,
        )
        task = Task.objects.get(project=project, source_id__startswith=f"{db_id}/")
        sources = {p.stem: p.read_bytes() for p in (descriptions / db_id).glob("*.csv")}
        env = task.sql_environment
        assert encoding in env.description_encodings.values()
        # The text reads right: BIRD's header, no mark; 0x95 is a bullet, not U+FFFD (which
        # zip_code.csv carries as UTF-8 bytes of its own).
        for table, text in env.descriptions.items():
            first = next(csv.reader([text.split("\n")[0]]))
            assert first[0].strip().lower() == "original_column_name", table
            assert text.count("\ufffd") == sources[table].count("\ufffd".encode()), table
        if db_id == "student_club":
            assert "• Closed: It means" in env.descriptions["budget"]
        _assert_bytes(_exported_csvs(project, task, tmp_path / f"{db_id}.tar.gz"), sources)


def test_the_form_reader_sends_a_textarea_as_a_browser_does():
    """The stand-in for the browser: an unchanged textarea comes back CRLF, its first
    newline dropped, its entities decoded."""
    form = _WorkspaceForm()
    form.feed(
        '<form id="workspace"><textarea name="a">\n\nx &amp; y\r\nz</textarea>'
        '<input type="checkbox" name="c"><input name="d" value="1" disabled></form>'
        '<input name="e" value="2" form="workspace">'
    )
    assert form.fields == [("a", "\r\nx & y\r\nz"), ("e", "2")]
    assert html.unescape("&amp;") == "&"


def test_an_edited_csv_of_a_release_folder_keeps_its_encoding_and_line_ends(
    project, author, tmp_path
):
    """A HiL-Bench release folder's files come back as kept (bundles/release.py); a CSV the
    author edited is written anew, in the release file's encoding and line ends."""
    from django.db import transaction

    from exchange.importers import import_hilbench
    from hilbench_annotate import services

    folder = tmp_path / "sql_1"
    shutil.copytree(FIXTURES / "hilbench" / "sql" / "sql_1", folder)
    station = folder / "shared/data/database_description/station.csv"
    text, encoding = text_decode(station.read_bytes())
    assert encoding == "cp1252" and "météo" in text
    source = text.replace("\r\n", "\n").replace("\n", "\r\n").encode("cp1252")
    station.write_bytes(source)
    import_hilbench(project=project, root=folder, actor=author)
    task = Task.objects.get(project=project)
    assert task.sql_environment.description_encodings["station"] == "cp1252"
    descriptions = dict(task.sql_environment.descriptions)
    descriptions["station"] = descriptions["station"].replace("météo", "météo (edited)")
    with transaction.atomic():
        services.task_touch_environment(
            task=task,
            actor=author,
            expected_version=task.version,
            changes={"descriptions": descriptions},
        )
    found = _exported_csvs(project, task, tmp_path / "b.tar.gz")
    assert found["station"] and set(found["station"]) == {
        source.replace("météo".encode("cp1252"), "météo (edited)".encode("cp1252"))
    }


def test_a_release_folders_windows_1252_gold_sql_imports_and_keeps_its_bytes(
    project, author, tmp_path
):
    """The release's other text files: a gold SQL in Windows-1252 with CRLF line ends (it was
    refused with a UnicodeDecodeError) and a metadata.json with a byte order mark import; the
    export writes them back as they were, and an edited gold SQL keeps both."""
    from django.db import transaction

    from exchange.importers import import_hilbench
    from hilbench_annotate import services

    folder = tmp_path / "sql_1"
    shutil.copytree(FIXTURES / "hilbench" / "sql" / "sql_1", folder)
    gold = folder / "shared/ground_truth.sql"
    sql = gold.read_text().rstrip("\n") + "  -- caf\xe9 \u2013 r\xe9sum\xe9\n"
    source = sql.replace("\n", "\r\n").encode("cp1252")
    gold.write_bytes(source)
    metadata = folder / "shared/metadata.json"
    metadata.write_bytes(b"\xef\xbb\xbf" + metadata.read_bytes())
    import_hilbench(project=project, root=folder, actor=author)
    task = Task.objects.get(project=project)
    assert task.sql_environment.gold_sql == sql

    def exported(name: str) -> dict[str, bytes]:
        files = members(export(project, tmp_path / name, tasks=[task]))
        wanted = ("shared/ground_truth.sql", "shared/metadata.json")
        return {w: d for n, d in files.items() for w in wanted if n.endswith("/" + w)}

    unchanged = exported("a.tar.gz")
    assert unchanged["shared/ground_truth.sql"] == source
    assert unchanged["shared/metadata.json"] == metadata.read_bytes()
    with transaction.atomic():
        services.task_touch_environment(
            task=task,
            actor=author,
            expected_version=task.version,
            changes={"gold_sql": sql.replace("r\xe9sum\xe9", "r\xe9sum\xe9 edited")},
        )
    edited = exported("b.tar.gz")["shared/ground_truth.sql"]
    assert edited == source.replace(b"r\xe9sum\xe9", b"r\xe9sum\xe9 edited")
