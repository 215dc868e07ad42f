"""Red-team findings on SWE imports (issue 19, items 1 and 2): what a user may name as a
repository, and whose mirror an import may write to."""

import importlib
import io
import json
import shutil
import subprocess
import tarfile

import pytest
from django.apps import apps
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from exchange.importers import import_swebench
from exchange.models import ImportJob
from exchange.tasks import import_job
from hilbench_annotate.errors import DomainError
from hilbench_annotate.models import Project, Repository, SweEnvironment, Task
from hilbench_annotate.repositories import origin_allowed, repository_add_commit

from ..validators.gitutil import has_commit

pytestmark = pytest.mark.django_db

REFUSED = "is not one this site clones"


def _run(*args, cwd=None) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


def _refs(path) -> str:
    return _run("--git-dir", str(path), "show-ref")


def _tar_gz(folder, arcname: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tf:
        tf.add(folder, arcname=arcname)
    return buffer.getvalue()


def _swe_form(project, instances: bytes, **extra):
    return {
        "kind": "swebench",
        "project": project.pk,
        "instances": SimpleUploadedFile("instances.json", instances),
        **extra,
    }


@pytest.fixture
def demo_project_mirror(project, author, demo_data):
    """The demo project's SWE task, imported as an operator does (command line)."""
    import_swebench(
        project=project,
        instances=demo_data["swe"]["instances"],
        repo=str(demo_data["swe"]["repo"]),
        actor=author,
    )
    return Task.objects.get(project=project).swe_environment.repository


# --- item 1: a repository named in the form ---------------------------------------------------


def test_outsider_cannot_clone_the_servers_own_repositories(
    client, outsider, demo_data, demo_project_mirror
):
    """The attack: repo_url = another project's mirror in the store, or the app's own source
    folder. Both (and their file:// and relative spellings) are refused with the form, and no
    job, task or mirror is made."""
    other = Project.objects.get(slug="other-team")
    instances = demo_data["swe"]["instances"].read_bytes()
    client.force_login(outsider)
    attempts = [
        str(demo_project_mirror.path),
        f"file://{demo_project_mirror.path}",
        str(settings.BASE_DIR),
        "var/repositories/" + demo_project_mirror.storage_path,
        "ext::sh -c touch% /tmp/pwned",
    ]
    for repo_url in attempts:
        form = _swe_form(other, instances, repo_url=repo_url)
        response = client.post(reverse("import-list"), form)
        page = response.content.decode()
        assert response.status_code == 200, repo_url
        assert REFUSED in page, repo_url
    assert ImportJob.objects.count() == 0
    assert not Task.objects.filter(project=other).exists()
    assert not Repository.objects.exclude(pk=demo_project_mirror.pk).exists()


def test_a_job_queued_with_a_server_path_is_refused_by_the_worker(
    client, outsider, demo_data, demo_project_mirror
):
    """A job stored before the rule (or by any other way in) is checked again when it runs."""
    other = Project.objects.get(slug="other-team")
    upload = settings.UPLOAD_STORE / "queued-before"
    upload.mkdir(parents=True)
    shutil.copy(demo_data["swe"]["instances"], upload / "instances.json")
    job = ImportJob.objects.create(
        project=other,
        kind=ImportJob.Kind.SWEBENCH,
        created_by=outsider,
        upload_dir="queued-before",
        options={"repo_url": str(settings.BASE_DIR), "files": {"instances": "instances.json"}},
    )

    import_job.apply(kwargs={"job_id": job.pk})

    job.refresh_from_db()
    assert job.status == "failed" and REFUSED in job.error
    assert not Repository.objects.exclude(pk=demo_project_mirror.pk).exists()


def test_urls_and_folders_the_site_admin_allows_and_nothing_else(settings, tmp_path, demo_data):
    settings.REPOSITORY_URL_PREFIXES = ["https://git.example.org/", "https://github.com"]
    allowed_root = tmp_path / "git-roots"
    clone = allowed_root / "invoicing"
    _run("clone", "--quiet", str(demo_data["swe"]["repo"]), str(clone))

    assert origin_allowed("https://git.example.org/team/app.git") == (
        "https://git.example.org/team/app.git"
    )
    assert origin_allowed("https://github.com/psf/requests") == "https://github.com/psf/requests"
    for refused in (
        "https://github.com.evil.example/psf/requests",  # a prefix without "/" is a host
        "https://git.example.org.evil.example/x.git",
        "https://git.example.org/team/../../internal/x.git",
        "http://git.example.org/team/app.git",
        "ssh://git.example.org/team/app.git",
        str(clone),  # no local root configured: no path at all
        f"file://{clone}",
    ):
        with pytest.raises(DomainError, match=REFUSED):
            origin_allowed(refused)

    settings.REPOSITORY_LOCAL_ROOTS = [allowed_root]
    assert origin_allowed(str(clone)) == str(clone.resolve())
    assert origin_allowed(f"file://{clone}") == str(clone.resolve())
    with pytest.raises(DomainError, match=REFUSED):
        origin_allowed(str(demo_data["swe"]["repo"]))  # outside the root
    with pytest.raises(DomainError, match=REFUSED):
        origin_allowed(str(allowed_root / ".." / "elsewhere"))
    (allowed_root / "escape").symlink_to(demo_data["swe"]["repo"])
    with pytest.raises(DomainError, match=REFUSED):
        origin_allowed(str(allowed_root / "escape"))  # a link out of the root

    # A root wide enough to hold the app's stores still never reaches them.
    settings.REPOSITORY_LOCAL_ROOTS = [tmp_path]
    settings.REPOSITORY_STORE = tmp_path / "store" / "repositories"
    mirror = settings.REPOSITORY_STORE / "1" / "demo__invoicing.git"
    _run("clone", "--quiet", "--mirror", str(demo_data["swe"]["repo"]), str(mirror))
    with pytest.raises(DomainError, match=REFUSED):
        origin_allowed(str(mirror))

    # A checkout under the root whose .git points elsewhere would clone that repository.
    worktree = allowed_root / "linked"
    worktree.mkdir()
    (worktree / ".git").write_text(f"gitdir: {demo_data['swe']['repo'] / '.git'}\n")
    with pytest.raises(DomainError, match="link to another repository"):
        origin_allowed(str(worktree))


def test_a_folder_under_an_allowed_root_imports_from_the_page(
    client, settings, tmp_path, author, project, demo_data
):
    settings.REPOSITORY_LOCAL_ROOTS = [tmp_path / "git-roots"]
    clone = tmp_path / "git-roots" / "invoicing"
    _run("clone", "--quiet", str(demo_data["swe"]["repo"]), str(clone))
    client.force_login(author)
    instances = demo_data["swe"]["instances"].read_bytes()

    response = client.post(
        reverse("import-list"), _swe_form(project, instances, repo_url=str(clone))
    )

    job = ImportJob.objects.get()
    assert response.status_code == 302
    import_job.apply(kwargs={"job_id": job.pk})
    job.refresh_from_db()
    assert job.status == "succeeded", job.error
    assert Task.objects.get(project=project).swe_environment.repository.project == project


def test_an_uploaded_repository_that_links_to_a_server_repository_is_refused(
    client, outsider, demo_data, demo_project_mirror, tmp_path
):
    """An archive may hold a .git *file* (gitdir: …) or an alternates file naming another
    repository on the server: git would read that repository's objects."""
    other = Project.objects.get(slug="other-team")
    instances = demo_data["swe"]["instances"].read_bytes()
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / ".git").write_text(f"gitdir: {demo_project_mirror.path}\n")
    borrowing = tmp_path / "borrowing.git"
    _run("init", "--quiet", "--bare", str(borrowing))
    (borrowing / "objects" / "info" / "alternates").write_text(
        f"{demo_project_mirror.path / 'objects'}\n"
    )
    client.force_login(outsider)
    for folder, name, reason in (
        (linked, "linked.tar.gz", "its .git is a link to another repository"),
        (borrowing, "borrowing.tar.gz", "borrows objects from another repository"),
    ):
        client.post(
            reverse("import-list"),
            _swe_form(
                other,
                instances,
                repository=SimpleUploadedFile(name, _tar_gz(folder, folder.name)),
            ),
        )
        job = ImportJob.objects.latest("pk")
        import_job.apply(kwargs={"job_id": job.pk})
        job.refresh_from_db()
        assert job.status == "failed" and reason in job.error, job.error
    assert not Repository.objects.exclude(pk=demo_project_mirror.pk).exists()
    assert not Task.objects.filter(project=other).exists()


def test_import_errors_name_the_upload_never_a_server_path(
    client, author, project, demo_data, tmp_path
):
    """An uploaded repository that lacks the instances' base commit: the error names the
    archive as the user called it, not the folder the worker unpacked it to."""
    elsewhere = tmp_path / "unrelated"
    _run("init", "--quiet", str(elsewhere))
    (elsewhere / "README").write_text("nothing to see\n")
    _run("add", "README", cwd=elsewhere)
    _run("-c", "user.name=t", "-c", "user.email=t@e", "commit", "--quiet", "-m", "x", cwd=elsewhere)
    client.force_login(author)
    client.post(
        reverse("import-list"),
        _swe_form(
            project,
            demo_data["swe"]["instances"].read_bytes(),
            repository=SimpleUploadedFile("my-checkout.tar.gz", _tar_gz(elsewhere, "checkout")),
        ),
    )
    job = ImportJob.objects.get()
    import_job.apply(kwargs={"job_id": job.pk})
    job.refresh_from_db()

    assert job.status == "failed"
    assert "is not in my-checkout.tar.gz/checkout" in job.error, job.error
    page = client.get(reverse("import-detail", args=[job.pk])).content.decode()
    for server_path in (settings.UPLOAD_STORE, settings.VAR_DIR, settings.BASE_DIR):
        assert str(server_path) not in job.error and str(server_path) not in page


# --- item 2: one project's mirror -------------------------------------------------------------


def test_an_outsiders_import_of_the_same_name_leaves_the_other_projects_mirror_alone(
    client, outsider, demo_data, demo_project_mirror, tmp_path
):
    """The attack: an outsider imports instances naming demo/invoicing with an archive of
    their own whose main has moved. The demo project's mirror keeps its refs and origin."""
    mine = tmp_path / "mine"
    _run("clone", "--quiet", str(demo_data["swe"]["repo"]), str(mine))
    (mine / "PLANTED").write_text("not the demo project's code\n")
    _run("add", "PLANTED", cwd=mine)
    _run("-c", "user.name=o", "-c", "user.email=o@e", "commit", "--quiet", "-m", "p", cwd=mine)
    planted = _run("rev-parse", "HEAD", cwd=mine)
    before_refs = _refs(demo_project_mirror.path)
    before_origin = demo_project_mirror.origin
    other = Project.objects.get(slug="other-team")
    client.force_login(outsider)

    client.post(
        reverse("import-list"),
        _swe_form(
            other,
            demo_data["swe"]["instances"].read_bytes(),
            repository=SimpleUploadedFile("invoicing.tar.gz", _tar_gz(mine, "invoicing")),
        ),
    )
    job = ImportJob.objects.get()
    import_job.apply(kwargs={"job_id": job.pk})
    job.refresh_from_db()

    assert job.status == "succeeded", job.error
    demo_project_mirror.refresh_from_db()
    assert _refs(demo_project_mirror.path) == before_refs
    assert demo_project_mirror.origin == before_origin
    assert not has_commit(demo_project_mirror.path, planted)
    theirs = Task.objects.get(project=other).swe_environment.repository
    assert theirs.pk != demo_project_mirror.pk and theirs.path != demo_project_mirror.path
    assert theirs.project == other
    assert has_commit(theirs.path, planted)


def test_bundle_repositories_are_stored_per_project_too(project, outsider, demo_data):
    other = Project.objects.get(slug="other-team")
    source = demo_data["swe"]["repo"]
    commit = _run("rev-parse", "HEAD", cwd=source)

    ours = repository_add_commit(
        project=project, repo_name="demo/invoicing", source=source, commit=commit
    )
    theirs = repository_add_commit(
        project=other, repo_name="demo/invoicing", source=source, commit=commit
    )

    assert ours.pk != theirs.pk and ours.path != theirs.path
    assert (ours.project, theirs.project) == (project, other)
    assert (
        repository_add_commit(
            project=project, repo_name="demo/invoicing", source=source, commit=commit
        )
        == ours
    )


def _legacy_mirror(demo_data, name="demo/invoicing") -> Repository:
    """A mirror as the app stored it before mirrors belonged to projects."""
    relative = name.replace("/", "__") + ".git"
    _run(
        "clone", "--quiet", "--mirror", str(demo_data["swe"]["repo"]),
        str(settings.REPOSITORY_STORE / relative),
    )  # fmt: skip
    return Repository.objects.create(
        name=name, origin=str(demo_data["swe"]["repo"]), storage_path=relative
    )


def _task_on(repository, project, demo_data):
    record = json.loads(demo_data["swe"]["instances"].read_text())[0]
    task = Task.objects.create(
        project=project,
        domain="swe",
        source="swebench",
        source_id=f"legacy-{project.pk}-{repository.pk}",
    )
    SweEnvironment.objects.create(
        task=task,
        repository=repository,
        repo_name=repository.name,
        base_commit=record["base_commit"],
    )
    return task


def test_existing_mirrors_keep_working_after_the_migration(project, outsider, author, demo_data):
    migration = importlib.import_module(
        "hilbench_annotate.migrations.0009_issue19_repository_project"
    )
    other = Project.objects.get(slug="other-team")
    sole = _legacy_mirror(demo_data)
    old_task = _task_on(sole, project, demo_data)
    shared = _legacy_mirror(demo_data, name="demo/shared")
    _task_on(shared, project, demo_data)
    _task_on(shared, other, demo_data)

    migration.assign_sole_project(apps, None)

    sole.refresh_from_db()
    shared.refresh_from_db()
    assert sole.project == project and shared.project is None
    # The project's next import finds its existing mirror (same row, same folder).
    import_swebench(
        project=project,
        instances=demo_data["swe"]["instances"],
        repo=str(demo_data["swe"]["repo"]),
        actor=author,
    )
    new_task = Task.objects.get(project=project, source_id__startswith="demo", domain="swe")
    assert new_task.swe_environment.repository == sole
    assert old_task.swe_environment.repository.path == sole.path
    assert has_commit(sole.path, old_task.swe_environment.base_commit)
    # Another project's import makes its own mirror and leaves the old one as it was.
    refs = _refs(sole.path)
    import_swebench(
        project=other,
        instances=demo_data["swe"]["instances"],
        repo=str(demo_data["swe"]["repo"]),
        actor=outsider,
    )
    assert Repository.objects.get(project=other, name="demo/invoicing") != sole
    assert _refs(sole.path) == refs
