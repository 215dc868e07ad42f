"""Reading model-run results from any harness, validated before anything is stored.

Two formats:

* **JSONL**, one pass per line:
  ``{"task": …, "mode": "baseline|full_info|ask_human", "pass": 1, "resolved": true,
  "questions": [{"text": …, "time": …}], "tokens": 123, "cost": 0.01}``; ``questions``,
  ``tokens`` and ``cost`` are optional (questions only in ``ask_human`` mode). ``task`` is the
  task's source id in the project (``sql_3``, ``financial/123``…) or its numeric id.
* **A HiL-Bench results folder**: ``pass_level_metrics.csv`` with the columns ``model``,
  ``task``, ``mode`` (or ``condition``), ``pass`` (or ``pass_idx``) and ``resolved`` (or
  ``passed`` / ``success`` / ``reward``), optionally ``tokens`` and ``cost``; each pass's
  trajectory, when present, is ``trajectories/<mode>/<model>/<task>/pass_<i>_trajectory.json``
  (or ``.jsonl``, see ``trajectories.py``), and an ``ask_human`` pass's questions are its
  steps whose ``tool`` is ``ask_human`` (the question is ``tool_input``, a string or
  ``{"question": …}``). A malformed trajectory refuses the import, naming file and line.

Every problem is collected with its line (or file) before anything is refused, so one upload
shows every mistake; a file with any problem imports nothing (``ImportRefused``).
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from hilbench_annotate.errors import ImportRefused
from hilbench_annotate.toolkit.jsontext import json_loads

from .trajectories import find_trajectory, read_trajectory, trajectory_questions

MODES = ("baseline", "full_info", "ask_human")
MAX_QUESTION_CHARS = 4000
MAX_COUNT = 2_000_000_000  # tokens and cost fit the database's integer and float columns
_TRUE = {"1", "1.0", "true", "yes", "pass", "passed", "resolved"}
_FALSE = {"0", "0.0", "false", "no", "fail", "failed", "unresolved", ""}


@dataclass
class PassRecord:
    task_id: int
    mode: str
    index: int
    resolved: bool
    questions: list[dict] = field(default_factory=list)  # {"text", "time"}
    tokens: int | None = None
    cost: float | None = None
    trajectory: list[dict] | None = None  # steps, when the harness sent them
    trajectory_file: str = ""
    detail: dict = field(default_factory=dict)  # where it came from (a Harbor trial's name…)
    error: str = ""  # why the pass failed without a verdict on the agent (a tampered trial)
    # The revision the pass ran on: its number as the harness's folder names it (a bundle's
    # provenance), and the revision's id once the import pins it; the questions are judged
    # against it, never against what the task became since.
    revision: int | None = None
    revision_id: int | None = None

    def as_json(self) -> dict:
        return {
            "task_id": self.task_id,
            "mode": self.mode,
            "index": self.index,
            "resolved": self.resolved,
            "questions": self.questions,
            "tokens": self.tokens,
            "cost": self.cost,
            "trajectory": self.trajectory,
            "trajectory_file": self.trajectory_file,
            "detail": self.detail,
            "error": self.error,
            "revision": self.revision,
            "revision_id": self.revision_id,
        }


# task reference (as written in the file) -> task id, or None when the project has no such task
TaskResolver = Callable[[str], int | None]


def _questions(value: object, mode: str, *, blank_ok: bool = False) -> list[dict]:
    """A pass's questions as ``{text, time}``. ``blank_ok``: a blank text is a call that was
    made (a harness's own ask log, which the release counts whole), kept as ``""``; otherwise
    a question without text is refused."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError("questions must be a list of {text, time}")
    if value and mode != "ask_human":
        raise ValueError(f"a {mode} pass cannot have questions (only ask_human has the tool)")
    out = []
    for n, item in enumerate(value, start=1):
        if isinstance(item, str):
            item = {"text": item}
        if not isinstance(item, dict):
            raise ValueError(f"question {n} is neither text nor an object")
        text = item.get("text")
        if not isinstance(text, str) or not (text.strip() or blank_ok):
            raise ValueError(f"question {n} has no text")
        if len(text) > MAX_QUESTION_CHARS:
            raise ValueError(f"question {n} is longer than {MAX_QUESTION_CHARS} characters")
        time = item.get("time", "")
        if not isinstance(time, str | int | float) or isinstance(time, bool):
            raise ValueError(f"question {n} has a time that is neither text nor a number")
        out.append({"text": text.strip(), "time": str(time)[:40]})
    return out


def _bool(value: object, name: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise ValueError(f"{name} must be true or false, not {value!r}")


def _count(value: object, name: str, *, number: type = int) -> int | float | None:
    if value is None or value == "":
        return None
    try:
        parsed = number(value) if not isinstance(value, bool) else None
    except (TypeError, ValueError):
        parsed = None
    if parsed is None or not 0 <= parsed <= MAX_COUNT:  # also refuses NaN
        raise ValueError(f"{name} must be a number from 0 to {MAX_COUNT}, not {value!r}")
    return parsed


def _record(data: dict, resolve: TaskResolver) -> PassRecord:
    unknown = sorted(
        set(data) - {"task", "mode", "pass", "resolved", "questions", "tokens", "cost"}
    )
    if unknown:
        raise ValueError(f"unknown field(s) {', '.join(unknown)}")
    for key in ("task", "mode", "pass", "resolved"):
        if key not in data:
            raise ValueError(f"missing {key}")
    task_id = resolve(str(data["task"]))
    if task_id is None:
        raise ValueError(f"the project has no task {data['task']!r}")
    mode = data["mode"]
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    index = data["pass"]
    if isinstance(index, str) and index.strip().isdigit():
        index = int(index)
    if not isinstance(index, int) or isinstance(index, bool) or not 1 <= index <= 100:
        raise ValueError(f"pass must be a whole number from 1 to 100, not {data['pass']!r}")
    return PassRecord(
        task_id=task_id,
        mode=mode,
        index=index,
        resolved=_bool(data["resolved"], "resolved"),
        questions=_questions(data.get("questions"), mode),
        tokens=_count(data.get("tokens"), "tokens"),
        cost=_count(data.get("cost"), "cost", number=float),
    )


def _refuse_problems(records: list[tuple[object, PassRecord]], problems: list) -> None:
    seen: dict[tuple, object] = {}
    for where, record in records:
        key = (record.task_id, record.mode, record.index)
        if key in seen:
            problems.append((where, f"the same task, mode and pass as {seen[key]}"))
        seen.setdefault(key, where)


def _json_lines(
    lines: Iterable[str], parse: Callable[[dict, str], object], *, name: str, what: str
) -> list:
    """``parse(object, where)`` for each non-empty line, which must be a JSON object; every
    problem is collected with its line, and any problem refuses the whole file."""
    records, problems = [], []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"line {number}"
        try:
            data = json_loads(line)
        except ValueError as error:
            problems.append((where, f"not JSON ({error.args[0]})"))
            continue
        if not isinstance(data, dict):
            problems.append((where, "not a JSON object"))
            continue
        try:
            records.append(parse(data, where))
        except ValueError as error:
            problems.append((where, str(error)))
    if problems:
        raise ImportRefused(f"{name}: {len(problems)} bad line(s); nothing was imported", problems)
    if not records:
        raise ImportRefused(f"{name}: no {what} in the file; nothing was imported", [])
    return records


def parse_jsonl(lines: Iterable[str], resolve: TaskResolver, *, name: str) -> list[PassRecord]:
    seen: dict[tuple, str] = {}

    def parse(data: dict, where: str) -> PassRecord:
        record = _record(data, resolve)
        key = (record.task_id, record.mode, record.index)
        if key in seen:
            raise ValueError(f"the same task, mode and pass as {seen[key]}")
        seen[key] = where
        return record

    return _json_lines(lines, parse, name=name, what="results")


def _column(row: dict, *names: str) -> object:
    for name in names:
        if name in row:
            return row[name]
    return None


def _csv_rows(path: Path) -> list[tuple[int, dict]]:
    """(line number, row) of a CSV file; ValueError naming the problem if unreadable."""
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            return list(enumerate(csv.DictReader(handle), start=2))
    except UnicodeDecodeError as error:
        raise ValueError(f"is not UTF-8 text ({error.reason} at byte {error.start})") from None
    except csv.Error as error:
        raise ValueError(f"is not readable CSV ({error})") from None


def parse_results_folder(root: Path, resolve: TaskResolver) -> dict[str, list[PassRecord]]:
    """model -> its passes, from a HiL-Bench results folder."""
    csv_path = next(iter(sorted(root.rglob("pass_level_metrics.csv"))), None)
    if csv_path is None:
        raise ImportRefused(f"{root.name}: no pass_level_metrics.csv in the folder", [])
    base = csv_path.parent
    problems: list[tuple[object, str]] = []
    by_model: dict[str, list[tuple[object, PassRecord]]] = {}
    try:
        rows = _csv_rows(csv_path)
    except ValueError as error:
        raise ImportRefused(f"{root.name}: pass_level_metrics.csv {error}", []) from None
    for number, row in rows:
        where = f"pass_level_metrics.csv line {number}"
        model = (row.get("model") or "").strip()
        data = {
            "task": _column(row, "task", "task_name", "task_id"),
            "mode": _column(row, "mode", "condition"),
            "pass": _column(row, "pass", "pass_idx", "pass_index"),
            "resolved": _column(row, "resolved", "passed", "success", "reward"),
            "tokens": _column(row, "tokens", "total_tokens"),
            "cost": _column(row, "cost"),
        }
        data = {k: v for k, v in data.items() if v is not None}
        try:
            if not model:
                raise ValueError("missing model")
            record = _record(data, resolve)
            path = find_trajectory(
                base, mode=record.mode, model=model, task=str(data["task"]), index=record.index
            )
            if path is not None:
                name = str(path.relative_to(base))
                record.trajectory = read_trajectory(path, name=name)
                record.trajectory_file = name
                record.questions = _questions(trajectory_questions(record.trajectory), record.mode)
        except ValueError as error:
            problems.append((where, str(error)))
            continue
        by_model.setdefault(model, []).append((where, record))
    for records in by_model.values():
        _refuse_problems(records, problems)
    if problems:
        raise ImportRefused(
            f"{root.name}: {len(problems)} bad row(s); nothing was imported", problems
        )
    if not by_model:
        raise ImportRefused(f"{root.name}: pass_level_metrics.csv has no rows", [])
    return {model: [r for _, r in records] for model, records in by_model.items()}


SUPPORT_FIELDS = ("task", "score", "correct", "correct_with_support")


def parse_support_jsonl(lines: Iterable[str], resolve: TaskResolver, *, name: str) -> list[dict]:
    """``{task, score, correct, correct_with_support}`` per line; one record per task."""
    seen: dict[int, str] = {}

    def parse(data: dict, where: str) -> dict:
        unknown = sorted(set(data) - set(SUPPORT_FIELDS))
        if unknown:
            raise ValueError(f"unknown field(s) {', '.join(unknown)}")
        missing = [k for k in SUPPORT_FIELDS if k not in data]
        if missing:
            raise ValueError(f"missing {', '.join(missing)}")
        task_id = resolve(str(data["task"]))
        if task_id is None:
            raise ValueError(f"the project has no task {data['task']!r}")
        score = data["score"]
        if isinstance(score, bool) or not isinstance(score, int | float) or not 0 <= score <= 1:
            raise ValueError(f"score must be a number from 0 to 1, not {score!r}")
        if task_id in seen:
            raise ValueError(f"task {data['task']!r} again (first on {seen[task_id]})")
        seen[task_id] = where
        return {
            "task_id": task_id,
            "score": float(score),
            "correct": _bool(data["correct"], "correct"),
            "correct_with_support": _bool(data["correct_with_support"], "correct_with_support"),
        }

    return _json_lines(lines, parse, name=name, what="records")
