"""What an app does once a task's revision is saved (committed).

An app registers a hook from its ``AppConfig.ready`` (the judge: build the task's judge index
so its first question does not pay for it). ``revision_create`` schedules every hook with
the revision's id on commit, so a rolled-back save runs none; a hook only sends work off (a
Celery task sent on commit), it never writes in the saving transaction.
"""

from __future__ import annotations

from collections.abc import Callable

from django.db import transaction

RevisionHook = Callable[[int], None]

_HOOKS: dict[str, RevisionHook] = {}


def register_revision_hook(name: str, hook: RevisionHook) -> None:
    """Register (or, on a second ``ready``, replace) the hook ``name``."""
    _HOOKS[name] = hook


def revision_saved(revision_id: int) -> None:
    """Schedule every registered hook for ``revision_id`` once the transaction commits."""
    for hook in _HOOKS.values():
        transaction.on_commit(lambda hook=hook: hook(revision_id))
