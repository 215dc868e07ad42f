"""Which Harbor trials count as passes, as the HiL-Bench release counts its passes. Pure: no ORM.

The release (``run_hil_bench.py``) scores every pass whose evaluation completed, resolved or
not, and leaves out of every figure — re-running it when asked (``--rerun``) — a pass whose
evaluation did not complete (``parse_metrics_rows``: status ``infra_error``) or whose
trajectory shows that the harness, not the agent, failed (``trajectory_needs_rerun``: the
environment died, an unknown error ended the agent, the tools timed out or hiccuped;
``summarize_rows`` skips both). An agent that runs out of time is not among them: SWE-agent
submits what it has ("Exit due to total execution time exceeded") and that submission is
scored — resolved if it passes, unresolved otherwise.

Harbor still runs the verifier after ``AgentTimeoutError`` and ``NonZeroAgentExitCodeError``,
so both trials have a reward. Read the release's way:

* ``AgentTimeoutError`` (the agent's time ran out): a pass, scored by the verifier's reward;
* ``NonZeroAgentExitCodeError`` (the agent's process failed — the release's "Exit due to
  unknown error"): left out, an *agent error*, its reward kept for the record only;
* any other exception, or no reward at all (the environment, the verifier or Harbor failed):
  left out, an *infra error*.

A try left out is stored with its reason (``models.ExcludedTry``) and counted on the
leaderboard beside the passes; it takes no pass number, so a model's first k passes are its
first k tries that count, as in the release.

A trial Harbor itself stopped before it ended (``CancelledError``: its worker died and the
guard stopped Harbor, or the run was cancelled) is no try at all: *interrupted*, stored
nowhere, made again by the run that takes the dead worker's over — as ``harbor jobs resume``
makes such trials again. Counting it as a try left out gave that pair one pass fewer than
asked.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass

# Exceptions after which the trial is a pass all the same, scored by the verifier.
COUNTED = frozenset({"AgentTimeoutError"})
# Exceptions that are the agent's own failure, not the harness's: left out all the same.
AGENT_ERRORS = frozenset({"NonZeroAgentExitCodeError"})
# What Harbor records on a trial it stopped itself (asyncio's cancellation).
INTERRUPTIONS = frozenset({"CancelledError"})
AGENT_ERROR = "agent_error"
INFRA_ERROR = "infra_error"
INTERRUPTED = "interrupted"  # no try: never stored, made again
WHY = {
    AGENT_ERROR: "the agent's process failed (the release's unknown error)",
    INFRA_ERROR: "the environment, the verifier or the harness failed (the release's infra_error)",
    INTERRUPTED: "Harbor was stopped before the trial ended (its worker died, or the run was "
    "cancelled); not a try, made again",
}
COUNTED_NOTE = (
    "The agent ran out of time ({kind}); scored on what it left, as the release scores a "
    "pass that reached its time limit."
)


@dataclass
class Exclusion:
    """A try the release leaves out: its trial, task and mode, why, and what it raised."""

    trial: str
    task_id: int
    mode: str
    reason: str  # AGENT_ERROR or INFRA_ERROR
    exception: str = ""  # Harbor's exception type, "" when the trial raised none
    message: str = ""
    reward: float | None = None  # what the verifier gave, which no figure reads

    def as_json(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Outcome:
    """What a trial's ``result.json`` says: its reward when it counts, else why it does not.
    ``exception`` names what it raised (a counted pass may have raised one too)."""

    reward: float | None
    exception: str = ""
    message: str = ""
    excluded: str = ""  # AGENT_ERROR, INFRA_ERROR or INTERRUPTED; "" when the trial is a pass

    @property
    def is_try(self) -> bool:
        """Whether the trial used one of the run's tries (a pass or a try left out)."""
        return self.excluded != INTERRUPTED

    @property
    def why(self) -> str:
        """Why a left-out try is left out, in one line (``stopped by <type>`` first, as
        what reads it expects)."""
        if not self.exception:
            return "the verifier gave no reward"
        detail = "no reward" if self.reward is None else f"its reward {self.reward:g} not counted"
        return f"stopped by {self.exception}, {detail}: {WHY[self.excluded]}"


def _number(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def trial_outcome(result: dict) -> Outcome:
    """How the release counts the trial whose ``result.json`` is ``result``."""
    info = result.get("exception_info")
    info = info if isinstance(info, dict) else ({"exception_type": "an exception"} if info else {})
    kind = str(info.get("exception_type") or ("an exception" if info else ""))[:200]
    message = str(info.get("exception_message") or "")[:2000]
    verifier = result.get("verifier_result")
    rewards = (verifier.get("rewards") if isinstance(verifier, dict) else None) or {}
    reward = _number(rewards.get("reward")) if isinstance(rewards, dict) else None
    if kind in INTERRUPTIONS:
        return Outcome(reward, kind, message, INTERRUPTED)
    if reward is None:
        excluded = AGENT_ERROR if kind in AGENT_ERRORS else INFRA_ERROR
        return Outcome(None, kind, message, excluded)
    if not kind or kind in COUNTED:
        return Outcome(reward, kind, message)
    return Outcome(reward, kind, message, AGENT_ERROR if kind in AGENT_ERRORS else INFRA_ERROR)


def exclusion_label(reason: str, exception: str) -> str:
    """How the leaderboard and the command name one kind of left-out try."""
    name = "agent error" if reason == AGENT_ERROR else "infra error"
    return f"{name} ({exception})" if exception else f"{name} (no reward)"


def exclusions_text(tries: Iterable[tuple[str, str]]) -> str:
    """Tries left out, each ``(reason, exception)``, as one sentence: how many and why ("" for
    none)."""
    counts = Counter(exclusion_label(reason, exception) for reason, exception in tries)
    total = sum(counts.values())
    if not total:
        return ""
    parts = ", ".join(f"{n} {label}" for label, n in sorted(counts.items(), key=_most_first))
    return (
        f"{total} tr{'y' if total == 1 else 'ies'} excluded, as the release leaves them out: "
        f"{parts}"
    )


def _most_first(item: tuple[str, int]) -> tuple[int, str]:
    label, n = item
    return -n, label
