"""The lint's vocabulary: severities, the rule catalogue shown to authors, and ``Finding``."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from hilbench_annotate.vocabulary import (
    MAX_BLOCKERS,
    MAX_TRIGGER_QUESTIONS,
    MIN_BLOCKERS,
    MIN_TRIGGER_QUESTIONS,
)

ERROR, WARNING = "error", "warning"

RULES: dict[str, str] = {
    "blocker_count": f"A task has {MIN_BLOCKERS}–{MAX_BLOCKERS} blockers.",
    "trigger_count": (
        f"Each blocker has {MIN_TRIGGER_QUESTIONS}–{MAX_TRIGGER_QUESTIONS} trigger questions."
    ),
    "empty_field": "A blocker's description, resolution and trigger questions are not empty.",
    "self_referential": (
        'A trigger question is about the task, not the registry ("this blocker", "the gap").'
    ),
    "multi_topic": (
        "A trigger question asks one thing; the judge refuses a message whose questions target "
        "different blockers."
    ),
    "not_a_question": (
        "A trigger question is one the judge accepts: a question, not a statement, an "
        '"I assume X, right?" confirmation or a broad question (hilbench_annotate.question_rules).'
    ),
    "names_nothing": (
        "A trigger question names something of the task (a term, column or identifier), not "
        'only the frame of every question ("What value should be used?").'
    ),
    "echoes_task_text": (
        "A trigger question asks for the missing detail, not what a phrase of the task means: "
        "the judge turns away a definition request that only quotes the task, and the task's "
        "text asked back."
    ),
    "contains_resolution": "A trigger question does not contain the resolution or its values.",
    "near_duplicate": "A blocker's trigger questions are varied: no two near-duplicates.",
    "cross_blocker_duplicate": (
        "A trigger question is not nearly identical to a trigger question of another blocker."
    ),
    "resolution_leak": (
        "A resolution is not given away in the blocked specification, column descriptions or "
        "business info: not whole, not a sentence of it, and no sentence on its topic plainly "
        "states all its decisive values."
    ),
    "resolution_literal_visible": (
        "A value of a resolution that is visible to the agent does not tell the answer."
    ),
    "overlapping_blockers": (
        "Blockers are independent: descriptions do not overlap and resolutions differ."
    ),
    "gold_sql": (
        "The gold SQL is a single query that parses (SQLite dialect) and names only existing "
        "tables and columns."
    ),
    "resolution_off_gold": (
        "A SQL blocker's resolution shares something with the gold SQL: a column, table, value "
        "or literal of it."
    ),
    "criteria_unattested": (
        "Each blocker attests all seven quality criteria with a tick and a one-line note."
    ),
}

# What the lint panel calls each rule (the rule id stays in the API and in waivers).
RULE_TITLES: dict[str, str] = {
    "blocker_count": "Number of blockers",
    "trigger_count": "Number of trigger questions",
    "empty_field": "Empty field",
    "self_referential": "Question about the registry",
    "multi_topic": "Several questions in one",
    "not_a_question": "Not a question the judge accepts",
    "names_nothing": "Question names nothing of the task",
    "echoes_task_text": "Question only echoes the task",
    "contains_resolution": "Question gives the resolution away",
    "near_duplicate": "Near-duplicate questions",
    "cross_blocker_duplicate": "Same question as another blocker's",
    "resolution_leak": "Resolution given away",
    "resolution_literal_visible": "Resolution value visible",
    "overlapping_blockers": "Overlapping blockers",
    "gold_sql": "Gold SQL",
    "resolution_off_gold": "Resolution unrelated to the gold SQL",
    "criteria_unattested": "Quality criteria not attested",
}

_FIELD_PART = re.compile(r"^(?P<name>[a-z_]+)(?:\[(?P<index>\d+)\])?$")
_FIELD_NAMES = {"blockers": "Blocker", "trigger_questions": "trigger question"}


def field_label(field: str) -> str:
    """A finding's field path as a reader names it: ``blockers[0].trigger_questions[2]`` is
    "Blocker 1 › trigger question 3", ``spec.question`` "Specification › question"."""
    if field == "blockers":
        return "Blockers"
    words = []
    for part in field.split("."):
        match = _FIELD_PART.match(part)
        if not match:
            words.append(part)
            continue
        name = _FIELD_NAMES.get(match["name"]) or (
            "Specification" if match["name"] == "spec" else match["name"].replace("_", " ")
        )
        words.append(f"{name} {int(match['index']) + 1}" if match["index"] else name)
    label = " › ".join(words)
    return label[:1].upper() + label[1:]


FINGERPRINT_MAX = 300  # authoring.LintWaiver.fingerprint's length


@dataclass(frozen=True)
class Finding:
    """One problem in a draft, addressed by a stable rule id and a field path.

    ``detail`` is set by the leak rules: where the resolution shows and what of it
    (``business_info[3]:D``). It is part of the fingerprint, so a waiver covers that leak
    only — the same resolution copied somewhere else later is a new finding to judge.
    """

    rule: str
    field: str
    message: str
    severity: str
    detail: str = ""

    @property
    def title(self) -> str:
        return RULE_TITLES.get(self.rule, self.rule.replace("_", " ").capitalize())

    @property
    def where(self) -> str:
        return field_label(self.field)

    @property
    def fingerprint(self) -> str:
        """Stable across saves (no message text), so a waiver keeps matching the finding."""
        plain = f"{self.rule}@{self.field}"
        if not self.detail:
            return plain
        full = f"{plain}#{self.detail}"
        if len(full) <= FINGERPRINT_MAX:
            return full
        digest = hashlib.sha256(self.detail.encode()).hexdigest()[:16]
        return f"{full[: FINGERPRINT_MAX - len(digest) - 1]}~{digest}"
