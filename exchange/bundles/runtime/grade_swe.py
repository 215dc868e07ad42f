"""The SWE verifier: in the repository (``REPO``, default /app), apply the agent's changes if
they were collected as a patch, then the test patch, run the task's test command and read
its log with the task's parser (``logparsers.py``, the app's own). Reward 1 when every
FAIL_TO_PASS and PASS_TO_PASS test passes, else 0.

    python3 grade.py TESTS_JSON REWARD_FILE [AGENT_PATCH]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from logparsers import PASSING, lookup, parse_log


def _apply(repo: str, patch: Path, label: str) -> str | None:
    if not patch.is_file() or not patch.read_text().strip():
        return None
    done = subprocess.run(
        ["git", "apply", "--whitespace=nowarn", str(patch)], cwd=repo, capture_output=True,
        text=True,
    )  # fmt: skip
    return None if done.returncode == 0 else f"the {label} does not apply: {done.stderr[-500:]}"


def grade(spec: dict, repo: str, agent_patch: Path | None) -> tuple[int, str, str]:
    patches = ((agent_patch, "agent's patch"), (Path(spec["test_patch_file"]), "test patch"))
    for patch, label in patches:
        problem = _apply(repo, patch, label) if patch else None
        if problem:
            return 0, problem, ""
    run = subprocess.run(
        ["/bin/sh", "-c", spec["test_command"]], cwd=repo, capture_output=True, text=True,
        timeout=spec.get("timeout_s", 1800),
    )  # fmt: skip
    log = run.stdout + run.stderr
    statuses = parse_log(spec["log_parser"], log)
    wanted = list(dict.fromkeys(spec["fail_to_pass"] + spec["pass_to_pass"]))
    failing = [t for t in wanted if lookup(statuses, t) not in PASSING]
    if failing:
        return 0, f"{len(failing)} of {len(wanted)} tests do not pass: {failing[:5]}", log
    return 1, f"all {len(wanted)} FAIL_TO_PASS and PASS_TO_PASS tests pass", log


if __name__ == "__main__":
    spec = json.loads(Path(sys.argv[1]).read_text())
    reward = Path(sys.argv[2])
    agent = Path(sys.argv[3]) if len(sys.argv) > 3 else None
    value, why, log = grade(spec, os.environ.get("REPO", "/app"), agent)
    reward.parent.mkdir(parents=True, exist_ok=True)
    reward.write_text(f"{value}\n")
    reward.with_name("grade.json").write_text(json.dumps({"reward": value, "reason": why}))
    reward.with_name("test-output.log").write_text(log[-200_000:])
    print(f"reward {value}: {why}")
