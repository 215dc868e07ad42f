"""The lint findings of saved task states, computed once per state and kept.

The key is a hash of what the findings depend on: the snapshot (but its version number and
status, which lint never reads), the task's database or repository, the lint rules' own
source code and their settings — a change to any of them is a new key, so a cached result
is never stale. Findings that come from the machine rather than the task (an edit script
refused for want of disk, an unreadable database) are returned but not kept.
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import Any

from django.conf import settings

from hilbench_annotate import question_rules
from hilbench_annotate.models import Task
from hilbench_annotate.toolkit import patches, sqlconsole, sqlsyntax

from . import checks, lint
from .models import LintResult

# Environment findings that say something about this machine, not about the task.
NOT_KEPT = {"edit_script", "database_unreadable", "setup_patch"}


@functools.cache
def rules_version() -> str:
    """A hash of the lint rules' source and settings (read once per process)."""
    digest = hashlib.sha256()
    sources = [
        *sorted(Path(lint.__file__).parent.glob("*.py")),
        Path(checks.__file__),
        Path(question_rules.__file__),
        Path(patches.__file__),
        Path(sqlconsole.__file__),
        Path(sqlsyntax.__file__),
    ]
    for source in sources:
        digest.update(source.read_bytes())
    digest.update(
        repr((settings.LINT_DUPLICATE_SIMILARITY, settings.LINT_OVERLAP_SIMILARITY)).encode()
    )
    return digest.hexdigest()


def _key(task: Task, snapshot: dict[str, Any]) -> str:
    state = {k: v for k, v in snapshot.items() if k not in ("version", "status")}
    # The database is in the snapshot (its sha256); a repository is named by its mirror.
    resource = task.swe_environment.repository_id if task.domain == "swe" else None
    text = json.dumps([rules_version(), state, resource], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def snapshot_findings(tasks: list[Task], snapshots: dict[int, dict]) -> dict[int, list[dict]]:
    """Task id -> the lint findings (as dicts) of its snapshot, from the cache where the same
    state was linted before; the others are linted now and kept."""
    keys = {task.pk: _key(task, snapshots[task.pk]) for task in tasks}
    cached = dict(
        LintResult.objects.filter(key__in=set(keys.values())).values_list("key", "findings")
    )
    found: dict[int, list[dict]] = {}
    new: dict[str, list[dict]] = {}
    for task in tasks:
        key = keys[task.pk]
        if key in cached or key in new:
            found[task.pk] = cached.get(key, new.get(key))
            continue
        findings = checks.as_dicts(checks.draft_findings(task, snapshots[task.pk]))
        found[task.pk] = findings
        if not any(f["rule"] in NOT_KEPT for f in findings):
            new[key] = findings
    LintResult.objects.bulk_create(
        [LintResult(key=key, findings=findings) for key, findings in new.items()],
        ignore_conflicts=True,  # another worker linted the same state meanwhile
    )
    return found
