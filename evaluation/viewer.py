"""Turning trajectory steps into what the viewer shows: messages, tool calls with readable
outputs (SQL results as tables, diffs coloured line by line), and every ask_human call with
the judge's verdict. Pure: no ORM, no templates."""

from __future__ import annotations

import json

from hilbench_annotate.toolkit.patches import diff_lines

MAX_TABLE_ROWS = 200
MAX_TEXT = 20_000


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
        "rows": [line.split(" | ") for line in body[:MAX_TABLE_ROWS]],
        "note": note,
    }


def _table(output: object) -> dict | None:
    if isinstance(output, dict) and isinstance(output.get("rows"), list):
        columns = output.get("columns") or []
        rows = output["rows"]
        if all(isinstance(r, list) for r in rows):
            return {"columns": [str(c) for c in columns], "rows": rows[:MAX_TABLE_ROWS], "note": ""}
    if isinstance(output, list) and output and all(isinstance(r, dict) for r in output):
        columns = list(dict.fromkeys(k for r in output for k in r))
        rows = [[r.get(c) for c in columns] for r in output[:MAX_TABLE_ROWS]]
        return {"columns": columns, "rows": rows, "note": ""}
    if isinstance(output, list) and output and all(isinstance(r, list) for r in output):
        width = max(len(r) for r in output)
        return {
            "columns": [str(n) for n in range(1, width + 1)],
            "rows": output[:MAX_TABLE_ROWS],
            "note": "",
        }
    if isinstance(output, str):
        return _table_from_text(output)
    return None


def _is_diff(text: str) -> bool:
    return (
        text.startswith(("diff --git", "--- a/", "--- "))
        or "\n@@ " in text
        or (text.startswith("@@ ") and "\n" in text)
    )


def render_output(output: object, *, tool: str | None) -> dict:
    """{"kind": "table" | "diff" | "text", ...} for a tool's output or a message."""
    if output is None:
        return {"kind": "none"}
    if tool in (None, "execute_sql", "submit_sql") or not isinstance(output, str):
        table = _table(output)
        if table:
            return {"kind": "table", **table}
    text = output if isinstance(output, str) else json.dumps(output, indent=2, default=str)
    if _is_diff(text):
        return {"kind": "diff", "lines": diff_lines(text[:MAX_TEXT])}
    clipped = len(text) > MAX_TEXT
    return {"kind": "text", "text": text[:MAX_TEXT], "clipped": clipped}


def _time(value: object) -> object:
    """Seconds as a harness wrote them, without float noise (28.799999999999997 → 28.8)."""
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".")
    return value


def _question(step: dict) -> str:
    asked = step.get("tool_input")
    if isinstance(asked, dict):
        asked = asked.get("question")
    return str(asked or "")


def view_steps(steps: list[dict], verdicts: list[dict]) -> list[dict]:
    """Steps ready for the template; the i-th ask_human step gets the i-th verdict."""
    out = []
    asks = 0
    for n, step in enumerate(steps, start=1):
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
        if tool == "ask_human":
            verdict = verdicts[asks] if asks < len(verdicts) else None
            asks += 1
            item.update(kind="ask", ask_n=asks, question=_question(step), verdict=verdict)
            item["output"] = render_output(step.get("tool_output"), tool=tool)
        elif tool:
            tool_input = step.get("tool_input")
            if tool_input in ({}, [], ""):
                tool_input = None
            if isinstance(tool_input, dict) and len(tool_input) == 1:
                tool_input = next(iter(tool_input.values()))
            item.update(
                kind="tool",
                tool_input=tool_input
                if isinstance(tool_input, str) or tool_input is None
                else json.dumps(tool_input, indent=2, default=str),
                output=render_output(step.get("tool_output"), tool=tool),
            )
        else:
            item["kind"] = "message"
        out.append(item)
    return out


def csv_safe(value: object) -> object:
    """A cell a spreadsheet will not run: text starting with = + - @ (or a tab / CR) gets a
    leading apostrophe, as OWASP advises against CSV formula injection."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value
