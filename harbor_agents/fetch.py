"""What a task folder's ``shared/FETCH.md`` says to fetch and where it goes, as one sentence.

A release task's data (its database, or the prebuilt image its agent's Dockerfile starts
from) is kept outside the bundle; the export writes ``shared/FETCH.md`` saying where it is
and where it goes. This sentence is what a trial started without it stops with (the
project's Harbor environment, ``environments.prepare_release_task``: the command line's
``MissingData``) and what an agent run's page shows for the same task, so both say the same.
Harbor-free: read by Harbor's process and by the app's.
"""

from __future__ import annotations

from pathlib import Path

FETCH = "shared/FETCH.md"
MAX_CHARS = 1000


def fetch_sentence(note: str) -> str:
    """The paragraph of a ``FETCH.md`` text that says what to fetch and where (its second;
    the first is its title), on one line, without Markdown's backquotes."""
    parts = note.split("\n\n", 2)
    return " ".join(parts[min(1, len(parts) - 1)].split())[:MAX_CHARS].replace("`", "")


def task_fetch_sentence(task: Path) -> str | None:
    """The sentence of the task folder ``task``'s ``FETCH.md``, or None when it has none."""
    path = Path(task) / FETCH
    if path.is_symlink() or not path.is_file():
        return None
    return fetch_sentence(path.read_text(errors="replace"))
