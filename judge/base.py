"""The judge's interface: which blocker (if any) a question targets, and the answer.

A judge sees blockers' ids and descriptions (and trigger questions), never their
resolutions; the caller turns the verdict into the response: the matched blocker's
resolution verbatim, or exactly ``irrelevant question``.
"""

from dataclasses import dataclass, field

from hilbench_annotate.errors import Unavailable

IRRELEVANT = "irrelevant question"


class JudgeError(Unavailable):
    """The judge could not decide (endpoint down, malformed output…). Never an "irrelevant"."""

    what = "Judge"


@dataclass(frozen=True)
class RegistryBlocker:
    id: str
    description: str
    trigger_questions: tuple[str, ...]
    resolution: str = field(default="", repr=False)  # for the response only; judges ignore it


@dataclass(frozen=True)
class Verdict:
    blocker_id: str | None  # None: irrelevant
    reason: str = ""  # why (rule that rejected it, scores…)
    scores: dict = field(default_factory=dict)


def respond(verdict: Verdict, registry: list[RegistryBlocker]) -> str:
    if verdict.blocker_id is None:
        return IRRELEVANT
    for blocker in registry:
        if blocker.id == verdict.blocker_id:
            return blocker.resolution
    raise JudgeError(f"the judge named a blocker the registry lacks: {verdict.blocker_id!r}")
