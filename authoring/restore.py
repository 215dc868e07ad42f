"""Restoring an earlier revision: a save whose content is that revision's.

History stays append-only: a restore never deletes or rewrites a revision, it makes the next
one, equal in content to the one restored, with the reason "restored revision N". It is a
save in every other way: the same editor rule, row lock and stale-form refusal as a
workspace save, the lint findings computed and stored with it, and what every new revision
triggers (``revision_hooks``, review's "changed since you judged it") follows from
``task_edit`` as for any save.
"""

from typing import Any

from django.db import transaction

from authoring import checks, drafts
from hilbench_annotate.access import access_task
from hilbench_annotate.errors import DomainError, StaleVersion
from hilbench_annotate.models import Revision
from hilbench_annotate.services import TaskChanges, task_edit, task_snapshot
from hilbench_annotate.services.blockers import registry_problems
from hilbench_annotate.services.tasks import EDITABLE_ENV_FIELDS, task_require_editable
from hilbench_annotate.vocabulary import Domain


@transaction.atomic
def revision_restore(*, actor, task_id: int, number: int, expected_version: int) -> Revision:
    """Make the task's content revision ``number``'s again, as a new revision.

    ``actor`` must be able to edit the task (its author or a lead; 403 otherwise, 404 when
    they cannot see it). Refused, storing nothing, when the task is not editable (in review,
    approved…), the revision does not exist, the task moved past ``expected_version`` since
    the page was loaded (409), the restored registry is no longer valid, or the task already
    holds that content.
    """
    task = access_task(actor, task_id, for_update=True, edit=True)
    task_require_editable(task)
    if task.version != expected_version:
        raise StaleVersion(expected=expected_version, current=task.version)
    source = Revision.objects.filter(task=task, number=number).only("snapshot", "number").first()
    if source is None:
        raise DomainError(f"The task has no revision {number}.")
    current = task_snapshot(task)
    rows = dict(task.blockers.values_list("key", "pk"))
    draft = _draft_of(source.snapshot, current, rows)
    if current["title"] == draft["title"] and drafts.comparable(current) == drafts.comparable(
        draft
    ):
        raise DomainError(
            f"Nothing to restore: the task already holds revision {number}'s content."
        )
    problems = registry_problems(domain=task.domain, blockers=draft["blockers"])
    if problems:
        raise DomainError(f"Revision {number} cannot be restored: " + "; ".join(problems))
    if task.domain == Domain.SWE and draft["environment"].get("setup_patch"):
        escaping = checks.setup_patch_problems(
            task.swe_environment, draft["environment"]["setup_patch"]
        )
        if escaping:
            raise DomainError("The setup patch is refused: " + "; ".join(escaping))
    findings = checks.as_dicts(checks.draft_findings(task, draft))
    env_fields = EDITABLE_ENV_FIELDS[task.domain]
    return task_edit(
        task=task,
        actor=actor,
        expected_version=expected_version,
        changes=TaskChanges(
            title=draft["title"],
            blocked_spec=draft["blocked_spec"],
            environment={
                k: draft["environment"][k] for k in env_fields if k in draft["environment"]
            },
            blockers=draft["blockers"],
        ),
        reason=f"restored revision {number}",
        event="revision_restored",
        lint_findings=findings,
        restored=number,
        errors=sum(1 for f in findings if f["severity"] == "error"),
    )


def _draft_of(
    snapshot: dict[str, Any], current: dict[str, Any], rows: dict[str, int]
) -> dict[str, Any]:
    """Revision ``snapshot`` as a workspace draft of the task as it is now: its editable
    environment fields over the current environment (what an author cannot edit — the
    database, the repository — is not a revision's to restore), its blockers keeping the
    rows (``rows``: id -> pk) of the current blockers with the same id, so what hangs off
    a blocker row stays."""
    env_fields = EDITABLE_ENV_FIELDS.get(current["domain"], ())
    environment = dict(current.get("environment") or {})
    old_env = snapshot.get("environment") or {}
    environment.update({k: old_env[k] for k in env_fields if k in old_env})
    return {
        "domain": current["domain"],
        "title": snapshot.get("title") or current["title"],
        "blocked_spec": snapshot.get("blocked_spec") or {},
        "environment": environment,
        "blockers": [{**b, "pk": rows.get(b["id"])} for b in snapshot.get("blockers", [])],
    }
