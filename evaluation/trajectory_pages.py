"""Reading a stored trajectory a page at a time, in the database.

A pass's trajectory is one JSON array in one row (``Trajectory.steps``) of up to
``trajectories.MAX_BYTES``, so the pass page never loads it whole: the database answers how
many steps there are and where the ask_human calls are (``trajectory_outline``: two numbers,
the positions of the ask_human tool steps and the start of each shell command that names it)
and the steps of one page (``trajectory_steps``), with its
own JSON functions — SQLite's ``json_each``, PostgreSQL's jsonpath (one detoasting of the row
per query). So the queries a page makes do not depend on the trajectory's length nor on which
page is asked for, and what crosses from the database is the page, not the file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from django.db import connection

from hilbench_annotate.toolkit.jsontext import json_loads

from .asks import ASK, COMMAND_KEYS, SCAN_CHARS, shell_questions
from .models import Trajectory


@dataclass(frozen=True)
class TrajectoryOutline:
    """A stored trajectory without its steps: where it came from, how many steps it has, and
    the position (0-based, in order) of each ask_human call: a step's once per question it
    asks (``asks.step_questions``), so a shell step asking twice is there twice."""

    source: str
    total: int
    asks: list[int]


def _names() -> dict[str, str]:
    meta = Trajectory._meta
    quote = connection.ops.quote_name
    return {
        "table": quote(meta.db_table),
        "steps": quote(meta.get_field("steps").column),
        "pass": quote(meta.get_field("task_pass").column),
        "source": quote(meta.get_field("source").column),
    }


# A step's tool and the command text ``asks.command_text`` reads (its input when that is text,
# else the first of ``asks.COMMAND_KEYS`` holding text), per database.
_TOOL = {
    "sqlite": "CASE WHEN e.type = 'object' THEN json_extract(e.value, '$.tool') END",
    "postgresql": "(e.v ->> 'tool')",
}
_PATHS = {
    "sqlite": ["$.tool_input", *(f"$.tool_input.{key}" for key in COMMAND_KEYS)],
    "postgresql": ["{tool_input}", *(f"{{tool_input,{key}}}" for key in COMMAND_KEYS)],
}
_COMMAND = {
    "sqlite": "CASE WHEN e.type = 'object' THEN CASE "
    + " ".join(
        f"WHEN json_type(e.value, '{p}') = 'text' THEN json_extract(e.value, '{p}')"
        for p in _PATHS["sqlite"]
    )
    + " END END",
    "postgresql": "CASE "
    + " ".join(
        f"WHEN jsonb_typeof(e.v #> '{p}') = 'string' THEN e.v #>> '{p}'"
        for p in _PATHS["postgresql"]
    )
    + " END",
}
_FIND = {"sqlite": "instr", "postgresql": "strpos"}

# Per database: the outline (one walk over the array: its length, the positions of the
# ask_human tool steps, and each other tool step whose command names ask_human, with the first
# SCAN_CHARS characters of its command for ``asks.shell_questions`` to read) and one slice of
# ``steps``. A top-level value that is not an array (no import stores one) reads as no steps.
# SQLite's ``json_each`` gives an object as JSON text (``json_quote`` leaves it as it is and
# quotes any other value); a CASE keeps ``json_extract`` off what is not an object. Every
# condition on ``steps`` itself would parse the whole row again for each step. ``{tool}``,
# ``{command}``, ``{find}``, ``{ask}`` and ``{scan}`` are the expressions above.
_SHELL = "{tool} <> '{ask}' AND {tool} <> '' AND {find}({command}, '{ask}') > 0"
_SQL = {
    "sqlite": {
        "outline": (
            "SELECT t.{source}, count(e.key), json_group_array(e.key) FILTER (WHERE {tool} ="
            " '{ask}'), json_group_array(json_array(e.key, substr({command}, 1, {scan})))"
            " FILTER (WHERE {shell}) FROM {table} t LEFT JOIN json_each(t.{steps}) e"
            " ON typeof(e.key) = 'integer' WHERE t.{pass} = %s GROUP BY t.id"
        ),
        "steps": (
            "SELECT json_quote(e.value) FROM {table} t, json_each(t.{steps}) e"
            " WHERE t.{pass} = %s AND typeof(e.key) = 'integer' AND e.key >= %s AND e.key < %s"
            " ORDER BY e.key"
        ),
    },
    "postgresql": {
        "outline": (
            "SELECT t.{source}, count(e.i), json_agg(e.i - 1) FILTER (WHERE {tool} = '{ask}'),"
            " json_agg(json_build_array(e.i - 1, left({command}, {scan}))) FILTER (WHERE"
            " {shell}) FROM {table} t LEFT JOIN LATERAL jsonb_array_elements(CASE WHEN"
            " jsonb_typeof(t.{steps}) = 'array' THEN t.{steps} ELSE '[]'::jsonb END)"
            " WITH ORDINALITY e(v, i) ON true WHERE t.{pass} = %s GROUP BY t.id"
        ),
        "steps": (
            "SELECT q.v FROM {table} t, jsonb_path_query(t.{steps}, '$[$first to $last]',"
            " jsonb_build_object('first', %s::int, 'last', %s::int)) WITH ORDINALITY q(v, i)"
            " WHERE t.{pass} = %s AND jsonb_typeof(t.{steps}) = 'array' ORDER BY q.i"
        ),
    },
}


def _sql(kind: str) -> str:
    vendor = connection.vendor
    parts = {"tool": _TOOL[vendor], "command": _COMMAND[vendor], "find": _FIND[vendor]}
    parts.update(ask=ASK, scan=SCAN_CHARS)
    return _SQL[vendor][kind].format(**_names(), **parts, shell=_SHELL.format(**parts))


def trajectory_outline(task_pass_id: int) -> TrajectoryOutline | None:
    """The pass's trajectory without its steps, or None when none was stored."""
    with connection.cursor() as cursor:
        cursor.execute(_sql("outline"), [task_pass_id])
        row = cursor.fetchone()
    if row is None:
        return None
    source, total, tools, shells = row
    asks = [int(a) for a in _json(tools) or []]
    for position, command in _json(shells) or []:
        asks += [int(position)] * len(shell_questions(command or ""))
    return TrajectoryOutline(source=source or "", total=int(total or 0), asks=sorted(asks))


def _json(value):
    return json_loads(value) if isinstance(value, str | bytes) else value


def _as_step(value: object) -> dict:
    if isinstance(value, str | bytes):
        value = json_loads(value)
    if isinstance(value, dict):
        return value
    return {"role": "", "content": json.dumps(value)}  # not a step: shown as it is


def trajectory_steps(task_pass_id: int, *, offset: int, limit: int) -> list[dict]:
    """Steps ``offset`` to ``offset + limit - 1`` (0-based) of the pass's trajectory; fewer
    past its end, none when it has no trajectory."""
    if limit <= 0 or offset < 0:
        return []
    if connection.vendor == "postgresql":
        params = [offset, offset + limit - 1, task_pass_id]
    else:
        params = [task_pass_id, offset, offset + limit]
    with connection.cursor() as cursor:
        cursor.execute(_sql("steps"), params)
        return [_as_step(value) for (value,) in cursor.fetchall()]
