"""A Harbor job folder holding one trial of Harbor's ``terminus-2`` in ``ask_human`` mode, as
Harbor writes it: ``result.json``, the agent's ATIF trajectory (``agent/trajectory.json``)
and the ask-human sidecar's log. terminus-2 asks by typing the task's ``ask_human`` command
into its terminal, so each question is a ``bash_command`` tool call whose ``keystrokes`` hold
``ask_human '…'`` — the shape of a run against the loopback stand-in model
(``tests/exchange/standin_model.py``, ``test_harbor_runs.py``), written here without Harbor."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

MODEL = "openai/standin"


def _turn(analysis: str, keystrokes: str | None, complete: bool = False) -> str:
    """What the stand-in model answers (terminus-2's JSON format); the step's message."""
    commands = [{"keystrokes": keystrokes + "\n", "duration": 3.0}] if keystrokes else []
    return json.dumps(
        {"analysis": analysis, "plan": analysis, "commands": commands, "task_complete": complete}
    )


def _agent_step(n: int, keystrokes: str | None, screen: str, *, complete: bool = False) -> dict:
    calls = []
    if keystrokes:
        calls.append(
            {
                "tool_call_id": f"call_{n}_1",
                "function_name": "bash_command",
                "arguments": {"keystrokes": keystrokes + "\n", "duration": 3.0},
            }
        )
    if complete:
        calls.append(
            {"tool_call_id": f"call_{n}_task_complete", "function_name": "mark_task_complete",
             "arguments": {}}
        )  # fmt: skip
    return {
        "step_id": n + 1,
        "timestamp": f"2026-12-02T10:00:{10 + n:02d}Z",
        "source": "agent",
        "model_name": MODEL,
        "message": _turn("Next step.", keystrokes, complete),
        "tool_calls": calls or None,
        "observation": {"results": [{"content": screen}]},
        "metrics": {"prompt_tokens": 100, "completion_tokens": 20},
    }


def terminus_trial(
    root: Path, *, source_id: str, asks: list[tuple[str, str]], gold_sql: str
) -> Path:
    """A jobs folder under ``root`` with one ask_human trial of ``source_id``'s task (a bundle
    folder ``sql_0`` beside it): terminus-2 asks each question of ``asks`` ((question,
    answer)) with the ``ask_human`` command, then submits ``gold_sql`` and says it is done.
    Returns the jobs folder, for ``import_results``."""
    task_folder = root / "bundle" / "sql_0"
    (task_folder / "annotate").mkdir(parents=True)
    (task_folder / "annotate" / "task.json").write_text(json.dumps({"source_id": source_id}))
    job = root / "jobs" / "2026-12-02__10-00-00"
    trial = job / "sql_0__ask_human__Ab3xYz"
    (trial / "agent").mkdir(parents=True)
    (job / "config.json").write_text("{}")
    (job / "job.log").write_text("")
    (job / "result.json").write_text(json.dumps({"id": "job", "stats": {}}))
    (trial / "config.json").write_text("{}")
    prompt = "root@task:/app# "
    steps = [
        {"step_id": 1, "timestamp": "2026-12-02T10:00:05Z", "source": "user",
         "message": "Answer the question with one SQL query. You may ask_human \"<question>\"."},
    ]  # fmt: skip
    for n, (question, answer) in enumerate(asks, start=1):
        typed = f"ask_human {shlex.quote(question)}"
        steps.append(_agent_step(n, typed, f"{prompt}{typed}\n{answer}\n{prompt}"))
    n = len(asks) + 1
    typed = f"submit_sql {shlex.quote(gold_sql)}"
    steps.append(_agent_step(n, typed, f"{prompt}{typed}\nSubmitted.\n{prompt}"))
    steps.append(_agent_step(n + 1, None, prompt, complete=True))
    (trial / "agent" / "trajectory.json").write_text(
        json.dumps(
            {
                "schema_version": "ATIF-v1.2",
                "session_id": "standin-session",
                "agent": {"name": "terminus-2", "version": "2.0.0", "model_name": MODEL},
                "steps": steps,
            },
            indent=2,
        )
    )
    log = trial / "artifacts" / "harbor_shared" / "ask_human_metrics.json"
    log.parent.mkdir(parents=True)
    log.write_text(
        json.dumps(
            {"questions": [{"question": q, "response": a, "blocker_name": None} for q, a in asks]}
        )
    )
    (trial / "result.json").write_text(
        json.dumps(
            {
                "trial_name": trial.name,
                "task_name": "sql_0__ask_human",
                "task_id": {"path": str(task_folder / "ask_human")},
                "agent_info": {
                    "name": "terminus-2",
                    "version": "2.0.0",
                    "model_info": {"name": "standin", "provider": "openai"},
                },
                "started_at": "2026-12-02T10:00:00Z",
                "finished_at": "2026-12-02T10:01:00Z",
                "exception_info": None,
                "verifier_result": {"rewards": {"reward": 1.0}},
            }
        )
    )
    return root / "jobs"
