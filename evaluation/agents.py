"""The agents a lead can run in Harbor from the Evaluation page.

Reference agents are scripted and need no model (``harbor_agents/reference.py`` and Harbor's
own ``oracle`` and ``nop``): what each shows of a valid benchmark is in ``expected``. A model
agent (Harbor's ``terminus-2``) needs a model endpoint.

No reference agent measures guessability: whether a task's blockers can be guessed is what a
model's baseline pass rate shows (the ``pass_rate`` gate), and a scripted agent has nothing to
guess with but the oracle's own solution, which always passes (``harbor_agents/reference.py``).
A run of the former ``guesser`` stays stored; it can no longer be started.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Agent:
    key: str
    harbor: str  # Harbor's -a value: a built-in name or a module:Class import path
    label: str
    expected: str  # what a valid task shows with this agent
    needs_model: bool = False
    # Harbor's --ak (agent keyword) values for every run of this agent.
    harbor_kwargs: tuple[str, ...] = ()

    @property
    def reference(self) -> bool:
        return not self.needs_model


AGENTS = {
    agent.key: agent
    for agent in (
        Agent("oracle", "oracle", "Oracle (runs solve.sh)", "reward 1 in every mode"),
        Agent("no-op", "nop", "No-op (does nothing)", "reward 0 in every mode"),
        Agent(
            "asks-every-trigger",
            "harbor_agents.reference:AsksEveryTrigger",
            "Asks every trigger, then solves",
            "reward 1; in ask_human every blocker resolved, Ask-F1 1",
        ),
        Agent(
            "spammer",
            "harbor_agents.reference:Spammer",
            "Spammer (vague questions, gives up)",
            "reward 0; no question resolves a blocker",
        ),
        Agent(
            "terminus-2",
            "terminus-2",
            "Terminus 2 (Harbor's agent, with a model endpoint)",
            "the model's own pass rates",
            needs_model=True,
            # No asciinema recording: the app never reads it, and a trial's container has no
            # network to install asciinema with, so terminus-2 spent 35-40 s of every trial's
            # setup on apt and pip fallbacks that could only fail.
            harbor_kwargs=("record_terminal_session=false",),
        ),
    )
}
REFERENCE_AGENTS = [a for a in AGENTS.values() if a.reference]
# What the reference agents leave to the models, where a lead chooses among them.
GUESSABILITY = (
    "The reference agents check each task itself (its verifier, its registry, the judge). "
    "Whether its blockers can be guessed is what a model's baseline pass rate measures: the "
    "pass-rate gate keeps a task only when the models' baseline pass@k stays low."
)
