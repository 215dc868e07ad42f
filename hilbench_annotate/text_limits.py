"""The longest text each field takes (``TEXT_LIMITS``) and the message that
refuses more: it names the field and its limit, so a 65,000-character paste into a trigger
question is told apart from a real answer, and the save writes nothing (what was saved before
stays)."""

from __future__ import annotations

from django.conf import settings

# The longest text a person may save in each field, in characters: the services refuse more
# with a message naming the field and its limit, and the pages' inputs carry it as maxlength
# (``{% text_limit %}``). Each is some three times the longest of the 103 release tasks in
# examples/hilbench* (in brackets), so a paste of a whole page (65,000 characters) into a
# field meant for a sentence is refused, never a real task. A deployment may set
# ``settings.TEXT_LIMITS`` (the same keys) to change them.
TEXT_LIMITS = {
    "trigger_question": 1_000,  # (345)
    "blocker_description": 4_000,  # (752)
    "resolution": 8_000,  # (2,238)
    "sql_spec": 8_000,  # a section of a SQL task's question (635)
    "swe_spec": 30_000,  # a section of a SWE problem statement (6,165: requirements)
    "comment": 10_000,  # a review comment (none in the release)
}

LABELS = {
    "trigger_question": "a trigger question",
    "blocker_description": "the description",
    "resolution": "the resolution",
    "sql_spec": "the question",
    "swe_spec": "the problem statement",
    "comment": "the comment",
}


def text_limit(key: str) -> int:
    return {**TEXT_LIMITS, **getattr(settings, "TEXT_LIMITS", {})}[key]


def text_too_long(key: str, value, *, name: str | None = None) -> str | None:
    """The refusal when ``value`` is longer than the limit ``key``, else None."""
    limit = text_limit(key)
    if isinstance(value, str) and len(value) > limit:
        what = name or LABELS[key]
        return (
            f"{what[:1].upper()}{what[1:]} is {len(value):,} characters long; the limit is "
            f"{limit:,} — shorten it (was something pasted by mistake?)"
        )
    return None


def spec_limit_key(domain: str) -> str:
    return "swe_spec" if domain == "swe" else "sql_spec"
