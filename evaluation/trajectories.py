"""Trajectory files: what an agent did in one pass, step by step.

Two formats, both documented in the README:

* **JSON** (the HiL-Bench results layout, ``pass_<i>_trajectory.json``): an array of steps, or
  an object whose ``steps`` (or ``trajectory``) is that array;
* **JSONL**: one step per line.

A step is an object ``{role, content, tool, tool_input, tool_output, time}``; ``role`` is
required (text), ``content``/``tool``/``time`` are text (time may be a number), ``tool_input``
and ``tool_output`` any JSON. Other keys are dropped. Every problem names the file and the line
the step starts on, so a bad file can be fixed; ``TrajectoryError`` refuses the whole file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

MAX_STEPS = 5000
MAX_BYTES = 50 * 1024 * 1024
STEP_KEYS = ("role", "content", "tool", "tool_input", "tool_output", "time")
_STEPS_KEY = re.compile(r'"(?:steps|trajectory)"\s*:\s*\[')


class TrajectoryError(ValueError):
    """A trajectory file that cannot be read; the message names the file and line."""


def _line(text: str, position: int) -> int:
    return text.count("\n", 0, position) + 1


def _step(value: object, where: str) -> dict:
    if not isinstance(value, dict):
        raise TrajectoryError(f"{where}: a step must be a JSON object")
    role = value.get("role")
    if not isinstance(role, str) or not role.strip():
        raise TrajectoryError(f"{where}: the step has no role")
    for key in ("content", "tool"):
        if value.get(key) is not None and not isinstance(value[key], str):
            raise TrajectoryError(f"{where}: {key} must be text")
    time = value.get("time")
    if time is not None and (isinstance(time, bool) or not isinstance(time, str | int | float)):
        raise TrajectoryError(f"{where}: time must be text or a number")
    if value.get("tool") == "ask_human":
        asked = value.get("tool_input")
        if isinstance(asked, dict):
            asked = asked.get("question")
        if not isinstance(asked, str) or not asked.strip():
            raise TrajectoryError(f"{where}: an ask_human step without a question")
    return {key: value.get(key) for key in STEP_KEYS}


def _array_steps(text: str, start: int, name: str) -> list[dict]:
    """Decode the array whose ``[`` is at ``start`` element by element, keeping lines."""
    decoder = _DECODER
    steps: list[dict] = []
    position = start + 1
    while True:
        while position < len(text) and text[position] in " \t\r\n,":
            position += 1
        if position >= len(text):
            raise TrajectoryError(f"{name} line {_line(text, position)}: the array never ends")
        if text[position] == "]":
            return steps
        try:
            value, end = decoder.raw_decode(text, position)
        except json.JSONDecodeError as error:
            raise TrajectoryError(f"{name} line {error.lineno}: not JSON ({error.msg})") from None
        where = f"{name} line {_line(text, position)} (step {len(steps) + 1})"
        steps.append(_step(value, where))
        if len(steps) > MAX_STEPS:
            raise TrajectoryError(f"{name}: more than {MAX_STEPS} steps")
        position = end


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


_DECODER = json.JSONDecoder(parse_constant=_no_constant)


def parse_trajectory_text(text: str, *, name: str, jsonl: bool) -> list[dict]:
    if "\x00" in text or "\\u0000" in text:
        line = _line(text, min(i for i in (text.find("\x00"), text.find("\\u0000")) if i >= 0))
        raise TrajectoryError(f"{name} line {line}: a NUL character (the database refuses it)")
    if jsonl:
        steps = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            where = f"{name} line {number}"
            try:
                value = _DECODER.decode(line)
            except ValueError as error:
                raise TrajectoryError(f"{where}: not JSON ({error})") from None
            steps.append(_step(value, f"{where} (step {len(steps) + 1})"))
            if len(steps) > MAX_STEPS:
                raise TrajectoryError(f"{name}: more than {MAX_STEPS} steps")
        return steps
    try:
        whole = _DECODER.decode(text)
    except json.JSONDecodeError as error:
        raise TrajectoryError(f"{name} line {error.lineno}: not JSON ({error.msg})") from None
    except ValueError as error:  # NaN / Infinity
        raise TrajectoryError(f"{name}: {error}") from None
    if isinstance(whole, list):
        return _array_steps(text, text.index("["), name)
    if isinstance(whole, dict):
        match = _STEPS_KEY.search(text)
        if match and isinstance(whole.get("steps", whole.get("trajectory")), list):
            return _array_steps(text, match.end() - 1, name)
    raise TrajectoryError(f'{name} line 1: expected an array of steps or {{"steps": [...]}}')


def read_trajectory(path: Path, *, name: str | None = None) -> list[dict]:
    name = name or path.name
    if path.stat().st_size > MAX_BYTES:
        raise TrajectoryError(f"{name}: larger than {MAX_BYTES} bytes")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise TrajectoryError(f"{name}: not UTF-8 text ({error.reason})") from None
    return parse_trajectory_text(text, name=name, jsonl=path.suffix == ".jsonl")


def trajectory_questions(steps: list[dict]) -> list[dict]:
    """The pass's ask_human questions, in order: {text, time}."""
    questions = []
    for step in steps:
        if step.get("tool") != "ask_human":
            continue
        asked = step.get("tool_input")
        if isinstance(asked, dict):
            asked = asked.get("question")
        questions.append({"text": str(asked).strip(), "time": str(step.get("time") or "")[:40]})
    return questions


def find_trajectory(base: Path, *, mode: str, model: str, task: str, index: int) -> Path | None:
    """The pass's trajectory file inside ``base``, if there is one. Model and task names come
    from the CSV: a name that would lead outside the folder (``..``, ``/``) finds nothing."""
    root = (base / "trajectories").resolve()
    folder = root / mode / model / task
    for suffix in (".json", ".jsonl"):
        path = (folder / f"pass_{index}_trajectory{suffix}").resolve()
        if path.is_relative_to(root) and not path.is_symlink() and path.is_file():
            return path
    return None
