"""Word-level diffs rendered as HTML (``<del>`` / ``<ins>``), escaped."""

import difflib
import re
from collections.abc import Mapping
from typing import Any

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

_TOKENS = re.compile(r"\s+|[^\s]+")


def word_diff_html(old: str, new: str) -> SafeString:
    a, b = _TOKENS.findall(old or ""), _TOKENS.findall(new or "")
    out = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(escape("".join(a[i1:i2])))
            continue
        if i2 > i1:
            out.append(f"<del>{escape(''.join(a[i1:i2]))}</del>")
        if j2 > j1:
            out.append(f"<ins>{escape(''.join(b[j1:j2]))}</ins>")
    return mark_safe("".join(out))  # noqa: S308 - every piece above is escaped


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_text(v) for v in value)
    if isinstance(value, Mapping):
        return "\n".join(f"{k}: {_text(v)}" for k, v in value.items())
    return str(value)


def snapshot_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[dict[str, Any]]:
    """What differs between two revision snapshots, field by field, with word diffs.

    Blockers are matched by id; a blocker present on one side only is shown as added or
    removed whole.
    """
    rows: list[dict[str, Any]] = []

    def add(label: str, a: Any, b: Any) -> None:
        ta, tb = _text(a), _text(b)
        if ta != tb:
            rows.append({"label": label, "html": word_diff_html(ta, tb)})

    for key in sorted(set(old.get("blocked_spec", {})) | set(new.get("blocked_spec", {}))):
        add(
            f"Blocked specification · {key}",
            old.get("blocked_spec", {}).get(key),
            new.get("blocked_spec", {}).get(key),
        )
    old_env, new_env = old.get("environment", {}) or {}, new.get("environment", {}) or {}
    for key in sorted(set(old_env) | set(new_env)):
        if key == "descriptions":
            tables = set(old_env.get(key) or {}) | set(new_env.get(key) or {})
            for table in sorted(tables):
                add(
                    f"Description CSV · {table}",
                    (old_env.get(key) or {}).get(table),
                    (new_env.get(key) or {}).get(table),
                )
        else:
            add(f"Environment · {key}", old_env.get(key), new_env.get(key))
    old_blockers = {b["id"]: b for b in old.get("blockers", [])}
    new_blockers = {b["id"]: b for b in new.get("blockers", [])}
    order = [b["id"] for b in new.get("blockers", [])] + [
        k for k in old_blockers if k not in new_blockers
    ]
    for key in order:
        a, b = old_blockers.get(key, {}), new_blockers.get(key, {})
        if not a:
            add(f"Blocker {key} (added)", "", _blocker_text(b))
            continue
        if not b:
            add(f"Blocker {key} (removed)", _blocker_text(a), "")
            continue
        for field in (
            "type",
            "subtype",
            "description",
            "resolution",
            "surfaces_in",
            "trigger_questions",
            "criteria",
        ):
            add(f"Blocker {key} · {field.replace('_', ' ')}", a.get(field), b.get(field))
    if (
        [b["id"] for b in old.get("blockers", [])] != [b["id"] for b in new.get("blockers", [])]
        and all(k in old_blockers for k in new_blockers)
        and len(old_blockers) == len(new_blockers)
    ):
        add("Blocker order", list(old_blockers), [b["id"] for b in new.get("blockers", [])])
    return rows


def _blocker_text(blocker: Mapping[str, Any]) -> str:
    questions = "\n".join(f"- {q}" for q in blocker.get("trigger_questions", []))
    return (
        f"type: {blocker.get('type')} {blocker.get('subtype') or ''}\n"
        f"description: {blocker.get('description')}\nresolution: {blocker.get('resolution')}\n"
        f"trigger questions:\n{questions}"
    )
