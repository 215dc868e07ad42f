"""Restoring an earlier revision: a new revision with its content, under a save's rules."""

import pytest
from django.http import Http404
from django.urls import reverse

from authoring import drafts
from authoring.restore import revision_restore
from hilbench_annotate import revision_hooks
from hilbench_annotate.errors import AccessDenied, DomainError, StaleVersion
from hilbench_annotate.models import Revision, Task
from hilbench_annotate.services import TaskChanges, task_edit, task_snapshot
from tests.review.test_api import clean_task, place

pytestmark = pytest.mark.django_db


def _edit(task, actor):
    """Revision 2: a new question, the first blocker's resolution changed, the last removed."""
    task.refresh_from_db()
    snapshot = task_snapshot(task)
    pks = dict(task.blockers.values_list("key", "pk"))
    blockers = [{**b, "pk": pks[b["id"]]} for b in snapshot["blockers"][:-1]]
    blockers[0] = {**blockers[0], "resolution": "Loans settled cleanly have status 'C'."}
    task_edit(
        task=task,
        actor=actor,
        expected_version=task.version,
        changes=TaskChanges(
            blocked_spec={"question": "How many loans ended well?", "evidence": ""},
            blockers=blockers,
        ),
    )
    task.refresh_from_db()
    return task


@pytest.fixture
def edited(project, author):
    return _edit(clean_task(project, author, title="Loans settled cleanly"), author)


def test_restore_makes_a_new_revision_equal_to_the_old_one(edited, author):
    first = Revision.objects.get(task=edited, number=1)
    second = Revision.objects.get(task=edited, number=2)
    kept_pk = edited.blockers.get(key="clean_finish_status").pk

    restored = revision_restore(
        actor=author, task_id=edited.pk, number=1, expected_version=edited.version
    )

    assert restored.number == 3
    assert restored.reason == "restored revision 1"
    assert drafts.comparable(restored.snapshot) == drafts.comparable(first.snapshot)
    edited.refresh_from_db()
    assert edited.blocked_spec["question"] == "How many loans were settled cleanly?"
    assert edited.blockers.count() == 3
    # A blocker the restore keeps is the same row (what hangs off it stays).
    assert edited.blockers.get(key="clean_finish_status").pk == kept_pk
    # Append-only: nothing before it changed or went away.
    assert Revision.objects.get(pk=first.pk).snapshot == first.snapshot
    assert Revision.objects.get(pk=second.pk).snapshot == second.snapshot
    assert list(edited.revisions.order_by("number").values_list("number", flat=True)) == [1, 2, 3]
    event = edited.events.get(kind="revision_restored")
    assert event.data["restored"] == 1 and event.data["revision"] == 3
    assert event.actor == author
    # Linted as a save is: the findings of the restored content are stored with it.
    assert isinstance(restored.lint_findings, list)
    assert "errors" in event.data


def test_a_restore_runs_what_every_save_triggers(
    edited, author, monkeypatch, django_capture_on_commit_callbacks
):
    seen = []
    monkeypatch.setitem(revision_hooks._HOOKS, "restore_test", seen.append)
    with django_capture_on_commit_callbacks(execute=True):
        restored = revision_restore(
            actor=author, task_id=edited.pk, number=1, expected_version=edited.version
        )
    assert restored.pk in seen


def test_a_restore_on_a_task_changed_since_the_page_was_loaded_is_refused(edited, author):
    loaded = edited.version
    _edit(edited, author)  # someone saved meanwhile (revision 3)
    with pytest.raises(StaleVersion):
        revision_restore(actor=author, task_id=edited.pk, number=1, expected_version=loaded)
    assert edited.revisions.count() == 3


def test_only_who_may_edit_restores(edited, reviewer, auditor, lead, outsider):
    for user in (reviewer, auditor):
        with pytest.raises(AccessDenied):
            revision_restore(
                actor=user, task_id=edited.pk, number=1, expected_version=edited.version
            )
    with pytest.raises(Http404):
        revision_restore(
            actor=outsider, task_id=edited.pk, number=1, expected_version=edited.version
        )
    assert edited.revisions.count() == 2
    # A lead may, as they may edit.
    revision_restore(actor=lead, task_id=edited.pk, number=1, expected_version=edited.version)
    assert edited.revisions.count() == 3


def test_restore_refusals_say_why(edited, author):
    with pytest.raises(DomainError, match="no revision 9"):
        revision_restore(actor=author, task_id=edited.pk, number=9, expected_version=edited.version)
    with pytest.raises(DomainError, match="already holds revision 2"):
        revision_restore(actor=author, task_id=edited.pk, number=2, expected_version=edited.version)
    place(edited, 3)
    with pytest.raises(DomainError, match="can be edited only as a draft"):
        revision_restore(actor=author, task_id=edited.pk, number=1, expected_version=edited.version)
    assert edited.revisions.count() == 2


def test_the_history_page_restores_and_hides_the_button_from_readers(
    client, edited, author, reviewer
):
    url = reverse("workspace-revisions", args=[edited.pk])
    client.force_login(reviewer)
    assert b"Restore revision 1" not in client.get(f"{url}?a=1&b=2").content
    client.force_login(author)
    page = client.get(f"{url}?a=1&b=2").content.decode()
    assert "Restore revision 1" in page and 'id="restore-1"' in page

    restore = reverse("workspace-revision-restore", args=[edited.pk])
    response = client.post(restore, {"number": "1", "expected_version": str(edited.version)})
    assert response.status_code == 302 and response.url.endswith("?a=2&b=3")
    assert Task.objects.get(pk=edited.pk).revisions.count() == 3
    page = client.get(response.url).content.decode()
    assert "Restored revision 1 as revision 3" in page

    # The same form again is stale: refused with a message, nothing stored.
    response = client.post(
        restore, {"number": "1", "expected_version": str(edited.version)}, follow=True
    )
    assert "Revision 1 was not restored" in response.content.decode()
    assert "changed this task since you opened it" in response.content.decode()
    assert Task.objects.get(pk=edited.pk).revisions.count() == 3
    # Bad input is a message, never a 500.
    response = client.post(restore, {"number": "x", "expected_version": "-1"}, follow=True)
    assert response.status_code == 200 and "Not restored" in response.content.decode()
