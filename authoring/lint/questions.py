"""Rules over one trigger question: it stands on its own (not self-referential), asks one
thing, is phrased as an open question, and does not give away the resolution.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from hilbench_annotate.question_rules import (
    explicit_question_parts,
    quoted_phrases,
    reject_reason,
    term_stems,
)
from hilbench_annotate.task_text import TaskText, task_text_reason

from .draft import DraftBlocker
from .findings import ERROR, WARNING, Finding
from .literals import Known, distinctive
from .text import contains_phrase, normalise

_SELF_REFERENCE = re.compile(
    r"\b(?:"
    r"(?:this|the|that|these|each|every|other) blockers?"
    r"|(?:this|that|the) (?:information )?gap(?!\s+(?:between|of|in|size|length|width)\b)"
    r"|(?:this|that|the) ambiguity"
    r"|the above\b|above[- ]mentioned|mentioned above|described above|stated above"
    r"|(?:the|this) registry"
    r"|as described(?!\s+(?:in|by|under)\b)"
    r"|(?:the|this|that) (?:previous|preceding|earlier|last|other) questions?"
    r"|this (?:question|resolution)'s|this resolution"
    r")",
    re.IGNORECASE,
)


def check_self_referential(blocker: DraftBlocker, j: int, question: str) -> Iterator[Finding]:
    match = _SELF_REFERENCE.search(question)
    if match:
        yield Finding(
            "self_referential",
            blocker.question_field(j),
            f'{blocker.question_label(j)} refers to the registry ("{match[0]}") instead of the '
            "task; name the missing detail so the question stands on its own.",
            ERROR,
        )


def check_multi_topic(blocker: DraftBlocker, j: int, question: str) -> Iterator[Finding]:
    """Several questions in one, by their explicit markers ("X? Y?", "X and also Y"): the
    judge refuses the message when they target different blockers (it splits further still:
    ``question_parts``), so this is a warning."""
    parts = explicit_question_parts(question)
    if len(parts) > 1:
        yield Finding(
            "multi_topic",
            blocker.question_field(j),
            f"{blocker.question_label(j)} asks {len(parts)} questions in one; the judge answers "
            '"irrelevant question" when they target different blockers, so keep to one topic '
            "(a follow-up on the same detail is fine).",
            WARNING,
        )


def check_not_a_question(blocker: DraftBlocker, j: int, question: str) -> Iterator[Finding]:
    """What the judge turns away whatever the blockers are (``reject_reason``): statements,
    confirmations, broad questions, too short ones."""
    reason = reject_reason(question)
    if reason is not None:
        yield Finding(
            "not_a_question",
            blocker.question_field(j),
            f'{blocker.question_label(j)}: the judge answers "irrelevant question" to it '
            f"({reason}); ask an open question about the missing detail instead.",
            ERROR,
        )


def check_names_nothing(blocker: DraftBlocker, j: int, question: str) -> Iterator[Finding]:
    """A trigger question made only of frame words ("What value should be used?") shows the
    judge nothing to recognise; an agent asking it is refused as vague. A warning: as a
    trigger, its own words are the registry's, so the judge does not refuse it."""
    if (
        reject_reason(question) is None
        and not term_stems(question)
        and not (quoted_phrases(question))
    ):
        yield Finding(
            "names_nothing",
            blocker.question_field(j),
            f"{blocker.question_label(j)} names nothing of the task (only words every "
            "clarifying question has); name the term, column or identifier it asks about, as "
            "an agent's question must to be answered.",
            WARNING,
        )


def check_echoes_task_text(
    blocker: DraftBlocker, j: int, question: str, text: TaskText
) -> Iterator[Finding]:
    """A trigger question built from the task's own text (a definition request of one of its
    terms, its text asked back): the judge turns an agent's question of that shape away, as
    the release's judge does, so it is a misleading example. A warning."""
    if reject_reason(question) is not None:
        return
    reason = task_text_reason(question, text)
    if reason is not None:
        yield Finding(
            "echoes_task_text",
            blocker.question_field(j),
            f'{blocker.question_label(j)}: the judge answers "irrelevant question" to an '
            f"agent asking it this way ({reason}); ask for the missing detail itself — the "
            "threshold, the date range, the column — rather than what a phrase means.",
            WARNING,
        )


def check_contains_resolution(
    blocker: DraftBlocker, j: int, question: str, known: Known
) -> Iterator[Finding]:
    label = blocker.question_label(j)
    resolution = normalise(blocker.resolution)
    if len(resolution) >= 3 and contains_phrase(normalise(question), resolution):
        yield Finding(
            "contains_resolution",
            blocker.question_field(j),
            f"{label} contains the whole resolution; ask for it instead of stating it.",
            ERROR,
        )
        return
    # Names written as code (``_encoder``, ``set_run_state_for_host``) are left out: asking
    # "should I pass _encoder?" is how one asks about an API, and the question is not shown
    # to the agent. The values a question holds are worth a second look.
    leaked = [
        lit.text
        for lit in distinctive(blocker.resolution, blocker.description, known)
        if lit.kind != "identifier" and lit.found_in(question)
    ]
    if leaked:
        # Naming a candidate value is how people ask which one applies ("gigabytes or
        # gibibytes?"); it gives the answer away only with the whole resolution (above).
        yield Finding(
            "contains_resolution",
            blocker.question_field(j),
            f"{label} names the resolution's {_quote_list(leaked)}; make sure it asks which "
            "value applies rather than stating the answer.",
            WARNING,
        )


def _quote_list(values: Iterable[str]) -> str:
    return ", ".join(f'"{v}"' for v in values)
