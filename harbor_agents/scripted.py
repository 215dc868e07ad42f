"""Scripted agents for proving a bundle in a real trial.

``AskThenOracle`` asks the questions it is given over the task's ``ask_human`` command (the
MCP client the bundle installs in the agent's container, which calls the ask-human sidecar),
probes the trial's network from inside the agent's container, records both in its log folder
(``answers.json``, ``network.json``), then runs the task's ``solve.sh`` as Harbor's oracle
does. Arguments (``--ak``): ``task_dir`` (the mode folder: its ``solution/``), ``questions``
(a JSON list), ``probes`` (``host:port`` targets that must not answer).
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext

from .reference import ScriptedAgent

PROBE = """
import json, socket, sys
out = {}
for target in sys.argv[1:]:
    host, port = target.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=4).close()
        out[target] = "connected"
    except OSError as exc:
        out[target] = f"refused: {type(exc).__name__}: {exc}"
print(json.dumps(out))
"""


class AskThenOracle(ScriptedAgent):
    def __init__(self, logs_dir: Path, task_dir: str = "", questions=(), probes=(), **kwargs):
        super().__init__(logs_dir=logs_dir, **kwargs)
        self.task_dir = Path(task_dir)
        self.questions = list(questions or [])
        self.probes = list(probes or [])

    @staticmethod
    def name() -> str:
        return "hilbench-ask-then-oracle"

    async def run(
        self, instruction: str, environment: BaseEnvironment, context: AgentContext
    ) -> None:
        answers = [
            {"question": question, "answer": await self.ask(environment, question)}
            for question in self.questions
        ]
        (self.logs_dir / "answers.json").write_text(json.dumps(answers, indent=1))
        if self.probes:
            command = (
                "python3 -c "
                + shlex.quote(PROBE)
                + " "
                + " ".join(shlex.quote(p) for p in self.probes)
            )
            result = await environment.exec(command, timeout_sec=120)
            (self.logs_dir / "network.json").write_text(
                (result.stdout or "").strip() or json.dumps({"error": result.stderr})
            )
        await self.solve(environment, self.task_dir / "solution")
        (self.logs_dir / "solve.txt").write_text(self.steps[-1]["tool_output"])
        self.save("Asks the questions it was given, probes the network, runs the oracle.")
