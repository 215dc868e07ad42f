"""Reading the trials of Harbor jobs (``harbor run -o <folder>``) as passes.

A Harbor job folder holds one folder per trial with its ``result.json``: the agent
(``agent_info``: name, and the model when it has one), the task's mode folder
(``task_id.path``), the reward (``verifier_result.rewards.reward``) or the exception that
stopped it, and when it started. In ``ask_human`` mode the task's ask-human sidecar leaves its
log, ``ask_human_metrics.json`` (every question and what it answered), among the trial's
artifacts (``artifacts/harbor_shared/``, as the bundle's ``task.toml`` declares).

Each trial the release would score is one pass (``tries.py``: one that ran out of time is
scored on what it left; one whose agent process failed, or whose environment, verifier or
Harbor did, is a try left out, stored with why): the task is read from the exported folder
beside its mode (``annotate/task.json``: source id), or else its folder's name; the model is
the agent's model, or the agent's name for an agent without one (the project's reference
agents); the pass number counts the passes of the same model, task and mode in the order they
started. The revision the trial ran on is the one the folder was exported from
(``provenance/validation.json``); the import judges the questions against it, never against
what the task became since. The questions are the ask log's texts, every one of them (a blank
one is a call that matched nothing, as the release counts it): the app judges them itself when
it stores the pass (as it does for every imported run), so its Ask-F1 is its own reading of
the log, on the same revision; the sidecar's own verdicts ride along in the pass's detail
(``sidecar_verdicts``), and the store says where the two differ.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from hilbench_annotate.errors import ImportRefused
from hilbench_annotate.toolkit.jsontext import json_loads
from hilbench_annotate.toolkit.safefiles import UnsafeFile, read_regular

from .results import MODES, PassRecord, TaskResolver, _questions
from .trajectories import (
    MAX_BYTES,
    TrajectoryError,
    parse_trajectory_text,
    steps_within_caps,
)
from .tries import COUNTED_NOTE, Exclusion, exclusions_text, trial_outcome

ASK_LOG = "ask_human_metrics.json"
ASK_LOG_PATH = f"artifacts/harbor_shared/{ASK_LOG}"
PROVENANCE = "provenance/validation.json"  # beside an exported task's mode folders
# What reading one trial may raise: task code wrote its files, so any shape may be there; a
# trial that cannot be read is reported, and the others are read all the same.
UNREADABLE = (ValueError, OSError, TypeError, AttributeError, KeyError, RecursionError)
MAX_RESULT_BYTES = 4 << 20
# What the project's Harbor environment lists when it replaced a link, pipe or device a trial
# left in its log folders (harbor_agents/environments.py): such a trial is not a pass.
NEUTRALISED = "hilbench-neutralised.json"


@dataclass
class HarborTrials:
    """model -> its passes; model -> its tries the release leaves out; and every trial that
    is not a pass (name, why)."""

    by_model: dict[str, list[PassRecord]] = field(default_factory=dict)
    excluded: dict[str, list[Exclusion]] = field(default_factory=dict)
    skipped: list[tuple[str, str]] = field(default_factory=list)


def trial_results(root: Path) -> list[Path]:
    """The trials' ``result.json`` under ``root`` (a jobs folder or one job), in order."""
    found = []
    for depth in ("*/result.json", "*/*/result.json"):
        for path in sorted(Path(root).glob(depth)):
            trial = path.parent  # a job's own folder has its result.json too, and job.log
            plain = path.is_file() and not path.is_symlink()
            if plain and (trial / "config.json").is_file() and not (trial / "job.log").exists():
                found.append(path)
    return found


def is_harbor_jobs(root: Path) -> bool:
    return bool(trial_results(root))


def _read(trial: Path, relative: str, limit: int = MAX_RESULT_BYTES) -> dict:
    """A JSON object the trial left at ``relative``: read without following a link, at most
    ``limit`` bytes (``UnsafeFile``, a ValueError, otherwise)."""
    value = json_loads(read_regular(trial, relative, max_bytes=limit))
    if not isinstance(value, dict):
        raise ValueError(f"{relative} is not a JSON object")
    return value


def _model(result: dict) -> str:
    agent = result.get("agent_info") or {}
    info = agent.get("model_info") or {}
    name = info.get("name") if isinstance(info, dict) else None
    if name:
        provider = info.get("provider")
        return f"{provider}/{name}" if provider else str(name)
    return str(agent.get("name") or "unknown agent")


def _task_reference(mode_folder: Path, task_name: str) -> str:
    annotate = mode_folder.parent / "annotate" / "task.json"
    if annotate.is_file():
        source_id = json_loads(annotate.read_bytes()).get("source_id")
        if source_id:
            return str(source_id)
    if mode_folder.parent.name:
        return mode_folder.parent.name
    return task_name


def _revision(mode_folder: Path) -> int | None:
    """The revision number the task's folder was exported from, or None for a folder the app
    did not write (a release's own task folder)."""
    path = mode_folder.parent / PROVENANCE
    if not path.is_file():
        return None
    number = json_loads(path.read_bytes()).get("revision")
    if isinstance(number, bool) or not isinstance(number, int) or number < 1:
        raise ValueError(f"{PROVENANCE} names no revision")
    return number


def _mode(mode_folder: Path, task_name: str) -> str:
    if mode_folder.name in MODES:
        return mode_folder.name
    return next((m for m in MODES if task_name.endswith(f"-{m}")), "")


def _ask_log(trial: Path) -> tuple[list[dict], list[str | None]]:
    """The questions of the trial's ask-human log, and the blocker the sidecar matched to
    each (None: none): the ask-human sidecar's own file, which Harbor collects from that
    container (``artifacts/harbor_shared/``); never a copy the agent left among its own
    artifacts (``artifacts/logs/artifacts/``).

    Every logged call is a question, a blank one too: the release's ``compute_hil_metrics``
    counts each entry of the log in precision's denominator, so an agent that sends empty
    questions pays for them here as there (the store logs a blank one as a rejected call).
    A text that is not a string is read as blank."""
    try:
        log = _read(trial, ASK_LOG_PATH)
    except FileNotFoundError:
        return [], []
    questions = log.get("questions")
    if not isinstance(questions, list):
        raise ValueError(f"{ASK_LOG_PATH}: questions is not a list")
    entries = [q for q in questions if isinstance(q, dict)]
    texts = [{"text": _text(q.get("question")), "time": q.get("time", "")} for q in entries]
    matched = [q.get("blocker_name") for q in entries]
    return texts, [m[:120] if isinstance(m, str) and m else None for m in matched]


def _text(value) -> str:
    return value if isinstance(value, str) else ""


@dataclass
class Trial:
    """One trial read: its pass (``record``, index 0 until numbered), or why it is none."""

    name: str
    model: str
    started: str
    record: PassRecord | None
    skipped: str = ""
    excluded: Exclusion | None = None  # a try the release leaves out (``skipped`` says why)


def _steps(trial: Path) -> tuple[list[dict] | None, str]:
    """The agent's steps: the app's format (``agent/steps.json``, the reference agents'), or
    Harbor's ATIF trajectory (``agent/trajectory.json``, terminus-2's) turned into it. Read
    without following a link, within the trajectory caps."""
    own = "agent/steps.json"
    if (trial / own).exists() or (trial / own).is_symlink():
        raw = read_regular(trial, own, max_bytes=MAX_BYTES)
        name = f"{trial.name}/{own}"
        try:
            json_loads(raw)  # its nesting checked first: the parser below recurses
        except ValueError as error:
            raise TrajectoryError(f"{name}: not JSON ({error})") from None
        steps = parse_trajectory_text(raw.decode("utf-8", "replace"), name=name, jsonl=False)
        return steps_within_caps(steps, name=name), own
    atif = "agent/trajectory.json"
    if not ((trial / atif).exists() or (trial / atif).is_symlink()):
        return None, ""
    document = _read(trial, atif, MAX_BYTES)
    raw = document.get("steps") or []
    if not isinstance(raw, list):
        raise TrajectoryError(f"{trial.name}/{atif}: steps is not a list")
    steps = [app for step in raw if isinstance(step, dict) for app in _atif_steps(step)]
    return steps_within_caps(steps, name=f"{trial.name}/{atif}"), atif


def _listed(value) -> list:
    return value if isinstance(value, list) else []


def _atif_steps(step: dict) -> list[dict]:
    """One ATIF step as the app's steps, one per tool call in order — terminus-2 types several
    commands in one turn, and any of them may be ``ask_human`` — with the step's message on
    the first. A result naming its call (``source_call_id``) goes with that call; the others
    (terminus-2's one terminal screen after the turn) with the last. Whatever a field holds,
    never an exception."""
    calls = [c for c in _listed(step.get("tool_calls")) if isinstance(c, dict)] or [{}]
    observation = step.get("observation")
    results = _listed(observation.get("results")) if isinstance(observation, dict) else []
    ids = [c.get("tool_call_id") for c in calls]
    outputs: list[list[str]] = [[] for _ in calls]
    for result in results:
        if not isinstance(result, dict):
            continue
        source = result.get("source_call_id")
        at = ids.index(source) if isinstance(source, str) and source in ids else len(calls) - 1
        outputs[at].append(str(result.get("content", "")))
    message = step.get("message")
    content = message if isinstance(message, str) else json.dumps(message)[:100_000]
    time = step.get("timestamp") if isinstance(step.get("timestamp"), str) else None
    role = str(step.get("source") or "agent")
    return [
        {
            "role": role,
            "content": content if n == 0 else None,
            "tool": _text(call.get("function_name")) or None,
            "tool_input": call.get("arguments"),
            "tool_output": "\n".join(output) or None,
            "time": time,
        }
        for n, (call, output) in enumerate(zip(calls, outputs, strict=True))
    ]


def _tampering(trial: Path) -> str:
    """Why the trial cannot count, if it left links, pipes or devices in its log folders."""
    try:
        raw = read_regular(trial, NEUTRALISED, max_bytes=MAX_RESULT_BYTES)
        entries = json_loads(raw)
    except FileNotFoundError:
        return ""
    except (UnsafeFile, ValueError, OSError):
        return f"its {NEUTRALISED} cannot be read"
    if not isinstance(entries, list) or not entries:
        return ""
    first = entries[0] if isinstance(entries[0], dict) else {}
    where = str(first.get("path", "?")).rsplit("/", 2)[-2:]
    target = f" to {str(first.get('target'))[:200]}" if first.get("target") else ""
    return (
        f"it left {len(entries)} link(s), pipe(s) or device(s) in its log folders "
        f"({'/'.join(where)} was {first.get('was', '?')}{target}); removed unread, "
        "and a trial that does so is not scored"
    )


def read_trial(path: Path, resolve: TaskResolver) -> Trial:
    """The trial whose ``result.json`` is ``path``: a pass, or a try the release leaves out
    (``tries.trial_outcome``); ValueError when it cannot be read or its task is not the
    project's."""
    trial = path.parent
    result = _read(trial, path.name)
    task_name = str(result.get("task_name") or "")
    folder = Path(str((result.get("task_id") or {}).get("path") or ""))
    if folder.is_symlink():  # a dataset of links to the bundle's mode folders
        folder = folder.resolve()
    mode = _mode(folder, task_name)
    if not mode:
        raise ValueError(f"cannot tell the mode of task {task_name!r}")
    reference = _task_reference(folder, task_name)
    task_id = resolve(reference)
    if task_id is None:
        raise ValueError(f"the project has no task {reference!r}")
    model, started = _model(result), str(result.get("started_at") or "")
    outcome = trial_outcome(result)
    if not outcome.is_try:  # stopped by Harbor before it ended: stored nowhere, made again
        return Trial(trial.name, model, started, None, outcome.why)
    if outcome.excluded:
        excluded = Exclusion(
            trial=trial.name, task_id=task_id, mode=mode, reason=outcome.excluded,
            exception=outcome.exception, message=outcome.message, reward=outcome.reward,
        )  # fmt: skip
        return Trial(trial.name, model, started, None, outcome.why, excluded)
    record = _pass_record(trial, result, outcome, task_id=task_id, mode=mode)
    record.revision = _revision(folder)
    return Trial(trial.name, model, started, record)


def _pass_record(trial: Path, result: dict, outcome, *, task_id: int, mode: str) -> PassRecord:
    """The pass of a trial the release scores: what it left read unless it tampered."""
    rewards = (result.get("verifier_result") or {}).get("rewards") or {}
    detail = {
        "trial": trial.name,
        "reward": outcome.reward,
        "seconds": _seconds(result),
        "agent": (result.get("agent_info") or {}).get("name"),
    }
    if len(rewards) > 1:  # the run's verifier: the generated one's and the folder's own
        detail["rewards"] = {k: v for k, v in rewards.items() if isinstance(v, int | float)}
    if outcome.exception:  # one the release scores all the same (the agent's time ran out)
        detail["agent_exception"] = {"type": outcome.exception, "message": outcome.message[:500]}
    error = _tampering(trial)
    steps, steps_file, questions, matched = None, "", [], []
    try:
        if not error:  # what a tampered trial left is not read at all
            steps, steps_file = _steps(trial)
            questions, matched = _ask_log(trial)
    except (UnsafeFile, TrajectoryError) as problem:
        error = f"what it left cannot be read: {problem}"
    if error:
        detail["failed"] = error
    if any(matched):
        detail["sidecar_verdicts"] = matched
    note = COUNTED_NOTE.format(kind=outcome.exception) if outcome.exception else ""
    return PassRecord(
        task_id=task_id,
        mode=mode,
        index=0,
        resolved=outcome.reward >= 1 and not error,
        questions=_questions(questions or None, mode, blank_ok=True),
        trajectory=None if error else steps,
        trajectory_file=f"harbor trial {trial.name}: {steps_file}" if steps and not error else "",
        detail=detail,
        error=f"The trial is not scored: {error}." if error else note,
    )


def _seconds(result: dict) -> float | None:
    start, end = result.get("started_at"), result.get("finished_at")
    try:
        return round(
            (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds(), 1
        )
    except (TypeError, ValueError):
        return None


def parse_harbor_jobs(root: Path, resolve: TaskResolver) -> HarborTrials:
    """The passes of every finished trial under ``root``; ``ImportRefused`` naming each
    trial that cannot be read or whose task the project does not have."""
    out = HarborTrials()
    problems: list[tuple[str, str]] = []
    started: list[Trial] = []
    for path in trial_results(root):
        try:
            trial = read_trial(path, resolve)
        except UNREADABLE as error:
            problems.append((path.parent.name, str(error)))
            continue
        if trial.record is None:
            out.skipped.append((trial.name, trial.skipped))
            if trial.excluded is not None:
                out.excluded.setdefault(trial.model, []).append(trial.excluded)
        else:
            started.append(trial)
    if problems:
        raise ImportRefused(
            f"{Path(root).name}: {len(problems)} trial(s) cannot be read; nothing was imported",
            problems,
        )
    counts: dict[tuple, int] = {}
    for trial in sorted(started, key=lambda t: t.started):
        record = trial.record
        key = (trial.model, record.task_id, record.mode)
        counts[key] = record.index = counts.get(key, 0) + 1
        out.by_model.setdefault(trial.model, []).append(record)
    return out


def summary(trials: HarborTrials) -> str:
    passes = sum(len(r) for r in trials.by_model.values())
    text = f"{passes} trial(s) read"
    excluded = exclusions_text(
        (e.reason, e.exception) for tries in trials.excluded.values() for e in tries
    )
    if excluded:
        text += f"; {excluded}"
    if trials.skipped:
        text += f"; {len(trials.skipped)} not a pass: " + ", ".join(
            f"{name} ({why})" for name, why in trials.skipped[:5]
        )
    return text


__all__ = ["UNREADABLE", "HarborTrials", "is_harbor_jobs", "parse_harbor_jobs", "summary"]
