"""Reading a stored trajectory a page at a time, in the database.

A pass's trajectory is one JSON array in one row (``Trajectory.steps``) of up to
``trajectories.MAX_BYTES``, so the pass page never loads it whole: the database answers how
many steps there are and where the ask_human steps are (``trajectory_outline``: two numbers
and at most ``MAX_STEPS`` positions) and the steps of one page (``trajectory_steps``), with its
own JSON functions — SQLite's ``json_each``, PostgreSQL's jsonpath (one detoasting of the row
per query). So the queries a page makes do not depend on the trajectory's length nor on which
page is asked for, and what crosses from the database is the page, not the file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from django.db import connection

from .models import Trajectory


@dataclass(frozen=True)
class TrajectoryOutline:
    """A stored trajectory without its steps: where it came from, how many steps it has, and
    the positions (0-based, in order) of its ask_human steps."""

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


# Per database: the outline (one walk over the array: its length and the ask_human positions)
# and one slice of ``steps``. A top-level value that is not an array (no import stores one)
# reads as no steps. SQLite's ``json_each`` gives an object as JSON text (``json_quote`` leaves
# it as it is and quotes any other value); a CASE keeps ``json_extract`` off what is not an
# object. Every condition on ``steps`` itself would parse the whole row again for each step.
_SQL = {
    "sqlite": {
        "outline": (
            "SELECT t.{source}, count(e.key), json_group_array(e.key) FILTER (WHERE CASE WHEN"
            " e.type = 'object' THEN json_extract(e.value, '$.tool') END = 'ask_human')"
            " FROM {table} t LEFT JOIN json_each(t.{steps}) e ON typeof(e.key) = 'integer'"
            " WHERE t.{pass} = %s GROUP BY t.id"
        ),
        "steps": (
            "SELECT json_quote(e.value) FROM {table} t, json_each(t.{steps}) e"
            " WHERE t.{pass} = %s AND typeof(e.key) = 'integer' AND e.key >= %s AND e.key < %s"
            " ORDER BY e.key"
        ),
    },
    "postgresql": {
        "outline": (
            "SELECT t.{source}, count(e.i), json_agg(e.i - 1) FILTER (WHERE e.v ->> 'tool'"
            " = 'ask_human') FROM {table} t LEFT JOIN LATERAL jsonb_array_elements(CASE WHEN"
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
    return _SQL[connection.vendor][kind].format(**_names())


def trajectory_outline(task_pass_id: int) -> TrajectoryOutline | None:
    """The pass's trajectory without its steps, or None when none was stored."""
    with connection.cursor() as cursor:
        cursor.execute(_sql("outline"), [task_pass_id])
        row = cursor.fetchone()
    if row is None:
        return None
    source, total, asks = row
    if isinstance(asks, str | bytes):
        asks = json.loads(asks)
    return TrajectoryOutline(
        source=source or "", total=int(total or 0), asks=sorted(int(a) for a in asks or [])
    )


def _as_step(value: object) -> dict:
    if isinstance(value, str | bytes):
        value = json.loads(value)
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
