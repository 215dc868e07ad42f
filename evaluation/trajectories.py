"""Trajectory files: what an agent did in one pass, step by step.

Two formats, both documented in the README:

* **JSON** (the HiL-Bench results layout, ``pass_<i>_trajectory.json``): an array of steps, or
  an object whose ``steps`` (or ``trajectory``) is that array;
* **JSONL**: one step per line.

A step is an object ``{role, content, tool, tool_input, tool_output, time}``; ``role`` is
required (text), ``content``/``tool``/``time`` are text (time may be a number), ``tool_input``
and ``tool_output`` any JSON. Other keys are dropped. Every problem names the file and the line
the step starts on, so a bad file can be fixed; ``TrajectoryError`` refuses the whole file.

Caps, per pass: at most ``MAX_STEPS`` steps and ``MAX_BYTES`` bytes, both as the file holds
them (never more than ``MAX_BYTES`` is read) and as the steps are stored (JSON). A trajectory
over a cap is refused with the reason, never cut. Reading is linear in the file's size: the
whole file is decoded once, and a line number is counted only for the step that is refused.
Whoever builds steps another way (Harbor's ATIF trajectories) calls ``steps_within_caps``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from .asks import step_questions

MAX_STEPS = 5000
MAX_BYTES = 50 * 1024 * 1024
STEP_KEYS = ("role", "content", "tool", "tool_input", "tool_output", "time")


class TrajectoryError(ValueError):
    """A trajectory file that cannot be read; the message names the file and line."""


def _line(text: str, position: int) -> int:
    return text.count("\n", 0, position) + 1


def _problem(value: object) -> str:
    """What is wrong with one step, or "" when nothing is."""
    if not isinstance(value, dict):
        return "a step must be a JSON object"
    role = value.get("role")
    if not isinstance(role, str) or not role.strip():
        return "the step has no role"
    for key in ("content", "tool"):
        if value.get(key) is not None and not isinstance(value[key], str):
            return f"{key} must be text"
    time = value.get("time")
    if time is not None and (isinstance(time, bool) or not isinstance(time, str | int | float)):
        return "time must be text or a number"
    if value.get("tool") == "ask_human":
        asked = value.get("tool_input")
        if isinstance(asked, dict):
            asked = asked.get("question")
        if not isinstance(asked, str) or not asked.strip():
            return "an ask_human step without a question"
    return ""


def _step(value: object, where: str) -> dict:
    problem = _problem(value)
    if problem:
        raise TrajectoryError(f"{where}: {problem}")
    return {key: value.get(key) for key in STEP_KEYS}


def _element_start(text: str, start: int, number: int, name: str) -> int:
    """Where the ``number``-th element of the array whose ``[`` is at ``start`` begins: one
    walk over the elements before it (only a refused step needs its line)."""
    position = start + 1
    for index in range(number):
        while position < len(text) and text[position] in " \t\r\n,":
            position += 1
        if position >= len(text) or text[position] == "]":
            raise TrajectoryError(f"{name} line {_line(text, position)}: the array never ends")
        if index == number - 1:
            return position
        try:
            position = _DECODER.raw_decode(text, position)[1]
        except json.JSONDecodeError as error:
            raise TrajectoryError(f"{name} line {error.lineno}: not JSON ({error.msg})") from None
    return position


def _array_steps(text: str, start: int, values: list, name: str) -> list[dict]:
    """The decoded array ``values`` (whose ``[`` is at ``start`` in ``text``) as steps."""
    if len(values) > MAX_STEPS:
        raise TrajectoryError(f"{name}: more than {MAX_STEPS} steps")
    steps = []
    for number, value in enumerate(values, start=1):
        problem = _problem(value)
        if problem:
            line = _line(text, _element_start(text, start, number, name))
            raise TrajectoryError(f"{name} line {line} (step {number}): {problem}")
        steps.append({key: value.get(key) for key in STEP_KEYS})
    return steps


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


_DECODER = json.JSONDecoder(parse_constant=_no_constant)


def _jsonl_steps(text: str, name: str) -> list[dict]:
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


def parse_trajectory_text(text: str, *, name: str, jsonl: bool) -> list[dict]:
    if "\x00" in text or "\\u0000" in text:
        line = _line(text, min(i for i in (text.find("\x00"), text.find("\\u0000")) if i >= 0))
        raise TrajectoryError(f"{name} line {line}: a NUL character (the database refuses it)")
    if jsonl:
        return _jsonl_steps(text, name)
    try:
        whole = _DECODER.decode(text)
    except json.JSONDecodeError as error:
        raise TrajectoryError(f"{name} line {error.lineno}: not JSON ({error.msg})") from None
    except ValueError as error:  # NaN / Infinity
        raise TrajectoryError(f"{name}: {error}") from None
    if isinstance(whole, list):
        return _array_steps(text, text.index("["), whole, name)
    key = ("steps" if "steps" in whole else "trajectory") if isinstance(whole, dict) else ""
    if key and isinstance(whole.get(key), list):
        # The array's ``[`` only places a refused step's line; the first key of that name in
        # the text is the top-level one unless a value before it nests the same name.
        match = re.search(rf'"{key}"\s*:\s*\[', text)
        return _array_steps(text, match.end() - 1 if match else 0, whole[key], name)
    raise TrajectoryError(f'{name} line 1: expected an array of steps or {{"steps": [...]}}')


def stored_size(steps: list[dict]) -> int:
    """The bytes ``steps`` take as the database stores them: Django's JSON encoding, whose
    ``ensure_ascii`` output has one byte a character."""
    return len(json.dumps(steps))


def steps_within_caps(steps: list[dict], *, name: str) -> list[dict]:
    """``steps`` when they fit a pass's caps (``MAX_STEPS``, ``MAX_BYTES`` as stored); else
    ``TrajectoryError`` naming ``name`` and the cap. For steps not read by
    ``read_trajectory`` (which checks both), such as Harbor's ATIF trajectories."""
    if len(steps) > MAX_STEPS:
        raise TrajectoryError(f"{name}: more than {MAX_STEPS} steps ({len(steps):,})")
    size = stored_size(steps)
    if size > MAX_BYTES:
        raise TrajectoryError(
            f"{name}: {size:,} bytes once stored as JSON, more than the {MAX_BYTES:,} a pass keeps"
        )
    return steps


def read_trajectory(path: Path, *, name: str | None = None) -> list[dict]:
    """The steps of the file at ``path``; never more than ``MAX_BYTES`` of it is read (the
    file may grow after its size was looked at)."""
    name = name or path.name
    if path.stat().st_size > MAX_BYTES:
        raise TrajectoryError(f"{name}: larger than {MAX_BYTES} bytes")
    with path.open("rb") as handle:
        data = handle.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise TrajectoryError(f"{name}: larger than {MAX_BYTES} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise TrajectoryError(f"{name}: not UTF-8 text ({error.reason})") from None
    del data
    steps = parse_trajectory_text(text, name=name, jsonl=path.suffix == ".jsonl")
    return steps_within_caps(steps, name=name)


def trajectory_questions(steps: list[dict]) -> list[dict]:
    """The pass's ask_human questions, in order: {text, time}; however the agent asked (the
    tool, or the command in a shell step: ``asks.step_questions``)."""
    return [
        {"text": text.strip(), "time": str(step.get("time") or "")[:40]}
        for step in steps
        for text in step_questions(step)
    ]


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
