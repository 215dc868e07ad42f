"""The lint's vocabulary: severities, the rule catalogue shown to authors, and ``Finding``."""

from __future__ import annotations

import hashlib
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
    "criteria_unattested": (
        "Each blocker attests all seven quality criteria with a tick and a one-line note."
    ),
}


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
