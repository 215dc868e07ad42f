"""Where a trajectory step calls ``ask_human``, however the agent called it. Pure: no ORM.

An agent asks through a tool of that name (``tool == "ask_human"``, the question in
``tool_input``: the app's runner, the reference agents, an MCP client), or through the task's
``ask_human`` command in a shell: Harbor's ``terminus-2`` types ``ask_human "…"`` into its
terminal, a ``bash_command`` step whose ``tool_input.keystrokes`` holds it. ``step_questions``
gives one step's questions in order, either way; the viewer numbers each with its verdict, and
the trajectory pages find the steps in the database first (``trajectory_pages``: a step whose
command text holds ``ask_human``), then here.

A command is read as a shell splits it into words (``shlex``): ``ask_human`` counts where a
command starts — at the start of the text or after a newline, ``;``, ``&``, ``|``, ``&&``,
``||``, ``(`` or ``$(`` — and, as the task's command does (``setup_tools.py``: the last key
collects every remaining word), its words up to the next operator or redirection are the
question. ``echo ask_human`` or ``which ask_human`` ask nothing. Only the first
``SCAN_CHARS`` characters of a command are read, here and in the database alike.
"""

from __future__ import annotations

import re
import shlex

ASK = "ask_human"
# Where a shell step keeps its command text (terminus-2: keystrokes), in this order.
COMMAND_KEYS = ("keystrokes", "command", "cmd")
SCAN_CHARS = 20_000
_PUNCTUATION = ";&|()\n"  # what separates commands (a word of these alone is an operator)
_REDIRECTION = re.compile(r"^\d*(<|>)")


def tool_question(step: dict) -> str:
    """The question of an ``ask_human`` tool step."""
    asked = step.get("tool_input")
    if isinstance(asked, dict):
        asked = asked.get("question")
    return str(asked or "")


def command_text(step: dict) -> str | None:
    """The shell command a tool step ran, or None: its input when that is text, else the
    first of ``COMMAND_KEYS`` that holds text."""
    tool = step.get("tool")
    if not isinstance(tool, str) or not tool or tool == ASK:
        return None
    tool_input = step.get("tool_input")
    if isinstance(tool_input, str):
        return tool_input
    if isinstance(tool_input, dict):
        for key in COMMAND_KEYS:
            if isinstance(tool_input.get(key), str):
                return tool_input[key]
    return None


def _words(text: str) -> list[str]:
    for ending in ("", '"', "'"):  # a command typed with its quote still open
        lexer = shlex.shlex(text + ending, posix=True, punctuation_chars=_PUNCTUATION)
        lexer.whitespace = " \t\r"
        lexer.whitespace_split = True
        try:
            return list(lexer)
        except ValueError:
            continue
    return text.split()


def _is_operator(word: str) -> bool:
    return bool(word) and set(word) <= set(_PUNCTUATION)


def shell_questions(text: str) -> list[str]:
    """The questions ``text`` (a shell command) asks with the ``ask_human`` command."""
    text = text[:SCAN_CHARS]
    if ASK not in text:
        return []
    questions: list[str] = []
    words = _words(text)
    start = True
    for index, word in enumerate(words):
        if _is_operator(word):  # ``x=$(ask_human …)`` splits as ``x=$``, ``(``, ``ask_human``
            start = True
            continue
        if start and word.rsplit("/", 1)[-1] == ASK:
            asked = []
            for argument in words[index + 1 :]:
                if _is_operator(argument) or _REDIRECTION.match(argument):
                    break
                asked.append(argument)
            questions.append(" ".join(asked))
        start = False
    return questions


def step_questions(step: dict) -> list[str]:
    """Every question the step asks with ``ask_human``, in order (none for most steps)."""
    if step.get("tool") == ASK:
        return [tool_question(step)]
    text = command_text(step)
    return shell_questions(text) if text else []
