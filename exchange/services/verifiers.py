"""A task folder's own verifier: who may accept it, and what accepting it changes.

A release folder may carry ``<mode>/tests/`` of its own. A run never lets it score until a
reviewer accepted it (``exchange/bundles/trial_files.py``): the acceptance names the uploaded
files' fingerprint, so an edit of them needs a new one. Accepting is an environment audit's
decision: an auditor or a lead of the project, never the task's author.
"""

from __future__ import annotations

from django.db import transaction

from exchange.bundles.trial_files import tests_fingerprint, uploaded_tests
from exchange.models import ReleaseFile, VerifierAcceptance
from hilbench_annotate.access import access_task, require_role
from hilbench_annotate.errors import AccessDenied, DomainError
from hilbench_annotate.services import task_event
from hilbench_annotate.vocabulary import Role


def task_uploaded_tests(task) -> dict[str, bytes]:
    """The task's own verifier files (``<mode>/tests/…``) as it was imported."""
    rows = ReleaseFile.objects.filter(task=task, path__regex=r"^[a-z_]+/tests/").values_list(
        "path", "content"
    )
    return uploaded_tests({path: bytes(content) for path, content in rows})


# What a reviewer reads whole on the task page: a verifier with more cannot be accepted.
MAX_REVIEWED_BYTES = 64 << 10
_CONTROL = {chr(c) for c in range(32)} - {"\t", "\n", "\r"} | {"\x7f"}
_BIDI = set("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f")


def unreviewable(tests: dict[str, bytes]) -> str | None:
    """Why a reviewer could not read these files whole, as the panel shows them; None."""
    for path, content in sorted(tests.items()):
        if len(content) > MAX_REVIEWED_BYTES:
            return f"{path} is larger than {MAX_REVIEWED_BYTES // 1024} KiB"
        try:
            text = content.decode("utf-8")
        except UnicodeDecodeError:
            return f"{path} is not UTF-8 text"
        if set(text) & (_CONTROL | _BIDI):
            return f"{path} holds control or direction characters that hide what it does"
    return None


def verifier_accept(*, actor, task_id: int) -> VerifierAcceptance:
    """Accept the task's own verifier as it is now: its reward scores the task's trials."""
    with transaction.atomic():
        task = access_task(actor, task_id, for_update=True)
        require_role(actor, task.project, Role.AUDITOR, Role.LEAD, action="accept a verifier")
        if task.author_id == actor.pk:
            raise AccessDenied("The task's author cannot accept its own verifier.")
        tests = task_uploaded_tests(task)
        if not tests:
            raise DomainError("This task carries no verifier of its own.")
        problem = unreviewable(tests)
        if problem:
            raise DomainError(f"This verifier cannot be accepted: {problem}.")
        acceptance, _ = VerifierAcceptance.objects.get_or_create(
            task=task, fingerprint=tests_fingerprint(tests), defaults={"accepted_by": actor}
        )
        task_event(
            task=task, actor=actor, kind="verifier_accepted", fingerprint=acceptance.fingerprint
        )
    return acceptance


def verifier_acceptance_withdraw(*, actor, task_id: int) -> None:
    """Withdraw every acceptance of the task's own verifier: the generated one scores again."""
    with transaction.atomic():
        task = access_task(actor, task_id, for_update=True)
        require_role(actor, task.project, Role.AUDITOR, Role.LEAD, action="withdraw it")
        deleted, _ = VerifierAcceptance.objects.filter(task=task).delete()
        if not deleted:
            raise DomainError("The task's own verifier is not accepted.")
        task_event(task=task, actor=actor, kind="verifier_acceptance_withdrawn")
