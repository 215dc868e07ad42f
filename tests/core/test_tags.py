"""Tags: set by a task's author or a lead, filter the task list and the API, select an export."""

import json

import pytest
from django.urls import reverse

from hilbench_annotate import services
from hilbench_annotate.errors import AccessDenied, DomainError
from hilbench_annotate.models import Task, TaskEvent
from tests.exchange.bundle_helpers import export, members, seed_demo

pytestmark = pytest.mark.django_db


def test_tags_set_normalise_and_record(project, author, lead, reviewer):
    from tests.factories import TaskFactory

    task = TaskFactory(project=project, author=author)
    version = task.version
    assert services.task_tags_set(
        task=task, actor=author, names=["Batch-3", "finance", "batch-3"]
    ) == [
        "batch-3",
        "finance",
    ]
    task.refresh_from_db()
    assert task.version == version  # metadata: no new revision, no version bump
    event = TaskEvent.objects.get(task=task, kind="tags_set")
    assert event.data["after"] == ["batch-3", "finance"]
    with pytest.raises(DomainError, match="Tag 'no spaces!'"):
        services.task_tags_set(task=task, actor=lead, names=["no spaces!"])
    with pytest.raises(AccessDenied):
        services.task_tags_set(task=task, actor=reviewer, names=["x"])
    services.task_tags_set(task=task, actor=lead, names=["finance"])
    assert list(task.tags.values_list("name", flat=True)) == ["finance"]


def test_task_list_and_api_filter_by_tag(client, project, author):
    from tests.factories import TaskFactory

    tagged, other = (
        TaskFactory(project=project, author=author),
        TaskFactory(project=project, author=author),
    )
    services.task_tags_set(task=tagged, actor=author, names=["batch-3"])
    client.force_login(author)
    page = client.get(reverse("task-list"), {"tag": "batch-3"}).content.decode()
    assert tagged.title in page and other.title not in page
    body = client.get("/api/tasks/", {"tag": "batch-3"}).json()
    assert [t["id"] for t in body["results"]] == [tagged.pk]
    assert body["results"][0]["tags"] == ["batch-3"]


def test_tags_page_form(client, project, author, reviewer):
    from tests.factories import TaskFactory

    task = TaskFactory(project=project, author=author)
    client.force_login(reviewer)
    assert client.post(reverse("task-tags", args=[task.pk]), {"tags": "x"}).status_code == 403
    client.force_login(author)
    response = client.post(
        reverse("task-tags", args=[task.pk]), {"tags": "release-1, sql"}, follow=True
    )
    assert "Tags: release-1, sql." in response.content.decode()
    assert sorted(task.tags.values_list("name", flat=True)) == ["release-1", "sql"]

    # A refused name: the page again, the field and its details open with what was typed.
    response = client.post(reverse("task-tags", args=[task.pk]), {"tags": "release-2 q&a finance"})
    assert response.status_code == 400
    page = response.content.decode()
    assert "Tag &#x27;q&amp;a&#x27;: use up to 40 letters" in page
    assert '<details class="tag-edit" open>' in page
    assert 'name="tags" value="release-2 q&amp;a finance"' in page
    assert sorted(task.tags.values_list("name", flat=True)) == ["release-1", "sql"]


def test_export_selects_by_tag(settings, tmp_path):
    project = seed_demo(settings, tmp_path)
    lead = project.memberships.get(role="lead").user
    first, second = Task.objects.filter(project=project, domain="sql").order_by("pk")[:2]
    services.task_tags_set(task=first, actor=lead, names=["release-1"])
    out = export(project, tmp_path / "tagged.tar.gz", tags=["release-1"])
    manifest = json.loads(members(out)["manifest.json"])
    assert [t["source_id"] for t in manifest["tasks"]] == [first.source_id]
    assert second.source_id not in json.dumps(manifest)
