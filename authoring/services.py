"""Writes of the authoring workspace: save (one revision), waive a finding, submit."""

from dataclasses import dataclass
from typing import Any

from django.db import transaction

from authoring import checks, drafts
from authoring.models import LintWaiver
from hilbench_annotate.access import require_role
from hilbench_annotate.errors import DomainError, StaleVersion
from hilbench_annotate.models import Revision, Task
from hilbench_annotate.services import (
    TaskChanges,
    revisions_close,
    task_edit,
    task_event,
    task_snapshot,
)
from hilbench_annotate.services.blockers import registry_problems
from hilbench_annotate.services.tasks import (
    EDITABLE_ENV_FIELDS,
    task_lock_for_editor,
    task_require_editable,
)
from hilbench_annotate.vocabulary import Domain, Role


@dataclass
class SaveResult:
    task: Task
    revision: Revision | None  # None when nothing had changed
    findings: list[dict[str, str]]


def _editable(task: Task) -> None:
    task_require_editable(task)


def _refuse_escaping_patch(task: Task, setup_patch: str) -> None:
    """A setup patch that writes outside the repository is never stored."""
    problems = checks.setup_patch_problems(task.swe_environment, setup_patch)
    if problems:
        raise DomainError("The setup patch is refused: " + "; ".join(problems))


@transaction.atomic
def workspace_save(
    *,
    task: Task,
    actor,
    expected_version: int,
    draft: dict[str, Any],
    session: str = "",
    autosave: bool = False,
) -> SaveResult:
    """Store the whole workspace as a revision, with its lint findings.

    Takes the task's row lock. A save made on an old version raises StaleVersion and stores
    nothing; a save that changes nothing makes no revision. An ``autosave`` from the
    workspace page ``session`` folds into that session's revision while it may
    (``revisions.revision_write``); an explicit save ends the session, also when it
    changed nothing. Every stored save moves the version, folded or not. ``actor`` must be
    the task's author or a lead (``task_lock_for_editor``: 404 hidden, 403 not theirs),
    whatever the view asked.
    """
    task_lock_for_editor(actor=actor, task=task)
    _editable(task)
    problems = registry_problems(domain=task.domain, blockers=draft["blockers"])
    if problems:  # before the findings are computed (task_edit checks it again)
        raise DomainError("; ".join(problems))
    if task.domain == Domain.SWE and draft["environment"].get("setup_patch"):
        _refuse_escaping_patch(task, draft["environment"]["setup_patch"])
    current = task_snapshot(task)
    if task.version != expected_version:
        # Checked before the unchanged shortcut so a stale form never passes silently.
        raise StaleVersion(expected=expected_version, current=task.version)
    findings = checks.as_dicts(checks.draft_findings(task, draft))
    if drafts.comparable(current) == drafts.comparable(draft):
        if session and not autosave:
            revisions_close(task_ids=[task.pk], session=session)
        return SaveResult(task=task, revision=None, findings=findings)
    env_fields = EDITABLE_ENV_FIELDS[task.domain]
    changes = TaskChanges(
        blocked_spec=draft["blocked_spec"],
        environment={k: draft["environment"][k] for k in env_fields if k in draft["environment"]},
        blockers=draft["blockers"],
    )
    revision = task_edit(
        task=task,
        actor=actor,
        expected_version=expected_version,
        changes=changes,
        reason="saved in workspace",
        event="workspace_saved",
        lint_findings=findings,
        session=session,
        autosave=autosave,
        errors=sum(1 for f in findings if f["severity"] == "error"),
    )
    return SaveResult(task=task, revision=revision, findings=findings)


def open_findings(task: Task, findings: list[dict[str, str]]) -> list[dict[str, str]]:
    """Errors not covered by a waiver: what blocks submission."""
    return open_findings_many({task.pk: findings})[task.pk]


def open_findings_many(findings: dict[int, list[dict[str, str]]]) -> dict[int, list[dict]]:
    """``open_findings`` of many tasks (task id -> findings), the waivers read at once."""
    waived: dict[int, set[str]] = {task_id: set() for task_id in findings}
    for task_id, fingerprint in LintWaiver.objects.filter(task_id__in=list(findings)).values_list(
        "task_id", "fingerprint"
    ):
        waived[task_id].add(fingerprint)
    return {
        task_id: [
            f for f in found if f["severity"] == "error" and f["fingerprint"] not in waived[task_id]
        ]
        for task_id, found in findings.items()
    }


# Findings the judge's recall depends on: many near-copies of one trigger phrasing lift the
# recall floor without a question the judge could not already match. The task's author may
# not waive them; a reviewer, auditor or lead of the project may.
JUDGE_CRITICAL_RULES = frozenset({"trigger_count", "near_duplicate", "cross_blocker_duplicate"})


def _require_waiver_right(task: Task, actor, fingerprint: str) -> None:
    rule = fingerprint.split("@", 1)[0]
    if rule not in JUDGE_CRITICAL_RULES:
        return
    if actor.pk == task.author_id:
        raise DomainError(
            f"A {rule.replace('_', ' ')} finding bears on the judge's recall: a reviewer, "
            "auditor or lead other than the task's author must waive it."
        )
    require_role(
        actor, task.project, Role.REVIEWER, Role.AUDITOR, Role.LEAD, action="waive this finding"
    )


@transaction.atomic
def lint_waive(*, task: Task, actor, fingerprint: str, reason: str) -> LintWaiver:
    """Waive a lint finding of the task: its editor only (``task_lock_for_editor``), and for
    a finding the judge's recall depends on, a reviewer, auditor or lead who is not its
    author."""
    task_lock_for_editor(actor=actor, task=task)
    _editable(task)
    _require_waiver_right(task, actor, fingerprint)
    reason = reason.strip()
    if len(reason) < 10:
        raise DomainError("Say why the finding does not apply (at least a short sentence).")
    waiver, _ = LintWaiver.objects.update_or_create(
        task=task, fingerprint=fingerprint, defaults={"reason": reason, "created_by": actor}
    )
    task_event(
        task=task,
        actor=actor,
        kind="lint_waived",
        fingerprint=fingerprint,
        reason=reason,
    )
    return waiver


@transaction.atomic
def lint_waiver_withdraw(*, task: Task, actor, fingerprint: str) -> None:
    task_lock_for_editor(actor=actor, task=task)
    _editable(task)
    LintWaiver.objects.filter(task=task, fingerprint=fingerprint).delete()
    task_event(
        task=task,
        actor=actor,
        kind="lint_waiver_withdrawn",
        fingerprint=fingerprint,
    )
