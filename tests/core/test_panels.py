"""The task page shows what the apps above core own through the panels they register
(hilbench_annotate/panels.py), never by reading their models itself."""

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from hilbench_annotate import panels
from hilbench_annotate.services.tasks import revision_create
from review.models import Comment
from validators.models import ValidationResult, ValidationRun

from ..factories import TaskFactory

pytestmark = pytest.mark.django_db


def _run_and_threads(task, author, n: int) -> None:
    revision = revision_create(task=task, actor=author, reason="imported")
    run = ValidationRun.objects.create(task=task, revision=revision, checks=["spec"])
    for i in range(n):
        ValidationResult.objects.create(
            run=run, group="spec", check_name=f"check_{i}", outcome="passed", message="fine"
        )
        thread = Comment.objects.create(task=task, author=author, body=f"Thread {i}")
        for j in range(n):
            Comment.objects.create(task=task, author=author, parent=thread, body=f"Reply {i}.{j}")


def _page(client, task) -> tuple[str, int]:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(reverse("task-detail", args=[task.pk]))
    assert response.status_code == 200
    return response.content.decode(), len(queries.captured_queries)


def test_the_validators_and_review_panels_show_on_the_task_page_in_fixed_queries(
    client, project, author
):
    client.force_login(author)
    small = TaskFactory(project=project, author=author)
    _run_and_threads(small, author, 1)
    big = TaskFactory(project=project, author=author)
    _run_and_threads(big, author, 6)

    added = panels.task_panels(task=big, user=author, page={"task": big})
    assert added["panels"] == [
        "validators/_environment_panel.html",
        "validators/_task_panel.html",
        "exchange/_verifier_panel.html",  # empty: these tasks carry no verifier of their own
        "review/_threads.html",
    ]
    assert added["validation_run"].task_id == big.pk
    assert [t.body for t in added["threads"]] == [f"Thread {i}" for i in range(6)]

    _body, few = _page(client, small)
    body, many = _page(client, big)
    assert many == few  # the panels' queries do not grow with results, threads or replies
    assert "spec · check_5" in body and "Reply 5.5" in body
    checks, threads, revisions = (
        body.index('id="validation"'),
        body.index('id="threads"'),
        body.index("<h2>Revisions</h2>"),
    )
    assert checks < threads < revisions


def test_a_panel_may_not_hide_a_name_the_page_or_another_panel_gives(monkeypatch, project):
    task = TaskFactory(project=project)
    monkeypatch.setattr(panels, "_PANELS", {})
    panels.register_task_panel(
        "first", template="first.html", context=lambda **_: {"rows": 1}, position=1
    )
    assert panels.task_panels(task=task, user=None, page={"task": task}) == {
        "panels": ["first.html"],
        "rows": 1,
    }

    panels.register_task_panel(
        "second", template="second.html", context=lambda **_: {"rows": 2}, position=2
    )
    with pytest.raises(ImproperlyConfigured, match="'second' gives rows"):
        panels.task_panels(task=task, user=None, page={"task": task})
    with pytest.raises(ImproperlyConfigured, match="'first' gives rows"):
        panels.task_panels(task=task, user=None, page={"task": task, "rows": 0})


def test_the_task_page_shows_only_the_panels_registered(client, monkeypatch, project, author):
    """Core names no panel: without review's, the page has no threads and still renders."""
    task = TaskFactory(project=project, author=author)
    _run_and_threads(task, author, 1)
    client.force_login(author)
    monkeypatch.setattr(
        panels, "_PANELS", {k: v for k, v in panels._PANELS.items() if k != "threads"}
    )

    body, _queries = _page(client, task)

    assert 'id="validation"' in body and "spec · check_0" in body
    assert 'id="threads"' not in body and "Thread 0" not in body
