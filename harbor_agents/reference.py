"""Reference agents: scripted, no model, so a lead validates a benchmark before paying for one.

Harbor's own ``oracle`` (runs ``solve.sh``) and ``nop`` (does nothing) are two of them; these
are the others, each a Harbor custom agent (``-a harbor_agents.reference:<Class>``):

- ``AsksEveryTrigger``: in ``ask_human`` mode asks each blocker's first trigger question over
  the task's ``ask_human`` command, then runs the oracle. A valid task scores reward 1 and
  Ask-F1 1 (every question resolves a blocker, every blocker is resolved). In the other modes
  it is the oracle.
- ``Spammer``: asks a fixed list of vague questions that name nothing of any task, then gives
  up. A valid benchmark answers none of them (0 resolutions) and scores 0.

There is no guesser. Whether a task's blockers can be guessed is what a model's baseline pass
rate measures (the ``pass_rate`` gate: mean baseline pass@k at most the policy's maximum, over
distinct models). A scripted agent has nothing to guess with: it could only submit a
solution it was given, and every solution a task folder carries is the oracle's, which
solves the task in every mode (its modes share one gold) whatever its blockers are. The one
that did ("submits the baseline mode's oracle") matched the oracle on every task and so could
never flag one whose blockers can be guessed.

Each agent finds its task from the environment it is given (``environment_dir`` is the mode
folder's ``environment/``), so one job can run many tasks. It leaves ``steps.json`` in its log
folder (the app's trajectory format: ``role``, ``content``, ``tool``, ``tool_input``,
``tool_output``), which the app reads with the trial.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from harbor.agents.base import BaseAgent
from harbor.agents.capabilities import AgentCapabilities
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext
from harbor.models.trial.paths import EnvironmentPaths

# Vague on purpose: nothing here names a table, a column, a function or a value of any task.
SPAM = (
    "Can you help me?",
    "What should I do?",
    "Is there anything I should know?",
    "Can you give me a hint?",
    "What is the answer?",
    "Am I on the right track?",
)
REGISTRIES = (
    "environment/sidecars/ask-human/blocker_registry.json",  # a task the app wrote
    "../shared/ask-human-data/blocker_registry.json",  # a task kept from the release
)


def mode_folder(environment: BaseEnvironment) -> Path:
    return Path(environment.environment_dir).resolve().parent


def registry(folder: Path) -> list[dict]:
    for relative in REGISTRIES:
        path = folder / relative
        if path.is_file():
            return json.loads(path.read_text()).get("blockers") or []
    return []


def first_trigger(blocker: dict) -> str | None:
    for key in ("example_questions", "trigger_questions", "acceptable_questions"):
        questions = blocker.get(key) or []
        if questions:
            return str(questions[0])
    return None


class ScriptedAgent(BaseAgent):
    """What the reference agents share: asking over ``ask_human``, running a solution, and
    the steps they leave for the app."""

    capabilities = AgentCapabilities(mcp_servers=True)

    def __init__(self, logs_dir: Path, **kwargs):
        kwargs.pop("mcp_servers", None)
        super().__init__(logs_dir=logs_dir, **kwargs)
        self.steps: list[dict] = []

    def version(self) -> str:
        return "1"

    async def setup(self, environment: BaseEnvironment) -> None:
        return

    async def ask(self, environment: BaseEnvironment, question: str) -> str:
        result = await environment.exec(f"ask_human {shlex.quote(question)}", timeout_sec=60)
        answer = (result.stdout or "").strip()
        self.steps.append(
            {"role": "assistant", "content": "", "tool": "ask_human",
             "tool_input": {"question": question}, "tool_output": answer}
        )  # fmt: skip
        return answer

    async def solve(self, environment: BaseEnvironment, solution: Path) -> int:
        paths = EnvironmentPaths.for_os(environment.os)
        await environment.upload_dir(solution, str(paths.solution_dir))
        command = f"bash {paths.solution_dir}/solve.sh"
        done = await environment.exec(command, timeout_sec=600)
        output = f"{done.stdout or ''}{done.stderr or ''}"[-4000:]
        self.steps.append(
            {"role": "assistant", "content": "", "tool": "bash", "tool_input": command,
             "tool_output": f"exit {done.return_code}\n{output}"}
        )  # fmt: skip
        return done.return_code

    def save(self, note: str) -> None:
        self.steps.insert(0, {"role": "assistant", "content": note})
        (self.logs_dir / "steps.json").write_text(json.dumps({"steps": self.steps}, indent=1))


class AsksEveryTrigger(ScriptedAgent):
    @staticmethod
    def name() -> str:
        return "hilbench-asks-every-trigger"

    async def run(
        self, instruction: str, environment: BaseEnvironment, context: AgentContext
    ) -> None:
        folder = mode_folder(environment)
        if folder.name == "ask_human":
            for blocker in registry(folder):
                question = first_trigger(blocker)
                if question:
                    await self.ask(environment, question)
        await self.solve(environment, folder / "solution")
        self.save("Asks each blocker's first trigger question, then runs the oracle.")


class Spammer(ScriptedAgent):
    @staticmethod
    def name() -> str:
        return "hilbench-spammer"

    async def run(
        self, instruction: str, environment: BaseEnvironment, context: AgentContext
    ) -> None:
        if mode_folder(environment).name == "ask_human":
            for question in SPAM:
                await self.ask(environment, question)
        self.save("Asks vague questions that name nothing of the task, then gives up.")
