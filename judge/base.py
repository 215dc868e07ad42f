"""The judge's interface: which blocker (if any) a question targets, and the answer.

A judge sees blockers' ids and descriptions (and trigger questions), never their
resolutions; the caller turns the verdict into the response: the matched blocker's
resolution verbatim, or exactly ``irrelevant question``.
"""

import hashlib
import json
from dataclasses import dataclass, field

from hilbench_annotate.errors import Unavailable
from hilbench_annotate.question_rules import clean

IRRELEVANT = "irrelevant question"
# The ``judge_version`` columns (verdict cache, ask_human runs) and calibration versions.
VERSION_MAX_LENGTH = 100


def version_fit(version: str) -> str:
    """``version`` as stored with every verdict: itself when it fits the columns, else its
    start and a hash of all of it, so two long versions never share one (the start keeps it
    recognisable; the judge keeps the long form as ``long_version``)."""
    if len(version) <= VERSION_MAX_LENGTH:
        return version
    digest = hashlib.sha256(version.encode()).hexdigest()[:16]
    return f"{version[: VERSION_MAX_LENGTH - len(digest) - 1]}#{digest}"


class JudgeError(Unavailable):
    """The judge could not decide (endpoint down, malformed output…). Never an "irrelevant"."""

    what = "Judge"


@dataclass(frozen=True)
class RegistryBlocker:
    id: str
    description: str
    trigger_questions: tuple[str, ...]
    resolution: str = field(default="", repr=False)
    type: str = ""  # the blocker's kind ("missing parameters", "schema" …)


@dataclass(frozen=True)
class Verdict:
    blocker_id: str | None  # None: irrelevant
    reason: str = ""  # why (rule that rejected it, scores…)
    scores: dict = field(default_factory=dict)


def respond(verdict: Verdict, registry: list[RegistryBlocker]) -> str:
    """The matched blocker's resolution verbatim, or ``irrelevant question``; the one way a
    verdict becomes an answer (the app's ask_human, the batch measure, the bundle's judge)."""
    if not verdict.blocker_id:
        return IRRELEVANT
    for blocker in registry:
        if blocker.id == verdict.blocker_id:
            return blocker.resolution
    raise JudgeError(f"the judge named a blocker the registry lacks: {verdict.blocker_id!r}")


def registry_from_json(data: dict | list) -> list[RegistryBlocker]:
    """Blockers of a HiL-Bench registry file (``{"blockers": [...]}``), list markers stripped.

    Trigger questions are the registry's ``example_questions`` (or ``trigger_questions``).
    """
    blockers = data.get("blockers") if isinstance(data, dict) else data
    if not isinstance(blockers, list):
        raise ValueError('a registry is {"blockers": [...]}')
    out = []
    for index, raw in enumerate(blockers):
        if not isinstance(raw, dict) or not isinstance(raw.get("id"), str) or not raw["id"]:
            raise ValueError(f"blocker {index} has no id")
        questions = raw.get("example_questions", raw.get("trigger_questions")) or []
        out.append(
            RegistryBlocker(
                id=raw["id"],
                description=" ".join(str(raw.get("description") or "").split()),
                trigger_questions=tuple(c for q in questions if (c := clean(str(q)))),
                resolution=str(raw.get("resolution") or ""),
                type=str(raw.get("type") or ""),
            )
        )
    return out


def load_registry(path) -> list[RegistryBlocker]:
    with open(path, encoding="utf-8") as handle:
        return registry_from_json(json.load(handle))
