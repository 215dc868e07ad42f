"""Deterministic candidate validation questions for a task's judge measurement.

Positives are paraphrases of each blocker's trigger questions and of its description, made by
a few fixed rewrites; negatives are broad or off-task questions from a fixed list. The
candidates still need two independent labels each before they measure anything.
"""

import re

NEGATIVES = (
    "What is the capital of France?",
    "Can you explain how SQL joins work in general?",
    "What programming language should I use for this?",
    "How long should this task take me?",
    "Is there anything else I should know?",
    "Who wrote this task?",
)

_WHICH = re.compile(r"^which\s+(.+?)\s+(is|are|does|do|should|counts?|marks?)\b(.*)$", re.I)
_HOW = re.compile(r"^how\s+((?:is|are|do|does|should)\s+.+)$", re.I)


def _clean(text: str) -> str:
    text = " ".join(text.split()).strip().lstrip("-").strip()
    return text.rstrip("?.! ")


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:] if text else text


def _question(text: str) -> str:
    text = text.strip()
    return text[:1].upper() + text[1:] + "?"


def paraphrases(trigger: str) -> list[str]:
    """Up to four rewrites of one trigger question."""
    base = _clean(trigger)
    if not base:
        return []
    out = [
        f"Could you clarify: {_lower_first(base)}?",
        f"I am not sure here — {_lower_first(base)}?",
    ]
    which = _WHICH.match(base)
    if which:
        noun, verb, rest = which.groups()
        out.append(_question(f"what is the {noun} that {verb}{rest}"))
    how = _HOW.match(base)
    if how:
        out.append(_question(f"in what way {_lower_first(how.group(1))}"))
    return out


def from_description(description: str) -> list[str]:
    """One question from a blocker's description: "What is meant here: <first clause>?"."""
    text = _clean(description.split(".")[0] if description else "")
    if len(text) < 8:
        return []
    return [f"What is meant here: {_lower_first(text)}?"]


def candidates(blockers: list[dict]) -> list[str]:
    """Candidate texts, deduplicated in order: for each blocker ``{"description",
    "trigger_questions"}`` its paraphrases, then the fixed negatives."""
    seen: set[str] = set()
    triggers = {_clean(q).lower() for b in blockers for q in b.get("trigger_questions", [])}
    out: list[str] = []
    for blocker in blockers:
        texts = [p for q in blocker.get("trigger_questions", []) for p in paraphrases(q)]
        texts += from_description(blocker.get("description", ""))
        for text in texts:
            key = _clean(text).lower()
            if key not in seen and key not in triggers:
                seen.add(key)
                out.append(text)
    for text in NEGATIVES:
        if _clean(text).lower() not in seen:
            seen.add(_clean(text).lower())
            out.append(text)
    return out
