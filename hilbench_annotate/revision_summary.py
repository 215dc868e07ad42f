"""What a revision changed, in one sentence people read in History and the timeline.

``change_summary(before, after)`` compares two revision snapshots (``task_snapshot``'s shape)
and says what was edited, added and removed — "Edited the question and blocker
review_year_dates's resolution; added a trigger question to troubled_loan_definition" —
naming sections, environment fields and blockers in the benchmark's words. Pure: no query.
"""

from collections import Counter
from collections.abc import Mapping
from typing import Any

from hilbench_annotate.spec import sections_for
from hilbench_annotate.toolkit.wording import plain_list, shorten

SUMMARY_MAX = 500
ENVIRONMENT_WORDS = {
    "descriptions": "the description CSVs",
    "edit_script": "the database-edit script",
    "business_info": "the business info",
    "gold_sql": "the gold SQL",
    "golden_output": "the golden output",
    "original_sql": "the base task's SQL",
    "database_sha256": "the database",
    "setup_patch": "the setup patch",
    "test_command": "the test command",
    "environment_spec": "the environment specification",
}
BLOCKER_FIELDS = (
    ("type", "type"),
    ("subtype", "subtype"),
    ("description", "description"),
    ("resolution", "resolution"),
    ("surfaces_in", "surfaces-in"),
    ("criteria", "criteria"),
)


def _counted(n: int, one: str, many: str) -> str:
    return f"a {one}" if n == 1 else f"{n} {many}"


class _Changes:
    def __init__(self):
        self.edited: list[str] = []
        self.added: list[str] = []
        self.removed: list[str] = []

    def sentence(self) -> str:
        parts = [
            f"{verb} {plain_list(items, quote=False)}"
            for verb, items in (
                ("edited", self.edited),
                ("added", self.added),
                ("removed", self.removed),
            )
            if items
        ]
        text = "; ".join(parts)
        return shorten(text[:1].upper() + text[1:], SUMMARY_MAX)


def _spec(changes: _Changes, domain: str, before: Mapping, after: Mapping) -> None:
    if before.get("title") != after.get("title"):
        changes.edited.append("the title")
    old, new = before.get("blocked_spec") or {}, after.get("blocked_spec") or {}
    for key, label in sections_for(domain):
        if (old.get(key) or "") != (new.get(key) or ""):
            changes.edited.append(f"the {label.lower()}")


def _environment(changes: _Changes, before: Mapping, after: Mapping) -> None:
    old, new = before.get("environment") or {}, after.get("environment") or {}
    for name in [*old, *(k for k in new if k not in old)]:
        if old.get(name) != new.get(name):
            changes.edited.append(ENVIRONMENT_WORDS.get(name, f"the {name.replace('_', ' ')}"))


def _questions(changes: _Changes, key: str, old: list[str], new: list[str]) -> str | None:
    """Says added or removed trigger questions; returns "trigger questions" when they were
    rewritten (or reordered), for the blocker's list of edited fields."""
    gained = sum((Counter(new) - Counter(old)).values())
    lost = sum((Counter(old) - Counter(new)).values())
    if gained and lost or (not gained and not lost and old != new):
        return "trigger questions"
    if gained:
        changes.added.append(
            f"{_counted(gained, 'trigger question', 'trigger questions')} to {key}"
        )
    if lost:
        changes.removed.append(
            f"{_counted(lost, 'trigger question', 'trigger questions')} from {key}"
        )
    return None


def _blockers(changes: _Changes, before: Mapping, after: Mapping) -> None:
    old = {b.get("id"): b for b in before.get("blockers") or []}
    new = {b.get("id"): b for b in after.get("blockers") or []}
    for key, blocker in new.items():
        if key not in old:
            changes.added.append(f"blocker {key}")
            continue
        was = old[key]
        fields = [word for field, word in BLOCKER_FIELDS if was.get(field) != blocker.get(field)]
        rewritten = _questions(
            changes, key, was.get("trigger_questions") or [], blocker.get("trigger_questions") or []
        )
        if rewritten:
            fields.append(rewritten)
        if fields:
            changes.edited.append(f"blocker {key}'s {plain_list(fields, quote=False)}")
    changes.removed += [f"blocker {key}" for key in old if key not in new]
    common = [k for k in old if k in new]
    if common != [k for k in new if k in old]:
        changes.edited.append("the blocker order")


def change_summary(before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> str:
    """What ``after`` changed against ``before`` (None: the task's first revision, which
    changed nothing; ""). Empty when the two are the same in every field an author edits."""
    if before is None:
        return ""
    changes = _Changes()
    _spec(changes, after.get("domain", ""), before, after)
    _environment(changes, before, after)
    _blockers(changes, before, after)
    return changes.sentence()
