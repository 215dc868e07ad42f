"""The workspace form, read into a draft shaped like a revision snapshot.

One workspace form carries the whole task — blocked specification, environment fields and
the blocker registry — so a save is one revision and a stale save can be shown whole.
Field names: ``spec.<section>``, ``env.<field>``, ``env.descriptions.<table>``; per blocker
``blocker`` (its form index, in page order) and ``blocker-<n>-<field>``, ``blocker-<n>-q``
(trigger questions, in order), ``blocker-<n>-criteria-<key>-ok`` / ``-note``.
"""

from collections.abc import Mapping
from typing import Any

from hilbench_annotate.services.tasks import EDITABLE_ENV_FIELDS
from hilbench_annotate.spec import sections_for
from hilbench_annotate.vocabulary import QUALITY_CRITERIA_KEYS, Domain

SQL_TEXT_FIELDS = ("gold_sql", "edit_script", "golden_output")


def _text(data, name: str) -> str:
    # Browsers send CRLF from textareas; store LF like the imported files.
    return str(data.get(name, "")).replace("\r\n", "\n")


def _line_ends(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _kept(data, name: str, stored: str | None) -> str:
    """The posted text, or the stored one when it is what a browser posts of it: a file
    imported with CRLF or lone CR line ends (Spider's description CSVs, a patch) or starting
    with a blank line keeps its bytes through a save that did not touch it, and no revision
    says it was edited. A browser sends a textarea's every line end as CRLF and drops its
    first newline (the workspace's template writes none before the text). An edited file
    whose line ends were all CRLF keeps CRLF: the revision holds the lines the author changed,
    not every line of the file."""
    posted = _text(data, name)
    if isinstance(stored, str):
        plain = _line_ends(stored)
        if _line_ends(posted) in (plain, plain.removeprefix("\n")):
            return stored
        if "\r\n" in stored and stored.count("\r\n") == stored.count("\n"):
            return _line_ends(posted).replace("\n", "\r\n")  # an edited CRLF file stays CRLF
    return posted


SPEC_LINES = (
    "packages", "requirement_files", "conda_files", "pre_install", "install", "eval_commands",
)  # fmt: skip


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.split("\n") if line.strip()]


def _spec_from_form(data, saved: Mapping[str, Any]) -> dict[str, Any]:
    """The environment specification as the form shows it (validated when saved)."""
    spec = dict(saved)
    for name in ("language", "python", "log_parser", "requirements_commit"):
        if f"env.spec.{name}" in data:
            spec[name] = _text(data, f"env.spec.{name}").strip()
    for name in SPEC_LINES:
        if f"env.spec.{name}" in data:
            spec[name] = _lines(_text(data, f"env.spec.{name}"))
    if "env.spec.env" in data:
        pairs = [line.partition("=") for line in _lines(_text(data, "env.spec.env"))]
        spec["env"] = {name.strip(): value.strip() for name, _, value in pairs}
    for name in ("run_script", "parser_script"):
        if f"env.spec.{name}" in data:
            spec[name] = _text(data, f"env.spec.{name}")
    return spec


def draft_from_form(*, domain: str, data, environment: Mapping[str, Any]) -> dict[str, Any]:
    """Read the posted workspace form; fields not on the form keep ``environment``'s values."""
    draft: dict[str, Any] = {
        "domain": domain,
        "blocked_spec": {key: _text(data, f"spec.{key}") for key, _ in sections_for(domain)},
        "environment": dict(environment),
        "blockers": [],
    }
    env = draft["environment"]
    if domain == Domain.SQL:
        for name in SQL_TEXT_FIELDS:
            if f"env.{name}" in data:
                env[name] = _kept(data, f"env.{name}", env.get(name))
        if "env.business_info" in data:
            env["business_info"] = [
                line.strip()
                for line in _text(data, "env.business_info").split("\n")
                if line.strip()
            ]
        descriptions = dict(env.get("descriptions") or {})
        for table in list(descriptions):
            if f"env.descriptions.{table}" in data:
                descriptions[table] = _kept(data, f"env.descriptions.{table}", descriptions[table])
        env["descriptions"] = descriptions
    else:
        if "env.setup_patch" in data:
            env["setup_patch"] = _kept(data, "env.setup_patch", env.get("setup_patch"))
        if "env.test_command" in data:
            env["test_command"] = _text(data, "env.test_command").strip()
        if "env.spec.log_parser" in data:
            env["environment_spec"] = _spec_from_form(data, env.get("environment_spec") or {})

    for index in data.getlist("blocker") if hasattr(data, "getlist") else data.get("blocker", []):
        prefix = f"blocker-{index}-"
        criteria = {}
        for key in QUALITY_CRITERIA_KEYS:
            ok = bool(data.get(f"{prefix}criteria-{key}-ok"))
            note = _text(data, f"{prefix}criteria-{key}-note").strip()
            if ok or note:
                criteria[key] = {"ok": ok, "note": note}
        questions = (
            data.getlist(f"{prefix}q") if hasattr(data, "getlist") else data.get(f"{prefix}q", [])
        )
        draft["blockers"].append(
            {
                "pk": (data.get(f"{prefix}pk") or "").strip() or None,
                "id": _text(data, f"{prefix}key").strip(),
                "type": _text(data, f"{prefix}type").strip(),
                "subtype": _text(data, f"{prefix}subtype").strip(),
                "description": _text(data, f"{prefix}description"),
                "resolution": _text(data, f"{prefix}resolution"),
                "surfaces_in": _text(data, f"{prefix}surfaces_in").strip(),
                "criteria": criteria,
                "trigger_questions": [q.replace("\r\n", "\n") for q in questions if q.strip()],
            }
        )
    return draft


def comparable(snapshot: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of a snapshot or draft an author edits, for change detection and diffs."""
    env = snapshot.get("environment") or {}
    keep = EDITABLE_ENV_FIELDS.get(snapshot.get("domain"), ())
    return {
        "blocked_spec": snapshot.get("blocked_spec", {}),
        "environment": {k: env.get(k) for k in keep},
        "blockers": [
            {
                k: b.get(k)
                for k in (
                    "id",
                    "type",
                    "subtype",
                    "description",
                    "resolution",
                    "surfaces_in",
                    "criteria",
                    "trigger_questions",
                )
            }
            for b in snapshot.get("blockers", [])
        ],
    }
