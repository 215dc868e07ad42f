"""The entry point, ``lint_task``: reads a draft once and runs every rule over it, returning
the findings deduplicated and in a stable order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from hilbench_annotate.task_text import TaskText

from .blockers import (
    check_blocker_count,
    check_criteria,
    check_duplicates,
    check_empty,
    check_overlap,
    check_trigger_count,
)
from .draft import draft_blockers, known_identifiers
from .findings import Finding
from .gold_relation import check_resolutions_on_gold
from .leaks import agent_surfaces, check_leak
from .literals import Known, resolution_literals
from .questions import (
    check_contains_resolution,
    check_echoes_task_text,
    check_multi_topic,
    check_names_nothing,
    check_not_a_question,
    check_self_referential,
)
from .sql import check_gold_sql
from .text import as_mapping, as_text, clean_question, natural_key


def lint_task(
    draft: Mapping,
    *,
    schema: Mapping[str, set[str]] | None = None,
    repository_names: Iterable[str] | None = None,
    similarity_threshold: float = 0.85,
    overlap_threshold: float = 0.6,
) -> list[Finding]:
    """Every finding for a draft, sorted by field then rule (stable for the UI and waivers).

    ``schema`` maps lowercased table names to their lowercased column names (SQL only);
    ``None`` means unknown, so gold SQL is parsed but its names are not checked.
    ``repository_names`` (SWE): the names of the repository at the base commit that the
    resolutions use (``authoring.checks.repository_names``); ``None`` when there is none.
    Names of either are identifiers the agent reads, never a leaked value.
    """
    draft = as_mapping(draft)
    environment = as_mapping(draft.get("environment"))
    blockers = draft_blockers(draft)
    surfaces = agent_surfaces(draft)
    known = Known(
        *known_identifiers(draft, schema, repository_names),
        tuple(sentence for surface in surfaces for sentence in surface.sentences()),
    )

    # The task's text as the judge reads it: the blocked specification and business info.
    task_text = TaskText.of(
        "\n".join(s.text for s in surfaces if not s.key.startswith("descriptions/"))
    )
    findings: list[Finding] = list(check_blocker_count(blockers))
    cleaned: dict[tuple[int, int], str] = {}
    for blocker in blockers:
        findings += check_trigger_count(blocker)
        findings += check_empty(blocker)
        findings += check_criteria(blocker)
        findings += check_leak(blocker, surfaces, known)
        for j, raw in enumerate(blocker.questions):
            question = clean_question(raw)
            if not question:
                continue
            cleaned[(blocker.index, j)] = question
            findings += check_self_referential(blocker, j, question)
            findings += check_multi_topic(blocker, j, question)
            findings += check_not_a_question(blocker, j, question)
            findings += check_names_nothing(blocker, j, question)
            findings += check_echoes_task_text(blocker, j, question, task_text)
            findings += check_contains_resolution(blocker, j, question, known)
    findings += check_duplicates(blockers, cleaned, similarity_threshold)
    findings += check_overlap(blockers, overlap_threshold)
    if as_text(draft.get("domain")).lower() == "sql":
        findings += check_gold_sql(environment, schema)
        findings += check_resolutions_on_gold(blockers, environment)

    unique = dict.fromkeys(findings)
    return sorted(unique, key=lambda f: (natural_key(f.field), f.rule, f.message))


def resolution_names(draft: Mapping) -> frozenset[str]:
    """The name-like values of a draft's resolutions (``_encoder``, ``'multipart_encoding'``):
    what a caller looks up in the repository to pass back as ``repository_names``."""
    return frozenset(
        lit.key
        for blocker in draft_blockers(as_mapping(draft))
        for lit, _says in resolution_literals(blocker.resolution)
        if lit.kind in ("quoted", "code", "identifier")
    )
