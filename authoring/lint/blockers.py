"""Rules over whole blockers and across them: blocker and trigger-question counts, empty
fields, quality-criteria attestation, near-duplicate trigger questions (within and across
blockers) and overlapping blockers.
"""

from __future__ import annotations

from collections.abc import Iterator

from hilbench_annotate.vocabulary import (
    MAX_BLOCKERS,
    MAX_TRIGGER_QUESTIONS,
    MIN_BLOCKERS,
    MIN_TRIGGER_QUESTIONS,
    QUALITY_CRITERIA_KEYS,
)

from .draft import DraftBlocker
from .findings import ERROR, WARNING, Finding
from .text import (
    as_mapping,
    as_text,
    clean_question,
    content_tokens,
    jaccard,
    normalise,
    similarity,
)


def check_blocker_count(blockers: list[DraftBlocker]) -> Iterator[Finding]:
    n = len(blockers)
    if not MIN_BLOCKERS <= n <= MAX_BLOCKERS:
        yield Finding(
            "blocker_count",
            "blockers",
            f"The task has {n} blocker{'s' if n != 1 else ''}; "
            f"register between {MIN_BLOCKERS} and {MAX_BLOCKERS}.",
            ERROR,
        )


def check_trigger_count(blocker: DraftBlocker) -> Iterator[Finding]:
    n = sum(1 for q in blocker.questions if clean_question(q))
    if not MIN_TRIGGER_QUESTIONS <= n <= MAX_TRIGGER_QUESTIONS:
        yield Finding(
            "trigger_count",
            blocker.field,
            f"Blocker {blocker.label} has {n} trigger question{'s' if n != 1 else ''}; "
            f"write between {MIN_TRIGGER_QUESTIONS} and {MAX_TRIGGER_QUESTIONS}.",
            ERROR,
        )


def check_empty(blocker: DraftBlocker) -> Iterator[Finding]:
    for part in ("description", "resolution"):
        if not getattr(blocker, part).strip():
            yield Finding(
                "empty_field",
                f"{blocker.field}.{part}",
                f"Blocker {blocker.label} has an empty {part}; fill it in.",
                ERROR,
            )
    for j, question in enumerate(blocker.questions):
        if not clean_question(question):
            yield Finding(
                "empty_field",
                blocker.question_field(j),
                f"{blocker.question_label(j)} is empty; write the question or remove it.",
                ERROR,
            )


def check_criteria(blocker: DraftBlocker) -> Iterator[Finding]:
    missing = []
    for key in QUALITY_CRITERIA_KEYS:
        attested = as_mapping(blocker.criteria.get(key))
        if not (attested.get("ok") is True and as_text(attested.get("note")).strip()):
            missing.append(key)
    if missing:
        yield Finding(
            "criteria_unattested",
            blocker.field,
            f"Blocker {blocker.label} does not attest {', '.join(missing)}; tick each "
            "criterion and add a one-line note.",
            WARNING,
        )


def check_duplicates(
    blockers: list[DraftBlocker], cleaned: dict[tuple[int, int], str], threshold: float
) -> Iterator[Finding]:
    """Near-duplicates in a blocker and across blockers, on the later one: warnings — a
    repeated phrasing wastes a trigger question but breaks nothing (the release's validated
    registries hold some).

    Each question is reported at most once per rule, against the first question it repeats.
    """
    items = sorted(cleaned.items())
    for n, ((bi, qi), question) in enumerate(items):
        reported: set[bool] = set()
        for (bj, qj), other in items[:n]:
            same = bi == bj
            if same in reported or similarity(other, question, threshold) < threshold:
                continue
            reported.add(same)
            score = similarity(other, question, threshold)
            blocker = blockers[bi]
            if same:
                yield Finding(
                    "near_duplicate",
                    blocker.question_field(qi),
                    f"{blocker.question_label(qi)} nearly repeats trigger question {qj + 1} "
                    f"(similarity {score:.2f}); vary the wording or ask from another angle.",
                    WARNING,
                )
            else:
                yield Finding(
                    "cross_blocker_duplicate",
                    blocker.question_field(qi),
                    f"{blocker.question_label(qi)} is nearly identical to trigger question "
                    f"{qj + 1} of blocker {blockers[bj].label} (similarity {score:.2f}); make "
                    "it target this blocker's gap so the judge can tell them apart.",
                    WARNING,
                )


def check_overlap(blockers: list[DraftBlocker], threshold: float) -> Iterator[Finding]:
    tokens = [content_tokens(b.description) for b in blockers]
    resolutions = [normalise(b.resolution) for b in blockers]
    for j, later in enumerate(blockers):
        for i, earlier in enumerate(blockers[:j]):
            if resolutions[j] and resolutions[i] == resolutions[j]:
                yield Finding(
                    "overlapping_blockers",
                    later.field,
                    f"Blockers {earlier.label} and {later.label} have the same resolution; "
                    "merge them or make each resolve its own gap.",
                    ERROR,
                )
                continue
            score = jaccard(tokens[i], tokens[j])
            if score >= threshold:
                yield Finding(
                    "overlapping_blockers",
                    later.field,
                    f"The descriptions of blockers {earlier.label} and {later.label} overlap "
                    f"({score:.0%} shared words); check that each is an independent gap.",
                    WARNING,
                )
