"""Import task folders of the public HiL-Bench release (``<domain>_<n>/{baseline,…,shared}``)."""

import json
import re
import tempfile
import tomllib
from pathlib import Path
from typing import Any

from django.db import transaction

from exchange.bundles import release
from exchange.bundles.annotate import read_annotate
from exchange.bundles.release_runtime import missing_parts, missing_sentence
from exchange.bundles.trial_files import folder_overreach
from hilbench_annotate.envspec import parser_from_harness, spec_clean
from hilbench_annotate.errors import DomainError, ImportRefused
from hilbench_annotate.models import Project, Task
from hilbench_annotate.repositories import repository_add_commit
from hilbench_annotate.services import task_create
from hilbench_annotate.services.blockers import blocker_check
from hilbench_annotate.spec import parse_swe_statement, swe_title
from hilbench_annotate.toolkit.jsontext import json_loads, toml_loads
from hilbench_annotate.toolkit.textbytes import text_decode
from hilbench_annotate.vocabulary import QUALITY_CRITERIA_KEYS, Domain, TaskSource

from .common import ImportReport, database_store, read_descriptions, sqlite_problem

REGISTRY = Path("shared/ask-human-data/blocker_registry.json")
ANNOTATE = Path("annotate/task.json")
QUESTION_ALIASES = ("example_questions", "trigger_questions", "acceptable_questions")
_SQL_QUESTION = re.compile(r"Answer the following question:\n(.*?)\n(?:\n#|\Z)", re.DOTALL)


def _natural_key(path: Path):
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", path.name)]


def find_task_folders(root: Path) -> list[Path]:
    """A task folder, a folder of task folders, or a folder of domain folders of them."""
    if (root / REGISTRY).is_file():
        return [root]
    found = []
    for child in sorted((p for p in root.iterdir() if p.is_dir()), key=_natural_key):
        if (child / REGISTRY).is_file():
            found.append(child)
        else:
            found.extend(
                grandchild
                for grandchild in sorted(
                    (p for p in child.iterdir() if p.is_dir()), key=_natural_key
                )
                if (grandchild / REGISTRY).is_file()
            )
    return found


def _text(path: Path) -> str:
    """A file's text, line ends normalised to ``\n`` (the release ships some CRLF files):
    UTF-8 with or without a byte order mark, else Windows-1252, losslessly
    (``toolkit/textbytes.py``). The file's own bytes are kept as a release file
    (``bundles/release.py``), which an export writes back, or rewrites in the same encoding
    and line ends when the author edited what it holds."""
    text, _ = text_decode(path.read_bytes())
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _read_json(path: Path) -> Any:
    return json_loads(_text(path))


def _read_toml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    return toml_loads(_text(path))


def _registry_blockers(domain: str, registry: Any) -> tuple[list[dict[str, Any]], list[str]]:
    if not isinstance(registry, dict) or not isinstance(registry.get("blockers"), list):
        return [], ['blocker_registry.json must be an object with a "blockers" list']
    blockers, problems = [], []
    for i, raw in enumerate(registry["blockers"]):
        if not isinstance(raw, dict):
            problems.append(f"blocker {i}: expected an object")
            continue
        questions = next((raw[a] for a in QUESTION_ALIASES if a in raw), None)
        fields = {
            "key": raw.get("id"),
            "type": raw.get("type"),
            "subtype": raw.get("subtype") or "",
            "description": raw.get("description"),
            "resolution": raw.get("resolution"),
        }
        reasons = blocker_check(domain=domain, trigger_questions=questions or [], **fields)
        if questions is None:
            reasons.append(f"no trigger questions (one of {', '.join(QUESTION_ALIASES)})")
        if reasons:
            problems.append(f"blocker {i} ({raw.get('id')!r}): " + "; ".join(reasons))
            continue
        blockers.append({**fields, "trigger_questions": questions})
    keys = [b["key"] for b in blockers]
    problems.extend(
        f"blocker id {k!r} is used twice" for k in sorted({k for k in keys if keys.count(k) > 1})
    )
    return blockers, problems


def _domain(folder: Path, metadata: dict[str, Any], toml: dict[str, Any]) -> str | None:
    task_type = toml.get("metadata", {}).get("task_type")
    if task_type in Domain.values:
        return task_type
    if "database_name" in metadata:
        return Domain.SQL
    if "instance_id" in metadata:
        return Domain.SWE
    prefix = folder.name.split("_")[0]
    return prefix if prefix in Domain.values else None


def _source_id(folder: Path, metadata: dict[str, Any], toml: dict[str, Any]) -> str:
    if metadata.get("task_attempt_id"):
        return str(metadata["task_attempt_id"])
    if toml.get("metadata", {}).get("task_attempt_id"):
        return str(toml["metadata"]["task_attempt_id"])
    if metadata.get("task_id") and metadata.get("attempt_id"):
        return f"{metadata['task_id']}_{metadata['attempt_id']}"
    return folder.name


def _read_folder(folder: Path, workdir: Path) -> tuple[dict[str, Any] | None, list[str]]:
    """Everything needed to make the task, or the reasons it cannot be imported.

    A folder exported by this app also carries ``annotate/task.json`` (the authoring state
    the release's files do not hold) and, for SWE, the repository: ``importers.bundle`` reads
    those on top of what is read here.
    """
    shared = folder / "shared"
    try:
        metadata = (
            _read_json(shared / "metadata.json") if (shared / "metadata.json").is_file() else {}
        )
        toml = _read_toml(folder / "baseline" / "task.toml")
        registry = _read_json(folder / REGISTRY)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        return None, [f"unreadable file: {exc}"]
    if not isinstance(metadata, dict):
        return None, ["shared/metadata.json must be an object"]
    if not isinstance(toml.get("metadata", {}), dict):
        return None, ["baseline/task.toml: metadata must be a table ([metadata])"]
    domain = _domain(folder, metadata, toml)
    if domain is None:
        return None, ["cannot tell whether this is a SQL or a SWE task"]
    blockers, problems = _registry_blockers(domain, registry)
    item: dict[str, Any] = {
        "folder": folder,
        "domain": domain,
        "source_id": _source_id(folder, metadata, toml),
        "blockers": blockers,
        "metadata": {
            "folder": folder.name,
            "metadata": metadata,
            "task_toml": toml.get("metadata", {}),
        },
        "notes": [],
    }
    try:
        if domain == Domain.SQL:
            problems.extend(_read_sql(folder, metadata, toml, item))
        else:
            problems.extend(_read_swe(folder, metadata, toml, item))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        problems.append(f"unreadable file: {exc}")
    if not problems and (folder / ANNOTATE).is_file():
        problems.extend(read_annotate(folder, item, workdir))
    elif not problems:
        _attest_as_released(folder, item["blockers"])
    if not problems and (not (folder / ANNOTATE).is_file() or item.get("release")):
        item["release_files"] = release.collect(folder)  # kept byte for byte (release parity)
        missing = missing_parts(item["release_files"])
        if missing:
            item["notes"].append(missing_sentence(missing))
        item["notes"].extend(folder_overreach(item["release_files"]))
    return (None if problems else item), problems


def _attest_as_released(folder: Path, blockers: list[dict[str, Any]]) -> None:
    """A release task's blockers passed the release's six review layers, which judge the
    seven quality criteria: each is recorded as attested, with a note saying by whom, so the
    workspace shows why lint asks nothing (``criteria_unattested``) for them. A folder this
    app exported carries its own attestations instead (``annotate/task.json``)."""
    note = (
        f"Validated in the HiL-Bench release (task {folder.name}), whose reviewers judged it "
        "through the six review layers; not attested again here."
    )
    for blocker in blockers:
        blocker["criteria"] = {key: {"ok": True, "note": note} for key in QUALITY_CRITERIA_KEYS}


def _read_sql(folder: Path, metadata, toml, item) -> list[str]:
    shared = folder / "shared"
    problems = []
    instruction = folder / "baseline" / "instruction.md"
    match = _SQL_QUESTION.search(_text(instruction)) if instruction.is_file() else None
    if not match:
        problems.append("baseline/instruction.md has no 'Answer the following question:' block")
    db_id = metadata.get("database_name") or toml.get("metadata", {}).get("database_name")
    if not db_id:
        problems.append("no database_name in shared/metadata.json or task.toml")
    business = {}
    if (shared / "data" / "business_info.json").is_file():
        business = _read_json(shared / "data" / "business_info.json")
    sentences = business.get("business_info", []) if isinstance(business, dict) else business
    if not isinstance(sentences, list) or not all(isinstance(s, str) for s in sentences):
        problems.append("shared/data/business_info.json: business_info must be a list of texts")
    gold = shared / "ground_truth.sql"
    if not gold.is_file():
        problems.append("shared/ground_truth.sql is missing")
    descriptions, encodings, desc_problems = read_descriptions(
        shared / "data" / "database_description"
    )
    problems.extend(desc_problems)
    database = shared / "data" / "database.sqlite"
    if database.is_file():
        problem = sqlite_problem(database)
        if problem:
            problems.append(problem)
        item["database_file"] = database
    else:
        archive = shared / "data_archive.json"
        where = ""
        if archive.is_file():
            info = _read_json(archive)
            kept = info.get("db_artifact_path", "?") if isinstance(info, dict) else "?"
            where = f" (the release keeps it at {kept})"
        item["notes"].append(f"Database {db_id} was absent from the task folder{where}.")
    if problems:
        return problems
    # The question as the release wrote it: a trailing space or blank line is part of the
    # instruction texts the bundle regenerates byte for byte (the title is trimmed).
    question = match.group(1)
    item.update(
        title=question.strip(),
        spec={"question": question, "evidence": ""},
        environment={
            "db_id": db_id,
            "descriptions": descriptions,
            "description_encodings": encodings,
            "business_info": sentences,
            "gold_sql": _text(gold),
            "golden_output": _text(shared / "golden_output.csv")
            if (shared / "golden_output.csv").is_file()
            else "",
        },
    )
    return []


def _read_swe(folder: Path, metadata, toml, item) -> list[str]:
    shared = folder / "shared"
    problems = []
    statement = shared / "problem_statement.txt"
    if not statement.is_file():
        problems.append("shared/problem_statement.txt is missing")
    gold = next(
        (
            folder / mode / "solution" / "ground_truth.patch"
            for mode in ("baseline", "ask_human", "full_info")
            if (folder / mode / "solution" / "ground_truth.patch").is_file()
        ),
        None,
    )
    if gold is None:
        problems.append("no <mode>/solution/ground_truth.patch (the gold patch)")
    tests = metadata.get("swe_bench_metadata") or {}
    if not isinstance(tests, dict):
        problems.append("shared/metadata.json: swe_bench_metadata must be an object")
        tests = {}
    fail_to_pass = tests.get("FAIL_TO_PASS", tests.get("fail_to_pass", []))
    pass_to_pass = tests.get("PASS_TO_PASS", tests.get("pass_to_pass", []))
    if not isinstance(fail_to_pass, list) or not isinstance(pass_to_pass, list):
        problems.append("FAIL_TO_PASS / PASS_TO_PASS must be lists")
    repo_name = metadata.get("repo_name_source") or toml.get("metadata", {}).get("repo_name") or ""
    if problems:
        return problems
    sections = parse_swe_statement(_text(statement))
    image = metadata.get("image_name") or toml.get("metadata", {}).get("image_name") or "?"
    item["notes"].append(
        f"Repository {repo_name or '?'} was absent from the task folder "
        f"(the release ships it in the image {image})."
    )
    item.update(
        title=swe_title(sections),
        spec=sections,
        environment={
            "repo_name": repo_name,
            "base_commit": str(metadata.get("base_commit", "")),
            "gold_patch": _text(gold),
            "test_patch": metadata.get("test_patch", ""),
            "fail_to_pass": fail_to_pass,
            "pass_to_pass": pass_to_pass,
            "test_command": metadata.get("test_cmd", ""),
            "environment_spec": _release_environment(folder, metadata, item),
        },
    )
    return []


# A release task's scripts, when the folder carries them (the release keeps them in its image).
RELEASE_SCRIPTS = {"run_script": "run_script.sh", "parser_script": "parser.py"}
RELEASE_LANGUAGES = {"python": "python", "go": "go", "js": "javascript", "ts": "javascript"}


def _release_environment(folder: Path, metadata: dict, item: dict) -> dict:
    """The specification a release task's metadata names: its language and log parser, and its
    run_script.sh / parser.py where the folder has them (shared/ or environment/)."""
    raw = {
        "language": RELEASE_LANGUAGES.get(str(metadata.get("language", "")).lower(), "other"),
        "log_parser": parser_from_harness(str(metadata.get("log_parser") or "pytest")),
    }
    for field, name in RELEASE_SCRIPTS.items():
        for candidate in (folder / "shared" / name, *folder.glob(f"*/environment/{name}")):
            if candidate.is_file():
                raw[field] = _text(candidate)
                break
    if raw["log_parser"] == "sweap_json" and "parser_script" not in raw:
        item["notes"].append(
            "Its run_script.sh and parser.py are not in the folder (the release keeps them in "
            "its image): paste them in the Environment tab to run its tests here."
        )
    try:
        return spec_clean(raw)
    except DomainError as exc:
        item["notes"].append(str(exc))
        return spec_clean({})


def import_hilbench(
    *, project: Project, root: Path, actor=None, label: str | None = None
) -> ImportReport:
    """Import the HiL-Bench task folders under ``root``. ``label`` names ``root`` in
    messages (the archive it was unpacked from, as uploaded; by default ``<name>/``)."""
    root = Path(root)
    if not root.is_dir():
        raise ImportRefused(f"{root} is not a directory.", [])
    folders = find_task_folders(root)
    if not folders:
        raise ImportRefused(
            f"No HiL-Bench task folders under {label or root} "
            f"(looked for {REGISTRY} one and two levels down).",
            [],
        )
    with tempfile.TemporaryDirectory(prefix="hilbench-import-") as workdir:
        items = _read_all(folders, Path(workdir), label or f"{root.name}/")
        return _create_all(project, items, actor)


def _read_all(folders: list[Path], workdir: Path, label: str) -> list[dict[str, Any]]:
    items, problems = [], []
    seen: dict[tuple[str, str], str] = {}
    for folder in folders:
        item, reasons = _read_folder(folder, workdir)
        problems.extend((folder.name, reason) for reason in reasons)
        if item:
            key = (item.get("source", TaskSource.HILBENCH), item["source_id"])
            if key in seen:
                problems.append((folder.name, f"same task id as {seen[key]}"))
                continue
            seen[key] = folder.name
            items.append(item)
    if problems:
        bad = list(dict.fromkeys(p[0] for p in problems))
        named = ", ".join(bad[:8]) + (f" and {len(bad) - 8} more" if len(bad) > 8 else "")
        first = next(reason for folder, reason in problems if folder == bad[0])
        raise ImportRefused(
            f"{len(bad)} bad task folder(s) under {label} ({named}; {bad[0]}: {first}); "
            "nothing was imported.",
            problems,
        )
    return items


def _create_all(project: Project, items: list[dict[str, Any]], actor) -> ImportReport:
    report = ImportReport()
    existing = set(Task.objects.filter(project=project).values_list("source", "source_id"))
    with transaction.atomic():
        for item in items:
            source = item.get("source", TaskSource.HILBENCH)
            if (source, item["source_id"]) in existing:
                report.unchanged.append(item["folder"].name)
                continue
            environment = dict(item["environment"])
            if "database_file" in item:
                environment["database"] = database_store(
                    db_id=environment["db_id"],
                    source=item["database_file"],
                    descriptions=environment["descriptions"],
                    encodings=environment.get("description_encodings"),
                )
            if "repository_source" in item:
                repo_path, commit = item["repository_source"]
                environment["repository"] = repository_add_commit(
                    project=project,
                    repo_name=environment["repo_name"],
                    source=repo_path,
                    commit=commit,
                )
            notes = list(item["notes"])
            if not item.get("from_bundle"):
                notes.append(
                    "The release carries only the blocked specification; "
                    "the original is a copy of it."
                )
            task = task_create(
                project=project,
                domain=item["domain"],
                source=source,
                source_id=item["source_id"],
                title=item["title"],
                original_spec=item["spec"],
                blocked_spec=item.get("blocked_spec"),
                environment=environment,
                blockers=item["blockers"],
                source_metadata=item["metadata"],
                import_notes="\n".join(notes),
                author=actor,
                reason="imported",
            )
            if item.get("release_files"):
                release.keep(task, item["release_files"])
            report.created.append(item["folder"].name)
            report.notes.extend(f"{item['folder'].name}: {n}" for n in item["notes"])
    return report
