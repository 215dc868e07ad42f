"""What the judge must turn away, as measurement sets: vague questions sent blind to every
task, and messages that join questions of different blockers.

The vague questions name nothing of any task — only the frame every clarifying question has
(a value, a column, a threshold, a default). Three sets, each written by us before it was
measured: ``VAGUE_A`` while the judge's rule was written, ``VAGUE_B`` after ``VAGUE_A`` had
been measured (the frame words grew from what it let through), ``VAGUE_C`` after that (the
common verbs and adverbs it let through — "has", "wins", "controls" — joined the frame
words), and ``VAGUE_D`` last, never used to change the rule. The model is also fitted with
``VAGUE_A`` and ``VAGUE_B`` as negatives (``training.TRAIN_NEGATIVES``): ``VAGUE_C``,
``VAGUE_D`` and the reported ones are what measures it. An agent harvesting resolutions sends
such questions to every task; ``vague_harvest`` counts the tasks that answer any of them.

Small registries (``small_registries``): the calibration data holds registries of 3 to 5
blockers only; a task of one or two blockers is what the judge was never fitted on. Each
calibration blocker alone (its first trigger question asked verbatim, kept in the registry and
left out of it; a sibling blocker's and another task's question, which it must not answer),
and beside one sibling (the first trigger left out).

Joined messages (``joined_messages``): two or three trigger questions of different blockers of
one task, held out of its registry, joined the ways an agent would (", and", " and ", "; ",
" / ", "1) … 2) …", one per line, "Q1? Q2?"). The release rejects every message that touches
several topics; ``joined_answered`` counts those answered.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence

from .base import RegistryBlocker

VAGUE_A = (
    "What threshold value is expected here?",
    "Which value should the filter compare against?",
    "What columns does the query need?",
    "What is the default?",
    "What does the function need to return exactly?",
    "Which formula applies?",
    "What are the exact requirements for this?",
    "Which time window should the query cover?",
    "What number should I put there?",
    "How should the output be formatted?",
    "What should the method return when it fails?",
    "Which parameter name is expected?",
    "What is the minimum value allowed?",
    "What years should be included?",
    "How do I calculate the metric?",
    "Which table holds the data I need?",
    "How should ties be broken?",
    "What should be returned if the input is empty?",
    "What error message should be shown?",
    "Which option should win when both are set?",
    "What is the right cutoff date?",
    "How many decimal places should the answer have?",
    "Which rows should be excluded?",
    "What value counts as high?",
    "What does the term mean in this context?",
    "Which identifier should be used?",
    "What size limit applies?",
    "What is the correct order of the results?",
    "What status code should be returned?",
    "Which category should be used?",
    "What is the expected return type?",
    "How should duplicates be treated?",
    "What is the maximum length?",
    "Which version of the behavior is correct?",
    "What interval should be used?",
)
VAGUE_B = (
    "What's the cutoff?",
    "Which value is right?",
    "How should I handle missing data?",
    "What should I filter by?",
    "What is the expected result?",
    "Which columns matter for this?",
    "What limit should be enforced?",
    "Which dates should be considered?",
    "What should the output look like?",
    "How should the function behave on invalid input?",
    "What value should the constant have?",
    "Which fields are required?",
    "What is the correct threshold for this?",
    "How far back should the data go?",
    "What counts as a match?",
    "Which rule should take priority?",
    "What should the return value be?",
    "What should I name the new function?",
    "Which argument should be passed?",
    "How should the values be compared?",
    "What does high mean here?",
    "What is the target number?",
    "Which time frame is intended?",
    "What's the maximum value?",
    "Which records should be counted?",
    "How should I group the results?",
    "Which status should be excluded?",
    "What should happen when it times out?",
    "What percentage should be used?",
    "How should I break ties?",
)
VAGUE_C = (
    "Which value is correct here?",
    "What is the expected default?",
    "Can you tell me the cutoff to use?",
    "What figure should the query compare with?",
    "Which column has what I need?",
    "What time range applies?",
    "What's the correct output?",
    "How should the result be sorted?",
    "Which table is the right one?",
    "What should be the return value on error?",
    "How many results should come back?",
    "What numeric limit applies?",
    "What is considered too high?",
    "Which entries should be skipped?",
    "Which field identifies the record?",
    "What threshold defines the category?",
    "How precise should the number be?",
    "What is the intended behaviour?",
    "What does the requirement mean exactly?",
    "Which condition wins?",
    "What period is meant?",
    "What type should the value have?",
    "Which formula gives the right result?",
    "What is the acceptable range?",
    "How should the edge case be handled?",
    "Which name should be used?",
    "What should the default timeout be?",
    "Which rows count?",
    "What is the correct format for the date?",
    "Which parameter controls this?",
)
# Written last, after the frame words had grown from A, B and C, and never used to change them.
VAGUE_D = (
    "Which ones should I include?",
    "What value do you expect here?",
    "How should I compute it?",
    "Is there a specific threshold I should apply?",
    "What should the output contain?",
    "Which column is the correct one?",
    "When should the process stop?",
    "What date should be used as the cutoff?",
    "How should the result look?",
    "Which setting should be changed?",
    "What exactly counts?",
    "What is the expected value for this field?",
    "Which version is expected?",
    "How many should there be?",
    "What should the limit be set to?",
    "What is the rule here?",
    "How is it supposed to work?",
    "Which kind of value is expected?",
    "What should the name be?",
    "What's the right approach for the calculation?",
    "Which of the options is intended?",
    "What is the proper unit?",
    "How should I interpret the requirement?",
    "What should be done with the rest?",
    "Which is the primary one?",
    "What should the message say?",
    "How long should it wait?",
    "Which source is authoritative?",
    "What criteria should be met?",
    "What is the threshold for the metric?",
)
# The issue's own examples (answered on 6-26 of 195 release tasks by the judge before).
VAGUE_REPORTED = (
    "What threshold should I use?",
    "What values should I use?",
    "Which columns should I use?",
    "What default value should be used?",
    "What should the function return?",
    "What formula should I use?",
    "What are the requirements?",
    "What time period should I use?",
)
VAGUE_SETS = {
    "reported": VAGUE_REPORTED,
    "A": VAGUE_A,
    "B": VAGUE_B,
    "C": VAGUE_C,
    "D": VAGUE_D,
}

JOINERS = (", and ", " and ", "; ", " / ", "1) 2)", "newline", "? ")


def join(questions: Sequence[str], how: str) -> str:
    """``questions`` as one message, joined ``how`` (one of ``JOINERS``)."""
    questions = [q.strip() for q in questions]
    if how == "1) 2)":
        return " ".join(f"{n}) {q}" for n, q in enumerate(questions, 1))
    if how == "? ":
        return " ".join(q if q.endswith("?") else q + "?" for q in questions)
    if how == "newline":
        return "\n".join(questions)
    lower = how.strip(" ,") == "and"
    out = questions[0].rstrip("?")
    for position, question in enumerate(questions[1:], start=2):
        text = question[0].lower() + question[1:] if lower else question
        out += how + (text if position == len(questions) else text.rstrip("?"))
    return out


def _without(registry: Sequence[RegistryBlocker], dropped: set[str]) -> tuple:
    return tuple(
        RegistryBlocker(
            b.id,
            b.description,
            tuple(q for q in b.trigger_questions if q not in dropped),
            b.resolution,
            b.type,
        )
        for b in registry
    )


def joined_messages(task, rng: random.Random, draws: int = 3):
    """(joiner, message, registry without its questions) for ``draws`` pairs and ``draws``
    triples of trigger questions of different blockers of ``task`` (a ``CalibrationTask``)."""
    blockers = [b for b in task.registry if b.trigger_questions]
    for size in (2, 3):
        if len(blockers) < size:
            continue
        for _ in range(draws):
            chosen = rng.sample(blockers, size)
            questions = [rng.choice(b.trigger_questions) for b in chosen]
            registry = _without(task.registry, set(questions))
            for how in JOINERS:
                yield how, join(questions, how), registry


def joined_answered(judge, tasks, seed: int = 0) -> dict:
    """How many joined messages of ``tasks`` the judge answers, per joiner and in all."""
    rng = random.Random(seed)
    asked, answered = Counter(), Counter()
    for task in tasks:
        for how, message, registry in joined_messages(task, rng):
            verdict = judge.judge(message, list(registry), domain=task.domain, context=task.context)
            asked[how] += 1
            answered[how] += verdict.blocker_id is not None
    total = sum(asked.values())
    return {
        "messages": total,
        "answered": sum(answered.values()),
        "share": round(sum(answered.values()) / total, 4) if total else 0.0,
        "per_joiner": {how: f"{answered[how]}/{asked[how]}" for how in JOINERS if asked[how]},
    }


def vague_harvest(judge, tasks, questions: Sequence[str]) -> dict:
    """Each vague question sent to every task: the tasks that answer any, the share of
    tasks, and per question how many tasks answered it."""
    harvested, per_question = set(), Counter()
    for task in tasks:
        for question in questions:
            verdict = judge.judge(
                question, list(task.registry), domain=task.domain, context=task.context
            )
            if verdict.blocker_id is not None:
                harvested.add(task.name)
                per_question[question] += 1
    return {
        "tasks": len(tasks),
        "answering": len(harvested),
        "share": round(len(harvested) / len(tasks), 4) if tasks else 0.0,
        "answering_tasks": sorted(harvested),
        "questions": dict(per_question),
    }


def _dropped_first(blocker: RegistryBlocker) -> RegistryBlocker:
    return RegistryBlocker(
        blocker.id,
        blocker.description,
        tuple(blocker.trigger_questions[1:]),
        blocker.resolution,
        blocker.type,
    )


def small_registries(judge, tasks) -> dict:
    """Registries of one and two blockers made from ``tasks`` (``CalibrationTask``s): per
    blocker with a trigger question, how often its first one is matched against the blocker
    alone with that question kept (``kept``) and left out (``left_out``), and beside the next
    blocker of its task with it left out (``two_left_out``; ``two_wrong``: the sibling
    answered); how often the blocker alone answers its next sibling's first question
    (``sibling_answered``) and the first question of the next task of its domain
    (``other_answered``) — both wrong."""
    figures = Counter()
    per_domain: dict[str, Counter] = {}
    for position, task in enumerate(tasks):
        others = [t for t in tasks[position + 1 :] + tasks[:position] if t.domain == task.domain]
        other = next(
            (b.trigger_questions[0] for t in others for b in t.registry if b.trigger_questions),
            None,
        )
        blockers = [b for b in task.registry if b.trigger_questions]
        for n, blocker in enumerate(blockers):
            question = blocker.trigger_questions[0]
            left = _dropped_first(blocker)
            sibling = blockers[(n + 1) % len(blockers)] if len(blockers) > 1 else None

            def asked(text, registry, task=task):
                return judge.judge(
                    text, list(registry), domain=task.domain, context=task.context
                ).blocker_id

            found = Counter(blockers=1)
            found["kept"] = asked(question, [blocker]) == blocker.id
            found["left_out"] = asked(question, [left]) == blocker.id
            if sibling is not None:
                two = asked(question, [left, sibling])
                found["two_left_out"] = two == blocker.id
                found["two_wrong"] = two == sibling.id
                found["sibling_answered"] = (
                    asked(sibling.trigger_questions[0], [blocker]) is not None
                )
            if other is not None:
                found["other_answered"] = asked(other, [blocker]) is not None
            figures.update(found)
            per_domain.setdefault(task.domain, Counter()).update(found)
    names = ("blockers", "kept", "left_out", "two_left_out", "two_wrong")
    names += ("sibling_answered", "other_answered")
    return {
        **{name: figures[name] for name in names},
        "domains": {d: {name: c[name] for name in names} for d, c in sorted(per_domain.items())},
    }


# Questions about nothing in any task: the fitted model's generic negatives (GENERIC_TRAIN,
# ``judge.training``) and the measure's (GENERIC_TEST), never the same.
GENERIC_TRAIN = [
    "What is the capital of France?",
    "How do I install PostgreSQL on macOS?",
    "Which Python version does this container run?",
    "How long do I have to finish this task?",
    "What is the best practice for writing SQL joins?",
    "Any tips for debugging this kind of problem?",
    "How should I approach this task?",
    "Is there anything else I should know?",
    "Can you help me with this?",
    "Can I use pandas for this?",
    "Should I add comments to my code?",
    "Where can I find the documentation for git?",
    "What is your name?",
    "Is the internet available in this environment?",
    "How much memory does this machine have?",
    "Can you explain what a foreign key is?",
    "What editor should I use?",
    "Should I run the whole test suite or only some tests?",
    "How do I exit vim?",
    "Is it okay if I take a short break?",
]
GENERIC_TEST = [
    "What time zone are you in?",
    "Which operating system is this running on?",
    "What should I do?",
    "How would you solve this?",
    "What is the answer to the question?",
    "Is there any other information I need?",
    "Can I install extra packages with pip?",
    "Who wrote this task?",
    "What is the weather like today?",
    "How many CPU cores are available?",
    "Do you prefer tabs or spaces?",
    "Can you recommend a good book about databases?",
    "Is it fine to use an ORM here?",
    "How do I print something in Python?",
    "What does HTTP stand for?",
]
