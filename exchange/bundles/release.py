"""Release parity: a task imported from the HiL-Bench release exports as the release shipped it.

At import every file of the release's task folder is kept byte for byte (``ReleaseFile``),
with a fingerprint of what it derives from in the task (the registry, an instruction text,
the gold SQL…). At export each file is written as kept while that fingerprint is unchanged;
a file whose inputs were edited is rewritten in the release's own style (its JSON key order
and indent, its line endings), and files the app cannot make (``data_archive.json``, image
references, scripts, ``environment/``) are always written as kept. So an unedited task gives
back the release's bytes, and the release's harness reads it exactly as it read the original.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from exchange.models import ReleaseFile
from hilbench_annotate.instructions import MODES, task_instructions
from hilbench_annotate.services.tasks import task_snapshot
from hilbench_annotate.spec import render_swe_statement
from hilbench_annotate.toolkit.jsontext import json_loads
from hilbench_annotate.toolkit.textbytes import UTF8, UTF8_BOM, text_decode, text_encode

from . import layout
from .release_runtime import GENERATED, RESERVED, generated_paths

# Never kept: our own files, data carried by the app's stores, and anything too large.
OWN_FOLDERS = ("annotate/", "provenance/")
NOT_KEPT = {layout.SQL_DATABASE, layout.SWE_REPOSITORY, layout.MANIFEST}
MAX_KEPT_BYTES = 5 << 20
REGISTRY_KEYS = ("id", "type", "subtype", "description", "resolution", "trigger_questions")


def collect(folder: Path) -> dict[str, bytes]:
    """The release files of ``folder`` (relative path -> bytes): not the files an export of
    the app added to run it, which its ``provenance/generated.json`` lists."""
    listed = folder / GENERATED
    generated = generated_paths(listed.read_bytes()) if listed.is_file() else set()
    files = {}
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder).as_posix()
        if not path.is_file() or path.is_symlink() or relative in NOT_KEPT:
            continue
        if relative in generated:
            continue
        if relative.startswith(OWN_FOLDERS) or path.stat().st_size > MAX_KEPT_BYTES:
            continue
        if relative.startswith(RESERVED):  # the app's own files there, never a folder's
            continue
        files[relative] = path.read_bytes()
    return files


def keep(task, files: dict[str, bytes]) -> None:
    """Store ``files`` (from ``collect``) as the task's release files, fingerprinted against
    the task as just imported."""
    snapshot = task_snapshot(task)
    ReleaseFile.objects.bulk_create(
        ReleaseFile(task=task, path=path, content=content, fingerprint=fingerprint(
            inputs(path, snapshot)))
        for path, content in sorted(files.items())
    )  # fmt: skip


def export_files(task, snapshot: dict[str, Any]) -> dict[str, bytes]:
    """The task's release files for an export: as kept, or rewritten where edited."""
    files = {}
    for kept in task.release_files.all():
        content = bytes(kept.content)
        if not unchanged(kept.path, kept.fingerprint, snapshot):
            content = rewrite(kept.path, content, snapshot)
        files[kept.path] = content
    return files


def inputs(path: str, snapshot: dict[str, Any]) -> Any:
    """What the file at ``path`` derives from in the task, or None when the app never
    rewrites it (it is written as the release shipped it, whatever the edits)."""
    env = snapshot.get("environment") or {}
    mode, _, rest = path.partition("/")
    swe = snapshot.get("domain") == "swe"
    if path == layout.REGISTRY:
        return [{k: b.get(k) for k in REGISTRY_KEYS} for b in snapshot.get("blockers", [])]
    if mode in MODES and rest == "instruction.md":
        return task_instructions(snapshot)[mode]
    if path == layout.SQL_GROUND_TRUTH or (mode in MODES and rest == "solution/ground_truth.sql"):
        return env.get("gold_sql")
    if mode in MODES and rest == "solution/ground_truth.patch":
        return env.get("gold_patch")
    if path == layout.SQL_GOLDEN_OUTPUT:
        return env.get("golden_output")
    if path == layout.SQL_BUSINESS_INFO:
        return env.get("business_info")
    if path.startswith(layout.SQL_DESCRIPTIONS + "/") and path.endswith(".csv"):
        return (env.get("descriptions") or {}).get(Path(path).stem)
    if path == layout.SWE_STATEMENT:
        return snapshot.get("blocked_spec")
    if path == layout.METADATA and swe:
        keys = ("fail_to_pass", "pass_to_pass", "test_command", "test_patch")
        return {k: env.get(k) for k in keys} | {"types": _types(snapshot)}
    return None


def _types(snapshot: dict[str, Any]) -> list[str]:
    return [b.get("type", "") for b in snapshot.get("blockers", [])]


def fingerprint(value: Any) -> str:
    if value is None:
        return ""
    canonical = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def unchanged(path: str, kept_fingerprint: str, snapshot: dict[str, Any]) -> bool:
    return not kept_fingerprint or fingerprint(inputs(path, snapshot)) == kept_fingerprint


# --- rewriting an edited file in the release's style ---------------------------------------


def _style(original: bytes) -> tuple[int | None, bool, str]:
    """(JSON indent, ascii-escaped, line ending) the original was written with."""
    text = original.decode("utf-8", "replace")
    match = re.search(r"\n( +)\S", text)
    indent = len(match.group(1)) if match else None
    newline = "\r\n" if "\r\n" in text else "\n"
    return indent, "\\u" in text, newline


def _json(original: bytes, value: Any) -> bytes:
    indent, ascii_only, newline = _style(original)
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
    if original.endswith(b"\n"):
        text += "\n"
    return text.replace("\n", newline).encode()


def _text(original: bytes, value: str) -> bytes:
    """An edited text file with the original's line ends and encoding (a byte order mark,
    Windows-1252: ``toolkit/textbytes.py``)."""
    _, _, newline = _style(original)
    _, encoding = text_decode(original)
    if encoding == UTF8_BOM and value.startswith("\ufeff"):
        encoding = UTF8  # read as UTF-8 text (the gold SQL), the mark is in the value
    return text_encode(value.replace("\r\n", "\n").replace("\n", newline), encoding)


def _registry(original: bytes, snapshot: dict[str, Any]) -> bytes:
    document = json_loads(original)
    old = {b.get("id"): b for b in document.get("blockers", [])}
    key = next(
        (k for b in old.values() for k in ("example_questions", "trigger_questions",
         "acceptable_questions") if k in b),
        "example_questions",
    )  # fmt: skip
    blockers = []
    for b in snapshot.get("blockers", []):
        entry = dict(old.get(b["id"], {}))  # the release's key order, its extra keys
        entry.update(id=b["id"], type=b["type"], description=b["description"])
        entry.update(resolution=b["resolution"], **{key: list(b["trigger_questions"])})
        if snapshot.get("domain") == "sql":
            entry["subtype"] = b.get("subtype") or None
        blockers.append(entry)
    document["blockers"] = blockers
    return _json(original, document)


def _metadata(original: bytes, snapshot: dict[str, Any]) -> bytes:
    document = json_loads(original)
    env = snapshot.get("environment") or {}
    tests = {"FAIL_TO_PASS": env.get("fail_to_pass"), "PASS_TO_PASS": env.get("pass_to_pass")}
    if isinstance(document.get("swe_bench_metadata"), str):
        document["swe_bench_metadata"] = str(tests)  # the release writes a Python repr there
    elif "swe_bench_metadata" in document:
        document["swe_bench_metadata"] = tests
    document["test_cmd"] = env.get("test_command", document.get("test_cmd"))
    document["test_patch"] = env.get("test_patch", document.get("test_patch"))
    if isinstance(document.get("blocker_stats"), dict):
        document["blocker_stats"]["total"] = len(snapshot.get("blockers", []))
    return _json(original, document)


def rewrite(path: str, original: bytes, snapshot: dict[str, Any]) -> bytes:
    """``path`` written anew from the task, in the style of the release's ``original``."""
    value = inputs(path, snapshot)
    if path == layout.REGISTRY:
        return _registry(original, snapshot)
    if path == layout.METADATA:
        return _metadata(original, snapshot)
    if path == layout.SQL_BUSINESS_INFO:
        document = json_loads(original)
        if isinstance(document, dict):
            document["business_info"] = value
        else:
            document = value
        return _json(original, document)
    if path == layout.SWE_STATEMENT:
        return _text(original, render_swe_statement(value))
    return _text(original, value or "")
