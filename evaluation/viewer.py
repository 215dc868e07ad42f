"""Turning trajectory steps into what the viewer shows: messages, tool calls with readable
outputs (SQL results as tables, diffs coloured line by line), and every ask_human call with
the judge's verdict. Pure: no ORM, no templates.

A page shows at most ``PAGE_STEPS`` steps (``step_page``), and of each text on it — a message,
a tool's input or output, a question — at most ``PAGE_TEXT`` characters (of a table at most
``PAGE_ROWS`` rows, ``PAGE_COLUMNS`` columns, ``PAGE_CELL`` characters a cell and about
``2 * PAGE_TEXT`` characters in all). What is clipped says so and is shown whole on demand,
``FULL_PART`` characters at a time (``full_text``). So a page's size has a bound whatever
the trajectory holds.
"""

from __future__ import annotations

import json
from math import ceil

from hilbench_annotate.toolkit.patches import diff_lines

from .asks import ASK, step_questions

PAGE_STEPS = 50
PAGE_TEXT = 2_000
PAGE_ROWS = 50
PAGE_COLUMNS = 20
PAGE_CELL = 300
FULL_PART = 100_000
# The parts of a step that can be long, each shown whole on its own page.
FIELDS = ("content", "tool_input", "tool_output")


def _table_from_text(text: str) -> dict | None:
    """Our runner's ``a | b`` result text (header, rows, maybe a truncation note)."""
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) < 2 or " | " not in lines[0]:
        return None
    width = len(lines[0].split(" | "))
    body = [line for line in lines[1:] if not line.startswith("…")]
    if width < 2 or any(len(line.split(" | ")) != width for line in body):
        return None
    note = next((line for line in lines[1:] if line.startswith("…")), "")
    return {
        "columns": lines[0].split(" | "),
        "rows": [line.split(" | ") for line in body[:PAGE_ROWS]],
        "count": len(body),
        "note": note,
    }


def _table(output: object) -> dict | None:
    """The table ``output`` is, with its first ``PAGE_ROWS`` rows and its row ``count``."""
    if isinstance(output, dict) and isinstance(output.get("rows"), list):
        columns = output.get("columns") or []
        rows = output["rows"]
        if all(isinstance(r, list) for r in rows):
            columns = [str(c) for c in columns] if isinstance(columns, list) else []
            return {"columns": columns, "rows": rows[:PAGE_ROWS], "count": len(rows), "note": ""}
    if isinstance(output, list) and output and all(isinstance(r, dict) for r in output):
        columns = list(dict.fromkeys(k for r in output for k in r))
        rows = [[r.get(c) for c in columns] for r in output[:PAGE_ROWS]]
        return {"columns": columns, "rows": rows, "count": len(output), "note": ""}
    if isinstance(output, list) and output and all(isinstance(r, list) for r in output):
        width = max(len(r) for r in output)
        return {
            "columns": [str(n) for n in range(1, width + 1)],
            "rows": output[:PAGE_ROWS],
            "count": len(output),
            "note": "",
        }
    if isinstance(output, str):
        return _table_from_text(output)
    return None


def _cell(value: object) -> tuple[object, bool]:
    """A cell as the page shows it, and whether it was cut."""
    if isinstance(value, dict | list):
        value = json.dumps(value, default=str)
    if isinstance(value, str) and len(value) > PAGE_CELL:
        return value[:PAGE_CELL] + "…", True
    return value, False


def _bounded_table(table: dict) -> dict:
    """``table`` within a page's bounds, ``clipped`` when any of it was left out."""
    columns = [_cell(c)[0] for c in table["columns"][:PAGE_COLUMNS]]
    cut = len(table["columns"]) > PAGE_COLUMNS or table["count"] > PAGE_ROWS
    rows, budget = [], 2 * PAGE_TEXT
    for row in table["rows"]:
        cells = [_cell(v) for v in row[:PAGE_COLUMNS]]
        budget -= sum(len(str(v)) for v, _ in cells)
        if budget < 0 and rows:
            break
        rows.append([v for v, _ in cells])
        cut = cut or len(row) > PAGE_COLUMNS or any(c for _, c in cells)
    more = table["count"] - len(rows)
    note = table["note"] or (f"… {more:,} more rows" if more else "")
    return {"columns": columns, "rows": rows, "note": note, "clipped": cut or bool(more)}


def _is_diff(text: str) -> bool:
    return (
        text.startswith(("diff --git", "--- a/", "--- "))
        or "\n@@ " in text
        or (text.startswith("@@ ") and "\n" in text)
    )


def output_text(output: object) -> str:
    """A message, a tool's input or output as text: what the page clips, shown whole."""
    return output if isinstance(output, str) else json.dumps(output, indent=2, default=str)


def render_output(output: object, *, tool: str | None) -> dict:
    """{"kind": "table" | "diff" | "text", ...} for a tool's output or a message, within a
    page's bounds: ``clipped`` when some of it is left out, ``size`` its whole length."""
    if output is None:
        return {"kind": "none"}
    text = output_text(output)
    if tool in (None, "execute_sql", "submit_sql") or not isinstance(output, str):
        table = _table(output)
        if table:
            return {"kind": "table", **_bounded_table(table), "size": len(text)}
    clipped = {"clipped": len(text) > PAGE_TEXT, "size": len(text)}
    if _is_diff(text):
        return {"kind": "diff", "lines": diff_lines(text[:PAGE_TEXT]), **clipped}
    return {"kind": "text", "text": text[:PAGE_TEXT], **clipped}


def _time(value: object) -> object:
    """Seconds as a harness wrote them, without float noise (28.799999999999997 → 28.8)."""
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".")
    return value


def _tool_input(step: dict) -> object:
    """A tool's input as the page shows it: nothing when empty, a lone argument's value."""
    tool_input = step.get("tool_input")
    if tool_input in ({}, [], ""):
        return None
    if isinstance(tool_input, dict) and len(tool_input) == 1:
        return next(iter(tool_input.values()))
    return tool_input


def _clip(key: str, text: str | None) -> dict:
    """``key``: the text's first ``PAGE_TEXT`` characters; ``key_clipped``: whether that is
    not all of it; ``key_size``: how long it is."""
    if text is None:
        return {key: None, f"{key}_clipped": False, f"{key}_size": 0}
    return {
        key: text[:PAGE_TEXT],
        f"{key}_clipped": len(text) > PAGE_TEXT,
        f"{key}_size": len(text),
    }


def view_steps(
    steps: list[dict], verdicts: list[dict], *, first: int = 1, asks_before: int = 0
) -> list[dict]:
    """Steps ready for the template, numbered from ``first``; ``asks_before`` ask_human calls
    come before them, so the k-th ask_human call of the trajectory gets the k-th verdict
    whatever page it is on. A call is a step of the ``ask_human`` tool or an ``ask_human``
    command in a shell step (``asks.step_questions``): such a step is an ``ask`` step with
    each of its calls (``asks``: number, question, verdict), and a shell step keeps its
    command and output as a tool step's."""
    out = []
    asks = asks_before
    for n, step in enumerate(steps, start=first):
        tool = step.get("tool")
        item = {
            "n": n,
            "role": step.get("role") or "",
            "time": _time(step.get("time")),
            "tool": tool,
            "content": render_output(step.get("content"), tool=None)
            if step.get("content")
            else None,
        }
        if tool:
            tool_input = None if tool == ASK else _tool_input(step)
            text = None if tool_input is None else output_text(tool_input)
            item.update(
                kind="tool",
                output=render_output(step.get("tool_output"), tool=tool),
                **_clip("tool_input", text),
            )
        else:
            item["kind"] = "message"
        calls = []
        for question in step_questions(step):
            verdict = verdicts[asks] if asks < len(verdicts) else None
            asks += 1
            calls.append({"n": asks, "verdict": verdict, **_clip("question", question)})
        if calls:
            item.update(kind="ask", asks=calls)
        out.append(item)
    return out


def step_page(total: int, requested: int | None) -> dict:
    """Page ``requested`` (1-based; the nearest page there is) of ``total`` steps."""
    pages = max(1, ceil(total / PAGE_STEPS))
    page = min(max(requested or 1, 1), pages)
    offset = (page - 1) * PAGE_STEPS
    return {
        "page": page,
        "pages": pages,
        "offset": offset,
        "first": offset + 1,
        "last": min(offset + PAGE_STEPS, total),
        "total": total,
        "previous": page - 1 if page > 1 else None,
        "next": page + 1 if page < pages else None,
    }


def full_text(step: dict, field: str, requested: int | None) -> dict:
    """Part ``requested`` (1-based; the nearest there is) of one of a step's ``FIELDS`` as
    text, ``FULL_PART`` characters a part."""
    value = _tool_input(step) if field == "tool_input" else step.get(field)
    text = "" if value is None else output_text(value)
    parts = max(1, ceil(len(text) / FULL_PART))
    part = min(max(requested or 1, 1), parts)
    start = (part - 1) * FULL_PART
    return {
        "field": field,
        "text": text[start : start + FULL_PART],
        "size": len(text),
        "part": part,
        "parts": parts,
        "from": start + 1 if text else 0,
        "to": min(start + FULL_PART, len(text)),
        "previous": part - 1 if part > 1 else None,
        "next": part + 1 if part < parts else None,
    }


def csv_safe(value: object) -> object:
    """A cell a spreadsheet will not run: text starting with = + - @ (or a tab / CR) gets a
    leading apostrophe, as OWASP advises against CSV formula injection."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value
