import io
import json
import tarfile
import zipfile

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from exchange.models import ImportJob
from exchange.tasks import import_job
from hilbench_annotate.models import Task

from ..factories import BlockerFactory, TaskFactory, TriggerQuestionFactory

pytestmark = pytest.mark.django_db


def _list_queries(client, url):
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url)
    assert response.status_code == 200
    return len(ctx.captured_queries)


def _seed(project, author, tasks: int, blockers_each: int):
    for _ in range(tasks):
        task = TaskFactory(project=project, author=author, blocker_count=blockers_each)
        for _ in range(blockers_each):
            TriggerQuestionFactory(blocker=BlockerFactory(task=task))
        TaskFactory(project=project, author=author, swe=True)


@pytest.mark.parametrize("url", [reverse("task-list"), reverse("api-task-list")])
def test_task_list_query_count_does_not_grow_with_tasks_or_blockers(client, project, author, url):
    client.force_login(author)
    _seed(project, author, tasks=2, blockers_each=1)
    few = _list_queries(client, url)
    _seed(project, author, tasks=20, blockers_each=5)
    many = _list_queries(client, url)
    assert many == few


def test_the_filter_menus_offer_the_chosen_projects_values_and_never_an_unseen_ones(
    client, project, author
):
    from hilbench_annotate.models import SqlEnvironment, Tag

    from ..factories import MembershipFactory, ProjectFactory, UserFactory

    other = ProjectFactory(name="Other benchmark")
    MembershipFactory(project=other, user=author)
    hidden = ProjectFactory(name="Hidden benchmark")
    colleague = UserFactory(username="colleague")
    stranger = UserFactory(username="stranger")
    mine = TaskFactory(project=project, author=author)
    theirs = TaskFactory(project=other, author=colleague)
    TaskFactory(project=hidden, author=stranger)
    SqlEnvironment.objects.filter(task=theirs).update(db_id="formula_1")
    mine.tags.add(Tag.objects.create(project=project, name="batch-a"))
    theirs.tags.add(Tag.objects.create(project=other, name="batch-b"))
    Tag.objects.create(project=project, name="unused")  # on no task: not offered
    TaskFactory(project=other, author=author, swe=True)
    client.force_login(author)

    everything = client.get(reverse("task-list")).context["choices"]
    assert everything["authors"] == sorted(["colleague", author.username])
    assert everything["databases"] == ["formula_1", "retail_bank"]
    assert everything["repositories"] == ["demo/invoicing"]
    assert everything["tags"] == ["batch-a", "batch-b"]
    assert [name for _id, name in everything["projects"]] == [project.name, "Other benchmark"]

    chosen = client.get(reverse("task-list"), {"project": project.pk}).context["choices"]
    assert chosen["authors"] == [author.username]
    assert (chosen["databases"], chosen["repositories"]) == (["retail_bank"], [])
    assert chosen["tags"] == ["batch-a"]
    assert len(chosen["projects"]) == 2  # the project menu still offers every project

    # The menus are kept per state of the project's tasks: a new task's database is offered
    # at once, and so is a tag put on a task.
    added = TaskFactory(project=project, author=author)
    SqlEnvironment.objects.filter(task=added).update(db_id="toxicology")
    added.tags.add(Tag.objects.get(project=project, name="unused"))
    again = client.get(reverse("task-list"), {"project": project.pk}).context["choices"]
    assert again["databases"] == ["retail_bank", "toxicology"]
    assert again["tags"] == ["batch-a", "unused"]

    # A project the user does not see is no scope: the menus stay those of their projects.
    unseen = client.get(reverse("task-list"), {"project": hidden.pk}).context["choices"]
    assert "stranger" not in unseen["authors"]
    assert unseen["tags"] == ["batch-a", "batch-b", "unused"]


def test_changing_the_project_in_the_page_loads_the_whole_page_with_its_menus(
    client, project, author
):
    """htmx swaps the results only, and the menus are the chosen project's: a change of
    project (the page's address names another) is answered by a full load of the new list;
    any other filter, or a page of the same project, keeps the quick swap."""
    from ..factories import MembershipFactory, ProjectFactory

    other = ProjectFactory(name="Other benchmark")
    MembershipFactory(project=other, user=author)
    TaskFactory(project=project, author=author)
    client.force_login(author)
    shown = f"http://testserver/?project={project.pk}"
    htmx = {"HTTP_HX_REQUEST": "true", "HTTP_HX_CURRENT_URL": shown}

    switched = client.get(reverse("task-list"), {"project": other.pk}, **htmx)
    assert switched.status_code == 200
    assert switched.headers["HX-Redirect"] == f"{reverse('task-list')}?project={other.pk}"
    everything = client.get(reverse("task-list"), {"project": ""}, **htmx)
    assert everything.headers["HX-Redirect"] == f"{reverse('task-list')}?project="

    same = client.get(reverse("task-list"), {"project": project.pk, "q": "loans"}, **htmx)
    assert "HX-Redirect" not in same.headers
    assert same.content.decode().lstrip().startswith('<div id="results">')
    full = client.get(reverse("task-list"), {"project": other.pk})  # what htmx then loads
    assert "<html" in full.content.decode() and full.context["choices"]["databases"] == []


def test_task_list_htmx_request_gets_only_the_results_fragment(client, project, author):
    TaskFactory(project=project, author=author, title="How many loans closed in the boom year?")
    TaskFactory(project=project, author=author, title="Which branch opened first?")
    client.force_login(author)

    response = client.get(reverse("task-list"), {"q": "boom"}, HTTP_HX_REQUEST="true")

    body = response.content.decode()
    assert response.status_code == 200
    assert body.lstrip().startswith('<div id="results">')
    assert "<html" not in body
    assert "boom year" in body and "opened first" not in body


def test_task_list_full_page_filters_and_paginates(client, project, author):
    for _ in range(30):
        TaskFactory(project=project, author=author)
    TaskFactory(project=project, author=author, swe=True)
    client.force_login(author)

    page = client.get(reverse("task-list"), {"domain": "sql"}).content.decode()
    assert "30 tasks" in page and "Page 1 of 2" in page and "<html" in page
    second = client.get(reverse("task-list"), {"domain": "sql", "page": 2}).content.decode()
    assert "Page 2 of 2" in second


def test_task_page_shows_spec_environment_and_blockers(client, project, author):
    task = TaskFactory(project=project, author=author)
    blocker = BlockerFactory(task=task, key="boom_year", resolution="The boom year is 1997.")
    TriggerQuestionFactory(blocker=blocker, text="Which calendar year is the boom year?")
    client.force_login(author)

    page = client.get(reverse("task-detail", args=[task.pk])).content.decode()

    assert "How many loans were granted in the boom year?" in page
    assert "boom_year" in page and "The boom year is 1997." in page
    assert "Which calendar year is the boom year?" in page
    assert "retail_bank" in page


def _zip(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buffer.getvalue()


def _upload(name, data):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, data)


def _bird_upload_files(demo_data):
    databases = demo_data["sql"]["databases"]
    files = {
        str(p.relative_to(databases.parent)): p.read_bytes()
        for p in databases.rglob("*")
        if p.is_file()
    }
    return demo_data["sql"]["questions"].read_bytes(), _zip(files)


def test_browser_bird_upload_runs_as_a_job_and_reports(
    client, project, author, demo_data, django_capture_on_commit_callbacks
):
    questions, databases = _bird_upload_files(demo_data)
    client.force_login(author)

    with django_capture_on_commit_callbacks() as callbacks:
        response = client.post(
            reverse("import-list"),
            {
                "kind": "bird",
                "project": project.pk,
                "questions": _upload("dev.json", questions),
                "databases": _upload("dbs.zip", databases),
            },
        )
    job = ImportJob.objects.get()
    assert response.status_code == 302 and response.url == reverse("import-detail", args=[job.pk])
    assert job.status == "queued" and len(callbacks) == 1

    # What the worker runs (the Celery task body, here in-process).
    import_job.apply(kwargs={"job_id": job.pk})

    job.refresh_from_db()
    assert job.status == "succeeded", job.error
    assert len(job.report["created"]) == len(json.loads(questions))
    assert Task.objects.filter(project=project, author=author).count() == len(json.loads(questions))
    page = client.get(reverse("import-detail", args=[job.pk]), HTTP_HX_REQUEST="true")
    assert page.status_code == 286  # htmx: stop polling, the job is finished
    assert "imported" in page.content.decode()

    # A redelivered message does not run the job twice.
    import_job.apply(kwargs={"job_id": job.pk})
    assert Task.objects.filter(project=project).count() == len(json.loads(questions))


def test_browser_upload_with_bad_record_fails_naming_it_and_imports_nothing(
    client, project, author, demo_data
):
    records = json.loads(demo_data["sql"]["questions"].read_text())
    records[3]["SQL"] = 42
    _questions, databases = _bird_upload_files(demo_data)
    client.force_login(author)
    client.post(
        reverse("import-list"),
        {
            "kind": "bird",
            "project": project.pk,
            "questions": _upload("dev.json", json.dumps(records).encode()),
            "databases": _upload("dbs.zip", databases),
        },
    )
    job = ImportJob.objects.get()
    import_job.apply(kwargs={"job_id": job.pk})
    job.refresh_from_db()
    assert job.status == "failed"
    assert "record 3: SQL must be non-empty text" in job.error
    assert Task.objects.count() == 0
    page = client.get(reverse("import-detail", args=[job.pk])).content.decode()
    assert "Nothing was imported" in page and "record 3" in page


def test_browser_upload_reports_a_bad_record_and_a_missing_database_together(
    client, project, author, demo_data, settings
):
    """Every problem of the file in one pass, in the page's words (its checkbox, not a
    command-line flag), naming no folder of the server."""
    records = json.loads(demo_data["sql"]["questions"].read_text())
    records[3]["SQL"] = 42
    records.append({**records[0], "question_id": 900, "db_id": "harbour_fees"})
    _questions, databases = _bird_upload_files(demo_data)
    client.force_login(author)
    client.post(
        reverse("import-list"),
        {
            "kind": "bird",
            "project": project.pk,
            "questions": _upload("dev.json", json.dumps(records).encode()),
            "databases": _upload("dbs.zip", databases),
        },
    )
    job = ImportJob.objects.get()
    import_job.apply(kwargs={"job_id": job.pk})
    job.refresh_from_db()

    assert job.status == "failed" and Task.objects.count() == 0
    page = client.get(reverse("import-detail", args=[job.pk])).content.decode()
    assert "record 3: SQL must be non-empty text" in page
    assert "database harbour_fees: harbour_fees/harbour_fees.sqlite is missing" in page
    assert "tick “Import questions whose database is absent (noted on the task)”" in page
    assert "--skip-missing-databases" not in page
    assert str(settings.UPLOAD_STORE) not in page and "/uploads/" not in page


def test_browser_upload_of_descriptions_only_imports_without_databases_when_ticked(
    client, project, author, demo_data
):
    """BIRD mini-dev ships descriptions without databases: with the box ticked, an archive of
    them (inside a folder of its own) brings the questions and their descriptions in."""
    databases = demo_data["sql"]["databases"]
    described = {
        f"mini_dev/{p.relative_to(databases)}": p.read_bytes() for p in databases.rglob("*.csv")
    }
    client.force_login(author)
    client.post(
        reverse("import-list"),
        {
            "kind": "bird",
            "project": project.pk,
            "questions": _upload("dev.json", demo_data["sql"]["questions"].read_bytes()),
            "databases": _upload("descriptions.zip", _zip(described)),
            "skip_missing_databases": "on",
        },
    )
    job = ImportJob.objects.get()
    import_job.apply(kwargs={"job_id": job.pk})
    job.refresh_from_db()

    assert job.status == "succeeded", job.error
    task = Task.objects.filter(project=project).first()
    assert task.sql_environment.database is None and "absent" in task.import_notes
    assert "loan" in task.sql_environment.descriptions


def test_archive_with_path_escape_is_refused(client, project, author, demo_data):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tf:
        info = tarfile.TarInfo("../../escape.txt")
        info.size = 2
        tf.addfile(info, io.BytesIO(b"hi"))
    client.force_login(author)
    client.post(
        reverse("import-list"),
        {
            "kind": "hilbench",
            "project": project.pk,
            "archive": _upload("t.tar.gz", buffer.getvalue()),
        },
    )
    job = ImportJob.objects.get()
    import_job.apply(kwargs={"job_id": job.pk})
    job.refresh_from_db()
    assert job.status == "failed"
    assert "leaves the archive's folder" in job.error


def test_hilbench_archive_upload_imports_release_tasks(client, project, author):
    from ..conftest import FIXTURES

    root = FIXTURES / "hilbench"
    files = {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    client.force_login(author)
    client.post(
        reverse("import-list"),
        {"kind": "hilbench", "project": project.pk, "archive": _upload("r.zip", _zip(files))},
    )
    job = ImportJob.objects.get()
    import_job.apply(kwargs={"job_id": job.pk})
    job.refresh_from_db()
    assert job.status == "succeeded", job.error
    folders = [p for domain in ("sql", "swe") for p in (root / domain).iterdir() if p.is_dir()]
    assert Task.objects.filter(project=project).count() == len(folders) == 4


def test_reviewer_cannot_import_and_sees_why(client, project, reviewer):
    client.force_login(reviewer)
    page = client.get(reverse("import-list")).content.decode()
    assert "You need the author or lead role" in page
    response = client.post(reverse("import-list"), {"kind": "hilbench", "project": project.pk})
    assert ImportJob.objects.count() == 0
    assert response.status_code == 403
    assert "Only authors and leads import tasks." in response.content.decode()


def test_task_page_colours_patches_line_by_line_and_escapes_them(client, project, author):
    from hilbench_annotate.models import SweEnvironment

    task = TaskFactory(project=project, author=author, swe=True)
    SweEnvironment.objects.filter(task=task).update(
        gold_patch=(
            "--- a/money.py\n+++ b/money.py\n@@ -1,2 +1,2 @@\n"
            "-return round(x)\n+return round(x, 2)  # <cents>\n keep\n"
        )
    )
    client.force_login(author)
    page = client.get(reverse("task-detail", args=[task.pk])).content.decode()
    assert '<span class="diff-file">--- a/money.py</span>' in page
    assert '<span class="diff-hunk">@@ -1,2 +1,2 @@</span>' in page
    assert '<span class="diff-del">-return round(x)</span>' in page
    assert '<span class="diff-add">+return round(x, 2)  # &lt;cents&gt;</span>' in page
    assert "<span> keep</span>" in page


def test_list_pages_keep_the_list_order_when_rows_are_read_by_id(client, project, author):
    """The HTML list and the list API read a page's ids first, then its rows by id: the
    rows still come newest change first (ties: the newer task), page after page."""
    from datetime import timedelta

    from django.utils import timezone

    start = timezone.now()
    tasks = [TaskFactory(project=project, author=author) for _ in range(60)]
    for n, task in enumerate(tasks):  # two by two they share a time: the id breaks the tie
        Task.objects.filter(pk=task.pk).update(updated_at=start - timedelta(minutes=n // 2))
    expected = [t.pk for n, t in sorted(enumerate(tasks), key=lambda p: (p[0] // 2, -p[1].pk))]
    client.force_login(author)

    html = [
        [t.pk for t in client.get(reverse("task-list"), {"page": n}).context["page"].object_list]
        for n in (1, 2, 3)
    ]
    api = [
        [row["id"] for row in client.get(reverse("api-task-list"), {"page": n}).json()["results"]]
        for n in (1, 2)
    ]
    assert html[0] + html[1] + html[2] == expected
    assert api[0] + api[1] == expected
