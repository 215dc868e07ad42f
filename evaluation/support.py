"""The support-seeking study of "I Need Help!" (second paper), for SQL tasks.

For one task and one model:

1. the model writes SQL for the blocked question (``correct`` scores it against the gold
   result) and again with the blockers' resolutions as hints (``correct_with_support``);
2. it gives a need-for-help score â in [0, 1] with the paper's prompt, built from what the
   method shows it — Direct Ask: schema and question; Write then Ask: + its SQL; Execute then
   Ask: + the SQL's execution result. The score is P(Yes) / (P(Yes) + P(No)) from the first
   token's log-probabilities when the endpoint returns them, else the paper's verbalised
   probability prompt (A.2).

Pure of the ORM: the caller gives a ``SqlTaskContext`` and the hints.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from hilbench_annotate.chat import ChatError
from hilbench_annotate.toolkit.sqlconsole import QueryRefused, QueryTimeout, read_schema, run_select

from .runner import (
    RESULT_ROWS,
    Endpoint,
    SqlTaskContext,
    complete,
    format_rows,
    score_submission,
)

METHODS = ("direct_ask", "write_then_ask", "execute_then_ask")

ASK_PROMPT = (
    "You are currently doing the text-to-SQL task. Based on the information provided "
    "({items}), you have to determine whether additional hints are required for you to "
    "generate the SQL correctly to answer the user's question. You should only ask for "
    "additional hints when you actually need them, since you will also be evaluated based on "
    "the number of times you ask for hints, which would be provided by the user.\n\n"
    "information provided (enclosed by triple backticks):\n\n```\n{information}\n```\n\n"
)
ASK_YES_NO = (
    "Answer a single word Yes if you need hints (since the information provided is not enough "
    "to generate SQL correctly). Answer a single word No if hints are not required (since you "
    "are already confident to generate SQL).\n\nDo you need additional hints? Answer (Yes / No):"
)
ASK_VERBALISED = (
    "Do you need additional hints? Provide the precise probability that you need hints "
    "(closer to 0 means you don't need hints, closer to 1 means you need hints).\n\n"
    "Give ONLY the precise probability to five decimal places (format: 0.abcde, where abcde "
    "can be different digits), no other words or explanations are needed."
)
WRITE_PROMPT = (
    "Write one SQLite query that answers the user's question on the database below. "
    "Reply with the SQL only.\n\nDatabase schema:\n{schema}\n\nQuestion: {question}"
)
_FENCE = re.compile(r"```(?:sql|SQL)?\s*(.*?)```", re.DOTALL)
_PROBABILITY = re.compile(r"(?<![\d.])(0(?:\.\d+)?|1(?:\.0+)?)(?![\d.])")


@dataclass(frozen=True)
class SupportOutcome:
    score: float
    score_source: str  # "logprobs" or "verbalised"
    correct: bool
    correct_with_support: bool
    detail: dict


def schema_text(context: SqlTaskContext) -> str:
    return "\n".join(
        f"CREATE TABLE {t.name} ({', '.join(f'{c.name} {c.type}'.strip() for c in t.columns)});"
        for t in read_schema(context.db_path)
    )


def _ask(endpoint: Endpoint, prompt: str, **options):
    return complete(endpoint, [{"role": "user", "content": prompt}], **options)


def extract_sql(content: str) -> str:
    fenced = _FENCE.findall(content or "")
    return (fenced[0] if fenced else content or "").strip()


def yes_probability(logprobs: dict | None) -> float | None:
    """P(Yes) / (P(Yes) + P(No)) over the first generated token's top log-probabilities."""
    if not logprobs:
        return None
    content = logprobs.get("content") or []
    if not content or not isinstance(content[0], dict):
        return None
    candidates = content[0].get("top_logprobs") or [content[0]]
    yes = no = 0.0
    for candidate in candidates:
        if not isinstance(candidate, dict):
            continue
        word = str(candidate.get("token", "")).strip().lower()
        try:
            p = math.exp(min(0.0, float(candidate.get("logprob"))))  # a log-probability ≤ 0
        except (TypeError, ValueError, OverflowError):
            continue
        if not math.isfinite(p):
            continue
        if word == "yes":
            yes += p
        elif word == "no":
            no += p
    if yes + no == 0:
        return None
    return yes / (yes + no)


def verbalised_probability(content: str) -> float | None:
    match = _PROBABILITY.search(content or "")
    value = float(match.group(1)) if match else None
    return value if value is not None and 0.0 <= value <= 1.0 else None


def _execution_text(context: SqlTaskContext, sql: str) -> str:
    try:
        result = run_select(
            context.db_path, sql, timeout_s=context.query_timeout_s, row_cap=RESULT_ROWS
        )
    except (QueryRefused, QueryTimeout) as error:
        return f"error: {error}"
    return format_rows(result.columns, result.rows, result.truncated)


def run_support(
    *, endpoint: Endpoint, context: SqlTaskContext, question: str, hints: list[str], method: str
) -> SupportOutcome:
    """One task's record for one method. ChatError propagates: the caller records it."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}")
    schema = schema_text(context)
    write = WRITE_PROMPT.format(schema=schema, question=question)
    sql = extract_sql(_ask(endpoint, write).message.get("content") or "")
    supported_prompt = write + "\n\nHints:\n" + "\n".join(f"- {h}" for h in hints)
    sql_with_support = extract_sql(_ask(endpoint, supported_prompt).message.get("content") or "")
    scored = score_submission(context, sql)
    scored_with_support = score_submission(context, sql_with_support)

    items = ["Database schema", "User's question"]
    information = [f"Database schema: {schema}", f"User's question: {question}"]
    if method in ("write_then_ask", "execute_then_ask"):
        items.append("Generated SQL")
        information.append(f"Generated SQL: {sql}")
    if method == "execute_then_ask":
        items.append("SQL execution results")
        information.append(f"SQL execution results: {_execution_text(context, sql)}")
    prompt = ASK_PROMPT.format(items=", ".join(items), information="\n".join(information))
    reply = _ask(endpoint, prompt + ASK_YES_NO, logprobs=True, top_logprobs=5, max_tokens=1)
    score, source = yes_probability(reply.logprobs), "logprobs"
    if score is None:
        reply = _ask(endpoint, prompt + ASK_VERBALISED, max_tokens=16)
        score, source = verbalised_probability(reply.message.get("content") or ""), "verbalised"
        if score is None:
            raise ChatError(
                "the model gave neither log-probabilities nor a probability between 0 and 1"
            )
    return SupportOutcome(
        score=score,
        score_source=source,
        correct=bool(scored.get("match")),
        correct_with_support=bool(scored_with_support.get("match")),
        detail={"sql": sql, "sql_with_support": sql_with_support},
    )
