"""What the task list's search reads of a task beyond core's own text, and how its words
are kept (``models.TaskSearchText``).

An app whose rows hold words people search a task by (review: comments and decisions)
registers a source from its ``AppConfig.ready``: ``source(task_ids) -> {task id: [text]}``,
one query for any number of tasks; and calls ``services.task_search_refresh`` after its own
writes of that text. Core reads none of the app's models.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

SearchSource = Callable[[list[int]], Mapping[int, list[str]]]

_SOURCES: dict[str, SearchSource] = {}

# A search reads at most this many words; more are ignored.
SEARCH_MAX_TERMS = 8
# SQLite's trigram full-text index of the search words (migration 0013_task_search_index).
SEARCH_INDEX = "hilbench_annotate_tasksearch_fts"


def register_search_source(name: str, source: SearchSource) -> None:
    """Register (or, on a second ``ready``, replace) the source ``name``."""
    _SOURCES[name] = source


def search_sources() -> list[SearchSource]:
    return list(_SOURCES.values())


def search_words(texts: Iterable[str]) -> str:
    """The texts' words, lowercased, each once in the order first seen, joined by spaces,
    with a space before the first and after the last: a term of a search is in it exactly
    when it is part of a word of one of the texts, " 97" when a word starts with it."""
    seen: dict[str, None] = {}
    for text in texts:
        if isinstance(text, str):
            for word in text.lower().split():
                seen.setdefault(word, None)
    return f" {' '.join(seen)} " if seen else ""


def search_terms(text: str) -> list[str]:
    """A search box's text as the terms that must each be found (lowercased, in order)."""
    return list(dict.fromkeys(text.lower().split()))[:SEARCH_MAX_TERMS]
