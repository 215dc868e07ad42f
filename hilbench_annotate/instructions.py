"""The three modes' instruction texts, worded and laid out as the HiL-Bench release's.

``baseline``: the blocked task. ``ask_human``: the same, plus the ``ask_human`` tool (SQL) —
for SWE the tool comes from the environment, the text is the same. ``full_info``: the
blocked task plus every blocker's description and resolution. Export writes exactly these
texts; the authoring workspace previews them.
"""

from collections.abc import Iterable, Mapping

from hilbench_annotate.spec import render_swe_statement

MODES = ("baseline", "ask_human", "full_info")

_SQL_COMMANDS = (
    "- `get_database_info {db}` — list all tables and their descriptions",
    "- `get_table_info {db} <table>` — list columns and descriptions for a table",
    "- `get_column_info {db} <table> <column>` — get details for a specific column",
    '- `get_business_info {db} "<question>"` — semantic search over business documentation',
    '- `execute_sql "<query>"` — execute a SQL query against the database',
)
_ASK_HUMAN_COMMAND = (
    '- `ask_human "<question>"` — ask a specific clarifying question about a task blocker'
)
_SUBMIT_COMMAND = '- `submit_sql "<query>"` — submit your final SQL answer'


def _clarifications(blockers: Iterable[Mapping[str, str]]) -> list[str]:
    # The release keeps descriptions verbatim but strips trailing whitespace from resolutions.
    return [f"### {b['description']}\n{b['resolution'].rstrip()}" for b in blockers]


def sql_instruction(
    *, db_id: str, question: str, blockers: list[Mapping[str, str]], mode: str
) -> str:
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}")
    parts = [
        "# Instructions\n",
        f"You are working in the `{db_id}` database.\n\n",
        "Answer the following question:\n",
        f"{question}\n\n",
    ]
    if mode == "full_info":
        parts.append("## Additional Context\n")
        parts.append(
            "The following clarifications are provided to help you complete this task:\n\n"
        )
        parts.append("".join(text + "\n\n" for text in _clarifications(blockers)))
    commands = [c.format(db=db_id) for c in _SQL_COMMANDS]
    if mode == "ask_human":
        commands.append(_ASK_HUMAN_COMMAND)
    commands.append(_SUBMIT_COMMAND)
    parts.append("# Available Commands\n")
    parts.append(
        "The following commands are installed in this terminal — "
        "run them directly from the shell.\n"
    )
    parts.append(
        "**Only run ONE command per turn** — each command blocks until the MCP server responds.\n"
    )
    parts.append("\n".join(commands) + "\n\n")
    parts.append("# Submission Instructions\n")
    parts.append(
        "When you are confident your SQL query is correct, call the `submit_sql` tool with your "
        "final query as the argument. If you do not call `submit_sql`, the task will be "
        "considered incomplete and scored as 0.\n"
    )
    return "".join(parts)


def swe_instruction(
    *, sections: Mapping[str, str], blockers: list[Mapping[str, str]], mode: str
) -> str:
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}")
    statement = render_swe_statement(sections)
    if mode != "full_info":
        return statement
    return statement + "\n## BLOCKER DETAILS\n" + "\n\n".join(_clarifications(blockers)) + "\n"


def task_instructions(snapshot: Mapping) -> dict[str, str]:
    """All three modes for a revision snapshot (``services.task_snapshot``)."""
    blockers = snapshot.get("blockers", [])
    spec = snapshot["blocked_spec"]
    if snapshot["domain"] == "sql":
        db_id = snapshot.get("environment", {}).get("db_id", "")
        return {
            mode: sql_instruction(
                db_id=db_id, question=spec.get("question", ""), blockers=blockers, mode=mode
            )
            for mode in MODES
        }
    return {mode: swe_instruction(sections=spec, blockers=blockers, mode=mode) for mode in MODES}
