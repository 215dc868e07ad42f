import hashlib
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from hilbench_annotate.databases import gold_sql_output
from hilbench_annotate.errors import DomainError, ImportRefused
from hilbench_annotate.models import Project, SqlDatabase, SqlEnvironment, Task
from hilbench_annotate.services import task_create_many
from hilbench_annotate.toolkit.archives import safe_name
from hilbench_annotate.toolkit.iteration import fewer_collections
from hilbench_annotate.toolkit.sqlsyntax import SqlTooComplex, check_sql_limits
from hilbench_annotate.vocabulary import Domain, TaskSource

from .common import ImportReport, database_store, read_descriptions, sqlite_problem
from .records import RecordStreamError, iter_records

REQUIRED_TEXT = ("db_id", "question", "SQL")
DIFFICULTIES = {"simple", "moderate", "challenging"}


def bird_source_id(record: dict[str, Any]) -> str:
    # question_id alone is not unique across BIRD-format sets (Spider's ids restart at 0).
    return f"{record['db_id']}/{record['question_id']}"


def _record_problem(record: Any) -> str | None:
    if not isinstance(record, dict):
        return f"expected an object, got {type(record).__name__}"
    missing = [k for k in ("question_id", *REQUIRED_TEXT) if k not in record]
    if missing:
        return f"missing field(s) {', '.join(missing)}"
    qid = record["question_id"]
    if isinstance(qid, bool) or not isinstance(qid, int | str) or str(qid).strip() == "":
        return f"question_id must be an integer or a non-empty string, got {qid!r}"
    for key in REQUIRED_TEXT:
        if not isinstance(record[key], str) or not record[key].strip():
            return f"{key} must be non-empty text"
    if not safe_name(record["db_id"]):
        return f"db_id {record['db_id']!r} is not a plain database name"
    try:
        check_sql_limits(record["SQL"])
    except SqlTooComplex as exc:
        return f"question_id {qid}: {exc}"
    if not isinstance(record.get("evidence", ""), str):
        return "evidence must be text"
    difficulty = record.get("difficulty", "")
    if difficulty and (not isinstance(difficulty, str) or difficulty not in DIFFICULTIES):
        return f"difficulty {difficulty!r} is not one of {sorted(DIFFICULTIES)}"
    return None


def _database_dir(databases: Path, db_id: str) -> Path:
    return databases / db_id


def _description_dir(databases: Path, db_id: str) -> Path:
    nested = databases / db_id / "database_description"
    return nested if nested.is_dir() else databases / db_id


def _selected(questions: Path, db_id: str | None, limit: int | None):
    taken = 0
    for index, record in iter_records(questions):
        if db_id and isinstance(record, dict) and record.get("db_id") != db_id:
            continue
        if limit is not None and taken >= limit:
            return
        taken += 1
        yield index, record


@dataclass
class _Databases:
    """The databases the records name: usable files, description CSVs, absent ones."""

    files: dict[str, Path] = field(default_factory=dict)
    stored: dict[str, SqlDatabase] = field(default_factory=dict)  # already in the store
    descriptions: dict[str, dict[str, str]] = field(default_factory=dict)
    encodings: dict[str, dict[str, str]] = field(default_factory=dict)  # not plain UTF-8
    missing: dict[str, int] = field(default_factory=dict)  # db_id -> questions naming it


Problems = list[tuple[object, str]]
# How a command-line user imports questions whose database is absent; the Import page names
# its checkbox instead (exchange/services/imports.py).
MISSING_DATABASES_ADVICE_CLI = "pass --skip-missing-databases to import its questions without it"


# A questions file up to this size is read once: pass 1 keeps its records for pass 2 (a
# record takes some ten times its bytes in memory). A larger one is streamed twice: reading
# 50,000 records again costs 0.13 s of an import's 12 CPU-s, keeping them 120 MB (it was
# 32 MiB: an import job of 50,000 records held some 250 MB of its own, issue 46).
KEEP_RECORDS_BYTES = 4 * 1024 * 1024


def _record_digest(record: dict) -> bytes:
    """What pass 1 keeps of a record to tell an exact repeat from another record under the
    same id: its JSON text with sorted keys, hashed (the record itself, for every record of
    a file streamed twice, held all of them). Two records repeat exactly when their texts
    are the same: ``1`` and ``1.0`` differ. orjson writes NaN and infinities as ``null``,
    so a text with a null is written again by json, which keeps them apart."""
    try:
        text = orjson.dumps(record, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # an integer past 64 bits
        text = None
    if text is None or b"null" in text:
        text = json.dumps(record, sort_keys=True).encode()
    return hashlib.blake2b(text, digest_size=16).digest()


def _validate_records(
    questions: Path, db_id: str | None, limit: int | None
) -> tuple[Problems, list[str], Counter[str], RecordStreamError | None, list | None]:
    """Pass 1 over the records: every bad record, the exact repeats, how many good records
    name each database, where the file is not valid JSON (None: it is), and the records
    read, for pass 2 (None for a file larger than ``KEEP_RECORDS_BYTES``)."""
    problems: Problems = []
    broken = None
    seen: dict[str, tuple[int, bytes]] = {}  # id -> its first record's index and digest
    repeats: list[str] = []
    used_databases: Counter[str] = Counter()
    kept = [] if questions.stat().st_size <= KEEP_RECORDS_BYTES else None
    try:
        for index, record in _selected(questions, db_id, limit):
            if kept is not None:
                kept.append((index, record))
            problem = _record_problem(record)
            if problem:
                problems.append((index, problem))
                continue
            key = bird_source_id(record)
            digest = _record_digest(record)
            if key in seen:
                first, first_digest = seen[key]
                # BIRD mini-dev repeats some records verbatim: harmless, imported once.
                if first_digest == digest:
                    repeats.append(f"record {index} repeats record {first} ({key}) exactly")
                else:
                    problems.append(
                        (index, f"same question_id as record {first} ({key}), different content")
                    )
                continue
            seen[key] = (index, digest)
            used_databases[record["db_id"]] += 1
    except RecordStreamError as exc:
        if exc.syntax:
            broken = exc
        else:
            problems.append((exc.where, exc.reason))
    return problems, repeats, used_databases, broken, kept


def _stored_databases(
    project: Project, used_databases: Counter[str], *, skip_missing_databases: bool, advice: str
) -> tuple[_Databases, Problems]:
    """The databases the records name, from those the project's tasks already use (a bulk
    import through the API sends questions only): the latest stored copy of each name."""
    problems: Problems = []
    found = _Databases()
    # Each database once: joined to its environments, it came back once a task that uses it,
    # descriptions and all (45,000 rows, some 200 MB in the job, for a project of 45,000).
    used = SqlEnvironment.objects.filter(
        task__project=project, database__db_id__in=list(used_databases)
    ).values("database_id")
    for database in SqlDatabase.objects.filter(pk__in=used).order_by("pk"):
        found.stored[database.db_id] = database
        found.descriptions[database.db_id] = database.descriptions
        found.encodings[database.db_id] = database.description_encodings
    for name, count in sorted(used_databases.items()):
        if name in found.stored:
            continue
        found.missing[name] = count
        found.descriptions[name] = {}
        if not skip_missing_databases:
            problems.append(
                (
                    f"database {name}",
                    f"the project has no database {name} ({count} question(s) use it); "
                    f"import it with its questions on the Import page first, or {advice}",
                )
            )
    return found, problems


def _check_databases(
    databases: Path, used_databases: Counter[str], *, skip_missing_databases: bool, advice: str
) -> tuple[_Databases, Problems]:
    """Read every named database's descriptions and check its SQLite file: the usable
    ones, and the problems (an unusable one; a missing one unless
    ``skip_missing_databases``). Paths are named inside ``databases`` only: on the Import
    page that folder is the server's."""
    problems: Problems = []
    found = _Databases()
    for name, count in sorted(used_databases.items()):
        desc, encodings, desc_problems = read_descriptions(_description_dir(databases, name))
        problems.extend((f"database {name}", p) for p in desc_problems)
        found.descriptions[name] = desc
        found.encodings[name] = encodings
        path = _database_dir(databases, name) / f"{name}.sqlite"
        if not path.is_file():
            found.missing[name] = count
            if not skip_missing_databases:
                problems.append(
                    (
                        f"database {name}",
                        f"{name}/{name}.sqlite is missing ({count} question(s) use it); "
                        f"add it, or {advice}",
                    )
                )
            continue
        problem = sqlite_problem(path)
        if problem:
            problems.append((f"database {name}", problem))
        found.files[name] = path
    return found, problems


def _refusal(
    label: str,
    records: Problems,
    databases: Problems,
    missing: list[str],
    broken: RecordStreamError | None,
) -> ImportRefused:
    """Every problem of the file at once: bad records, where it is not valid JSON, missing
    and unusable databases. ``label`` names the file as the user knows it."""
    parts = []
    if records:
        parts.append(f"{len(records)} bad record(s)")
    if broken:
        parts.append(broken.syntax)
    if missing:
        parts.append(f"missing database file(s) {', '.join(missing)}")
    if len(databases) > len(missing):
        parts.append(f"{len(databases) - len(missing)} problem(s) with the databases' files")
    stream = [(broken.where, broken.reason)] if broken else []
    return ImportRefused(
        f"{label}: {'; '.join(parts)}. Nothing was imported.", records + stream + databases
    )


def _bird_task_record(
    *,
    record: dict[str, Any],
    database: SqlDatabase | None,
    found: _Databases,
    file_name: str,
    golden: tuple[str, str],
) -> dict[str, Any]:
    """``task_create``'s arguments for one BIRD record (``task_create_many`` writes them);
    ``golden``: its golden output and, when that is empty, why (``_GoldenOutputs``)."""
    name = record["db_id"]
    evidence = record.get("evidence", "") or ""
    output, unfilled = golden
    notes = []
    if name in found.missing:
        notes.append(f"Database {name} was absent at import; attach it before validation.")
    elif unfilled:
        notes.append(
            f"golden_output.csv was not filled from the gold SQL's result ({unfilled[:300]}); "
            "fill it in the workspace once the gold SQL runs."
        )
    return {
        "domain": Domain.SQL,
        "source": TaskSource.BIRD,
        "source_id": bird_source_id(record),
        "title": record["question"].strip(),
        "original_spec": {"question": record["question"], "evidence": evidence},
        # BIRD's evidence is withheld from the blocked task by default.
        "blocked_spec": {"question": record["question"], "evidence": ""},
        "environment": {
            "db_id": name,
            "database": database,
            "descriptions": found.descriptions[name],
            "description_encodings": found.encodings.get(name, {}),
            "original_sql": record["SQL"],
            "gold_sql": record["SQL"],
            "golden_output": output,
            "difficulty": record.get("difficulty", "") or "",
        },
        "source_metadata": {
            "question_id": record["question_id"],
            "db_id": name,
            "difficulty": record.get("difficulty", ""),
            "file": file_name,
        },
        "import_notes": "\n".join(notes),
    }


class _GoldenOutputs:
    """Each new task's ``golden_output.csv``: the gold SQL's result on its database, made by
    the workspace's own "Fill from the gold SQL's result" (``gold_sql_output``), once for
    the same query on the same database. A query that fails leaves it empty, and ``unfilled``
    (source id -> why) says so; a task without a database has none to fill."""

    def __init__(self):
        self.unfilled: dict[str, str] = {}
        self._runs: dict[tuple[int, str], tuple[str, str]] = {}

    def output(self, key: str, database: SqlDatabase | None, gold_sql: str) -> tuple[str, str]:
        """(golden output, why it is empty or "") for the task ``key``."""
        if database is None:
            return "", ""
        run = (database.pk, gold_sql)
        if run not in self._runs:
            try:
                self._runs[run] = (gold_sql_output(database.path, gold_sql), "")
            except (DomainError, OSError) as exc:
                self._runs[run] = ("", str(exc).strip() or type(exc).__name__)
        output, why = self._runs[run]
        if why:
            self.unfilled[key] = why
        return output, why

    def notes(self) -> list[str]:
        """The import report's word on the tasks left without one."""
        if not self.unfilled:
            return []
        first, why = next(iter(self.unfilled.items()))
        return [
            f"{len(self.unfilled)} task(s) without a golden output: their gold SQL gave no "
            f"result to fill it with ({first}: {why[:300]})"
        ]


def _new_task_records(
    *,
    project: Project,
    questions: Path,
    db_id: str | None,
    limit: int | None,
    found: _Databases,
    report: ImportReport,
    label: str,
    kept: list | None,
    golden: _GoldenOutputs,
):
    """Pass 2: the records pass 1 kept, or the file streamed again; yield the tasks not
    there yet, storing each database once (by content hash) when its first question
    comes, each with its golden output (``golden``)."""
    existing = set(
        Task.objects.filter(project=project, source=TaskSource.BIRD).values_list(
            "source_id", flat=True
        )
    )
    stored: dict[str, SqlDatabase] = dict(found.stored)
    for _index, record in kept if kept is not None else _selected(questions, db_id, limit):
        key = bird_source_id(record)
        if key in existing:
            if key not in report.created:
                report.unchanged.append(key)
            continue
        existing.add(key)
        name = record["db_id"]
        if name in found.files and name not in stored:
            stored[name] = database_store(
                db_id=name,
                source=found.files[name],
                descriptions=found.descriptions[name],
                encodings=found.encodings[name],
            )
        report.created.append(key)
        database = stored.get(name)
        yield _bird_task_record(
            record=record,
            database=database,
            found=found,
            file_name=label,
            golden=golden.output(key, database, record["SQL"]),
        )


@fewer_collections()
def import_bird(
    *,
    project: Project,
    questions: Path,
    databases: Path | None,
    db_id: str | None = None,
    limit: int | None = None,
    skip_missing_databases: bool = False,
    missing_databases_advice: str = MISSING_DATABASES_ADVICE_CLI,
    actor=None,
    progress: Callable[[int, int], None] | None = None,
    label: str | None = None,
) -> ImportReport:
    """Import BIRD records with their SQLite databases and description CSVs.

    Pass 1 streams the file and checks every record and every database it names; any
    problem refuses the whole file, naming all of them at once. Pass 2 streams it again and
    writes in one transaction, each new task with its golden output: the gold SQL's result on
    its database (``_GoldenOutputs``; a query that fails leaves it empty, said in the task's
    notes and the report). ``databases``: the folder of ``<db_id>/<db_id>.sqlite``
    files, or None for the databases the project's tasks already have (the bulk import
    API). ``missing_databases_advice`` tells the user how to import questions without their
    database, in the words of the caller's interface. ``progress(done, total)``: records
    handled of the file's good records, after the check and after each chunk written.
    ``label``: the file's name in messages and in the tasks' source (the name it was
    uploaded as; by default its own).
    """
    questions = Path(questions)
    label = label or questions.name
    if not questions.is_file():
        raise ImportRefused(f"Questions file {questions} does not exist.", [])
    if databases is not None and not Path(databases).is_dir():
        raise ImportRefused(f"Databases directory {databases} does not exist.", [])
    record_problems, repeats, used_databases, broken, kept = _validate_records(
        questions, db_id, limit
    )
    check = dict(skip_missing_databases=skip_missing_databases, advice=missing_databases_advice)
    found, database_problems = (
        _stored_databases(project, used_databases, **check)
        if databases is None
        else _check_databases(Path(databases), used_databases, **check)
    )
    if record_problems or database_problems or broken:
        missing = [] if skip_missing_databases else sorted(found.missing)
        raise _refusal(label, record_problems, database_problems, missing, broken)
    report = ImportReport(notes=[f"{r}; imported once" for r in repeats])
    for name, count in sorted(found.missing.items()):
        report.notes.append(f"database {name} absent: {count} question(s) imported without it")
    total = sum(used_databases.values())
    if progress:
        progress(0, total)
    golden = _GoldenOutputs()
    # One transaction for the file (task_create_many), a savepoint and a few INSERTs a chunk.
    task_create_many(
        project=project,
        records=_new_task_records(
            project=project,
            questions=questions,
            db_id=db_id,
            limit=limit,
            found=found,
            report=report,
            label=label,
            kept=kept,
            golden=golden,
        ),
        author=actor,
        reason="imported",
        on_chunk=(lambda written: progress(written + len(report.unchanged), total))
        if progress
        else None,
    )
    if progress:
        progress(total, total)
    report.notes += golden.notes()
    return report
