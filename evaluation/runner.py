"""The built-in SQL runner: one model, one SQL task, one pass in one mode.

The model gets the mode's instruction text (the release's, from ``instructions.py``) and the
release's commands as OpenAI function tools: ``get_database_info``, ``get_table_info``,
``get_column_info``, ``get_business_info``, ``execute_sql`` (one read-only SELECT under the
console's time limit and a row cap), ``submit_sql`` and, in ``ask_human`` mode, ``ask_human``
(answered by our judge through the caller's ``ask`` callback). The pass ends at
``submit_sql``; its query runs read-only on the task's database and is scored against the
gold result by the release's rule (``toolkit.compare.score``, the function the exported
verifier ``grade.py`` runs too: values bucketed to 0.01, rows as multisets of values, with and
without duplicate rows).

A reply the runner cannot use — no tool call and no text, arguments that are not JSON, an
unknown tool — is answered with an error message as the tool's output and costs a turn (the
count is kept in ``detail["malformed"]``). A failing endpoint (timeout, HTTP error after
retries) ends the pass unresolved with the error recorded; so does reaching ``max_turns``.
Nothing here touches the ORM except through ``ask``: the caller prepares a ``SqlTaskContext``.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from hilbench_annotate.chat import ChatError, ChatRetryable, chat_completion
from hilbench_annotate.toolkit.compare import score
from hilbench_annotate.toolkit.jsontext import json_loads
from hilbench_annotate.toolkit.sqlconsole import QueryRefused, QueryTimeout, read_schema, run_select

RESULT_ROWS = 50  # rows of an execute_sql result the model sees
SCORE_ROW_CAP = 10_000  # rows of a submitted query scored against the gold result
CHAT_RETRIES = 2  # further attempts after a retryable endpoint failure
_WORD = re.compile(r"[a-z0-9]+")

SYSTEM_PROMPT = (
    "You are a data analyst answering a question with SQL on a SQLite database. Use the "
    "tools to explore the database, run queries, and submit exactly one final query with "
    "submit_sql. Call one tool per turn."
)


def _tool(name: str, description: str, **params: str) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {p: {"type": "string", "description": d} for p, d in params.items()},
                "required": list(params),
            },
        },
    }


TOOLS = {
    "get_database_info": _tool("get_database_info", "List all tables and their descriptions."),
    "get_table_info": _tool(
        "get_table_info", "List columns and descriptions for a table.", table="Table name"
    ),
    "get_column_info": _tool(
        "get_column_info",
        "Get details for a specific column.",
        table="Table name",
        column="Column name",
    ),
    "get_business_info": _tool(
        "get_business_info",
        "Search the business documentation.",
        question="What to look up",
    ),
    "execute_sql": _tool(
        "execute_sql", "Execute a read-only SQL query against the database.", query="SQL"
    ),
    "ask_human": _tool(
        "ask_human",
        "Ask a specific clarifying question about a task blocker.",
        question="One specific question",
    ),
    "submit_sql": _tool("submit_sql", "Submit your final SQL answer.", query="SQL"),
}


@dataclass(frozen=True)
class Endpoint:
    base_url: str
    model: str
    api_key_env: str | None
    timeout_s: float
    max_turns: int
    # The operator's allowlist (MODEL_ENDPOINT_HOSTS) the connections are checked against.
    allowed_hosts: tuple[str, ...] = ()


@dataclass
class SqlTaskContext:
    """What a pass needs of one task, read once per task by the caller."""

    db_path: Path
    instructions: dict[str, str]  # mode -> instruction.md text
    descriptions: dict[str, str]  # table -> database_description CSV text
    business_info: list[str]
    gold_columns: list[str]
    gold_rows: list[tuple]
    query_timeout_s: float = 5.0


@dataclass
class PassOutcome:
    resolved: bool
    final_sql: str = ""
    error: str = ""
    tokens: int | None = None
    detail: dict = field(default_factory=dict)
    steps: list[dict] = field(default_factory=list)


def _csv_rows(text: str) -> list[list[str]]:
    import csv
    import io

    return [row for row in csv.reader(io.StringIO(text or "")) if row]


def _table_description(context: SqlTaskContext, table: str) -> str:
    for name, text in context.descriptions.items():
        if name.lower() == table.lower():
            return text
    return ""


def format_rows(columns: list[str], rows: list[tuple], truncated: bool) -> str:
    lines = [" | ".join(columns)]
    lines += [" | ".join("NULL" if v is None else str(v) for v in row) for row in rows]
    if truncated:
        lines.append(f"… (only the first {len(rows)} rows are shown)")
    return "\n".join(lines)


class _Tools:
    def __init__(self, context: SqlTaskContext, ask: Callable[[str], str] | None):
        self.context = context
        self.ask = ask

    def get_database_info(self) -> str:
        tables = read_schema(self.context.db_path)
        lines = []
        for table in tables:
            columns = ", ".join(c.name for c in table.columns)
            lines.append(f"{table.name}: {columns}")
        return "\n".join(lines) or "The database has no tables."

    def get_table_info(self, table: str) -> str:
        found = next(
            (t for t in read_schema(self.context.db_path) if t.name.lower() == table.lower()),
            None,
        )
        if found is None:
            return f"error: no table named {table!r}"
        lines = [f"{c.name} {c.type}".strip() for c in found.columns]
        description = _table_description(self.context, found.name)
        if description:
            lines += ["", "Description (CSV):", description.strip()]
        return "\n".join(lines)

    def get_column_info(self, table: str, column: str) -> str:
        rows = _csv_rows(_table_description(self.context, table))
        for row in rows[1:]:
            if row and row[0].strip().lower() == column.lower():
                return ", ".join(f"{h}: {v}" for h, v in zip(rows[0], row, strict=False))
        return f"No description of {table}.{column}."

    def get_business_info(self, question: str) -> str:
        words = set(_WORD.findall(question.lower()))
        ranked = sorted(
            self.context.business_info,
            key=lambda text: -len(words & set(_WORD.findall(str(text).lower()))),
        )
        return "\n".join(f"- {text}" for text in ranked[:5]) or "No business documentation."

    def execute_sql(self, query: str) -> str:
        try:
            result = run_select(
                self.context.db_path,
                query,
                timeout_s=self.context.query_timeout_s,
                row_cap=RESULT_ROWS,
            )
        except (QueryRefused, QueryTimeout) as error:
            return f"error: {error}"
        return format_rows(result.columns, result.rows, result.truncated)

    def ask_human(self, question: str) -> str:
        if self.ask is None:
            return "error: ask_human is not available in this mode"
        return self.ask(question)


def score_submission(context: SqlTaskContext, query: str) -> dict:
    """Run the submitted query read-only and compare it with the gold result."""
    try:
        result = run_select(
            context.db_path,
            query,
            timeout_s=context.query_timeout_s,
            row_cap=SCORE_ROW_CAP,
            exact=True,
        )
    except (QueryRefused, QueryTimeout) as error:
        return {"match": False, "compared": "", "reason": f"the query failed: {error}"}
    scored = score(result.columns, result.rows, context.gold_columns, context.gold_rows)
    scored["rows"] = len(result.rows)
    return scored


def _arguments(call: dict) -> dict:
    raw = call.get("function", {}).get("arguments") or "{}"
    data = json_loads(raw) if isinstance(raw, str) else raw
    if not isinstance(data, dict):
        raise ValueError("the arguments are not a JSON object")
    return data


def complete(endpoint: Endpoint, messages: list[dict], **options):
    """One chat completion at temperature 0, retried on a retryable failure."""
    body = {"model": endpoint.model, "messages": messages, "temperature": 0, **options}
    last: ChatRetryable | None = None
    for _attempt in range(1 + CHAT_RETRIES):
        try:
            return chat_completion(
                base_url=endpoint.base_url,
                body=body,
                api_key_env=endpoint.api_key_env,
                timeout_s=endpoint.timeout_s,
                allowed_hosts=endpoint.allowed_hosts,
                what="the model endpoint",
            )
        except ChatRetryable as error:
            last = error
    raise ChatError(f"the model endpoint failed {1 + CHAT_RETRIES} times: {last}")


class _SqlPass:
    """One pass in progress: the conversation, its trajectory and its counters."""

    def __init__(
        self,
        *,
        endpoint: Endpoint,
        context: SqlTaskContext,
        mode: str,
        ask: Callable[[str], str] | None,
        reject: Callable[[str, str], None] | None,
    ):
        self.endpoint = endpoint
        self.context = context
        self.mode = mode
        self.reject = reject
        self.tools = _Tools(context, ask if mode == "ask_human" else None)
        self.offered = [
            spec for name, spec in TOOLS.items() if name != "ask_human" or mode == "ask_human"
        ]
        self.names = {spec["function"]["name"] for spec in self.offered}
        self.messages: list[dict] = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": context.instructions[mode]},
        ]
        self.started = time.monotonic()
        # The trajectory, in the documented step format (evaluation/trajectories.py).
        self.steps: list[dict] = [
            {"role": "user", "content": context.instructions[mode], "time": 0.0}
        ]
        self.detail: dict = {"turns": 0, "malformed": 0, "tool_calls": 0}
        self.tokens: int | None = None

    def step(self, **fields) -> None:
        self.steps.append({**fields, "time": round(time.monotonic() - self.started, 3)})

    def outcome(self, **fields) -> PassOutcome:
        return PassOutcome(tokens=self.tokens, detail=self.detail, steps=self.steps, **fields)

    def take_reply(self, reply) -> list[dict]:
        """Count the reply's tokens, keep its message; its tool calls, if any."""
        if reply.usage and isinstance(reply.usage.get("total_tokens"), int):
            self.tokens = (self.tokens or 0) + reply.usage["total_tokens"]
        message = reply.message
        calls = message.get("tool_calls") or []
        self.messages.append(
            {"role": "assistant", "content": message.get("content") or "", "tool_calls": calls}
            if calls
            else {"role": "assistant", "content": message.get("content") or ""}
        )
        if message.get("content"):
            self.step(role="assistant", content=str(message["content"]))
        return calls

    def nudge(self) -> None:
        """A reply without a tool call: malformed, and the model is told to use the tools."""
        self.detail["malformed"] += 1
        nudge = "Use one of the tools; finish with submit_sql."
        self.messages.append({"role": "user", "content": nudge})
        self.step(role="user", content=nudge)

    def answer_call(self, call: dict) -> PassOutcome | None:
        """Answer one tool call; the pass's outcome when the call is ``submit_sql``."""
        self.detail["tool_calls"] += 1
        name = call.get("function", {}).get("name", "")
        call_id = call.get("id") or f"call_{self.detail['tool_calls']}"
        try:
            arguments = _arguments(call)
        except ValueError as error:
            self.detail["malformed"] += 1
            arguments = call.get("function", {}).get("arguments")
            output = f"error: the arguments of {name} are not valid JSON ({error})"
            if name == "ask_human" and self.reject is not None and self.mode == "ask_human":
                self.reject(str(arguments), "the arguments are not valid JSON")
        else:
            if name not in self.names:
                self.detail["malformed"] += 1
                output = f"error: there is no tool {name!r}; use one of {sorted(self.names)}"
            elif name == "submit_sql":
                return self.submit(str(arguments.get("query", "")), arguments)
            else:
                output = self.call_tool(name, arguments)
        self.step(role="assistant", tool=name, tool_input=arguments, tool_output=output)
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": output})
        return None

    def call_tool(self, name: str, arguments: dict) -> str:
        """Run an offered tool other than ``submit_sql``; its output for the model."""
        try:
            return getattr(self.tools, name)(**{k: str(v) for k, v in arguments.items()})
        except TypeError:
            self.detail["malformed"] += 1
            if name == "ask_human" and self.reject is not None:
                self.reject(json.dumps(arguments), f"wrong arguments {sorted(arguments)}")
            return f"error: wrong arguments for {name}: {sorted(arguments)}"

    def submit(self, query: str, arguments: dict) -> PassOutcome:
        """Score the submitted query: the pass ends here."""
        scored = score_submission(self.context, query)
        self.detail["score"] = scored
        resolved = bool(scored.get("match"))
        verdict = "correct" if resolved else f"wrong: {scored.get('reason', '')}"
        self.step(role="assistant", tool="submit_sql", tool_input=arguments, tool_output=verdict)
        return self.outcome(resolved=resolved, final_sql=query)


def run_sql_pass(
    *,
    endpoint: Endpoint,
    context: SqlTaskContext,
    mode: str,
    ask: Callable[[str], str] | None = None,
    reject: Callable[[str, str], None] | None = None,
    heartbeat: Callable[[], None] | None = None,
) -> PassOutcome:
    """One pass. ``ask`` answers an ask_human question; ``reject(raw, reason)`` logs an
    ask_human call the runner could not read (it still counts as a call); ``heartbeat`` is
    called every turn, so a long pass is not taken for a dead worker."""
    sql_pass = _SqlPass(endpoint=endpoint, context=context, mode=mode, ask=ask, reject=reject)
    for _turn in range(endpoint.max_turns):
        sql_pass.detail["turns"] += 1
        if heartbeat is not None:
            heartbeat()
        try:
            reply = complete(
                endpoint, sql_pass.messages, tools=sql_pass.offered, tool_choice="auto"
            )
        except ChatError as error:
            sql_pass.step(role="system", content=f"The pass stopped: {error}")
            return sql_pass.outcome(resolved=False, error=str(error))
        calls = sql_pass.take_reply(reply)
        if not calls:
            sql_pass.nudge()
            continue
        for call in calls:
            finished = sql_pass.answer_call(call)
            if finished is not None:
                return finished
    sql_pass.step(role="system", content=f"No submit_sql within {endpoint.max_turns} turns.")
    return sql_pass.outcome(
        resolved=False, error=f"no submit_sql within {endpoint.max_turns} turns"
    )
