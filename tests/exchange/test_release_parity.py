"""Release parity: task folders in the HiL-Bench release's layout, imported and exported, give
back every file they had, byte for byte (only our annotate/ and provenance/ files are new),
through a second round trip too; an edited task is rewritten in the release's own style.
Run on the project's own release-layout fixtures and, where ../shared is, on the release's
five examples."""

import json
import tomllib

import pytest
from django.core.management import call_command
from django.urls import reverse
from rest_framework.test import APIClient

from exchange.bundles import layout
from exchange.bundles.harness import PACKAGE, harness_files
from exchange.bundles.release_runtime import GENERATED
from hilbench_annotate import services as core
from hilbench_annotate.models import Membership, Project, Task

from .bundle_helpers import members, seed_demo, sql_task

pytestmark = pytest.mark.django_db
OURS = ("annotate/", "provenance/")


def _folders(root):
    return [folder for domain in ("sql", "swe") for folder in sorted((root / domain).iterdir())]


def _release_tree(root):
    return {
        f"{folder.name}/{path.relative_to(folder).as_posix()}": path.read_bytes()
        for folder in _folders(root)
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def _import_release(project, root):
    for domain in ("sql", "swe"):
        call_command("import_hilbench", str(root / domain), project=project.slug)
    return list(Task.objects.filter(project=project))


def _export(project, tasks, out):
    call_command(
        "export_bundle",
        project=project.slug,
        out=str(out),
        tasks=[t.pk for t in tasks],
        draft=True,
    )
    # _shared/ stores once what task folders carry the same (their names link to it).
    return {
        k: v
        for k, v in members(out).items()
        if k != layout.MANIFEST and not k.startswith(f"{layout.SHARED_CONTENTS}/")
    }


def _generated(exported: dict[str, bytes]) -> set[str]:
    """The files the export says it added to make release tasks runnable."""
    listed = set()
    for name, content in exported.items():
        folder, _, rest = name.partition("/")
        if rest == GENERATED:
            listed |= {f"{folder}/{p}" for p in json.loads(content)["generated"]}
    return listed


def _compare(release: dict[str, bytes], exported: dict[str, bytes]) -> None:
    missing = sorted(set(release) - set(exported))
    different = sorted(p for p in release if p in exported and exported[p] != release[p])
    generated = _generated(exported)
    added = sorted(
        p
        for p in set(exported) - set(release) - generated - set(harness_files([]))
        if not p.split("/", 1)[1].startswith(OURS)
    )
    assert (missing, different, added) == ([], [], [])
    # What was added to run each task: a verifier in every mode, never a release file.
    folders = {p.split("/", 1)[0] for p in release}
    for folder in folders:
        for mode in ("baseline", "ask_human", "full_info"):
            if f"{folder}/{mode}/task.toml" in release:
                assert f"{folder}/{mode}/tests/test.sh" in generated, (folder, mode)
    assert not generated & set(release)


def test_release_folders_round_trip_byte_for_byte(
    project, author, lead, tmp_path, release_examples
):
    _round_trip(project, lead, release_examples, tmp_path)


def _round_trip(project, lead, root, tmp_path) -> int:
    """``root``'s release folders imported, exported, the bundle imported into a new project
    and exported again: every release file back byte for byte both times. The task count."""
    release = _release_tree(root)
    tasks = _import_release(project, root)
    assert len(tasks) == len(_folders(root))
    first = _export(project, tasks, tmp_path / "first.tar.gz")
    _compare(release, first)
    # And again: import our bundle into a new project, export it.
    again = Project.objects.create(name="Again", slug="again")
    Membership.objects.create(project=again, user=lead, role="lead")
    call_command("import_bundle", str(tmp_path / "first.tar.gz"), project="again")
    second = _export(again, list(Task.objects.filter(project=again)), tmp_path / "second.tar.gz")
    _compare(release, second)
    return len(tasks)


def test_an_edited_task_is_rewritten_in_the_releases_style(
    project, author, lead, tmp_path, release_examples
):
    release = _release_tree(release_examples)
    _import_release(project, release_examples)
    task = Task.objects.get(project=project, source_metadata__folder="sql_0")
    blocker = task.blockers.order_by("position").first()
    edit = "Use the value the reviewer confirmed, not the one in the notes."
    # A task imported by a command has no author: a lead edits it (the service checks).
    core.blocker_update(blocker=blocker, actor=lead, expected_version=task.version, resolution=edit)
    exported = _export(project, [task], tmp_path / "edited.tar.gz")
    registry = exported["sql_0/" + layout.REGISTRY]
    original = release["sql_0/" + layout.REGISTRY]
    assert registry != original
    edited = json.loads(registry)["blockers"]
    first = json.loads(original)["blockers"][0]
    assert list(edited[0]) == list(first)  # the release's key order
    assert (
        edited[0]["resolution"] == "Use the value the reviewer confirmed, not the one in the notes."
    )
    assert registry.splitlines()[1].startswith(original.splitlines()[1][:4])  # its indent
    assert registry.endswith(b"\n") == original.endswith(b"\n")  # its last line
    # Only what derives from the resolution changed: full_info's text, not the others.
    assert exported["sql_0/full_info/instruction.md"] != release["sql_0/full_info/instruction.md"]
    for unchanged in ("baseline/instruction.md", "ask_human/instruction.md", "baseline/task.toml",
                      "shared/data_archive.json", "baseline/environment/Dockerfile",
                      "shared/ground_truth.sql"):  # fmt: skip
        assert exported[f"sql_0/{unchanged}"] == release[f"sql_0/{unchanged}"], unchanged


def test_a_statement_edited_through_the_api_keeps_each_heading_on_a_line_of_its_own(
    project, author, lead, tmp_path, release_examples
):
    release = _release_tree(release_examples)
    _import_release(project, release_examples)
    task = Task.objects.get(project=project, source_metadata__folder="swe_0")
    spec = dict(task.blocked_spec)
    api = APIClient()
    api.force_authenticate(lead)
    # The form's text as a browser sends it; DRF trims the blank lines off the end.
    spec["requirements"] += "- Every rule above also holds for an empty input.\n\n\n"
    response = api.patch(
        reverse("api-task-detail", args=[task.pk]),
        {"expected_version": task.version, "blocked_spec": spec},
        format="json",
    )
    assert response.status_code == 200, response.content
    task.refresh_from_db()
    assert task.blocked_spec["requirements"].endswith("an empty input.")

    exported = _export(project, [task], tmp_path / "edited.tar.gz")
    # The release puts two blank lines before each heading after the first.
    rule = "- Every rule above also holds for an empty input.\n\n\n# PUBLIC INTERFACES\n"
    statement = exported["swe_0/" + layout.SWE_STATEMENT].decode()
    assert rule in statement
    original = release["swe_0/" + layout.SWE_STATEMENT].decode()
    before_edit = original[: original.index("# PUBLIC INTERFACES")].rstrip("\n")
    assert statement.startswith(before_edit)
    assert statement.endswith(original[original.index("# PUBLIC INTERFACES") :])
    for mode in ("baseline", "ask_human", "full_info"):
        assert rule in exported[f"swe_0/{mode}/instruction.md"].decode(), mode
    # The bundle reads back: its statement is what the task's sections render to.
    again = Project.objects.create(name="Again", slug="again")
    Membership.objects.create(project=again, user=lead, role="lead")
    call_command("import_bundle", str(tmp_path / "edited.tar.gz"), project="again")
    reread = Task.objects.get(project=again, source_metadata__folder="swe_0")
    assert reread.blocked_spec == task.blocked_spec


@pytest.mark.parametrize("allowed", [False, True])
def test_allow_internet_is_the_lead_s_for_app_tasks_and_the_release_s_for_release_tasks(
    settings, tmp_path, release_examples, allowed
):
    # The release's task.toml files say allow_internet = true (its ask-human sidecar calls an
    # LLM API, its data comes from Hugging Face) and are kept byte for byte; the lead's choice,
    # which the manifest records, sets the task.toml of the tasks the app writes.
    project = seed_demo(settings, tmp_path)
    release = _release_tree(release_examples)
    _import_release(project, release_examples)
    released = Task.objects.filter(project=project, release_files__isnull=False).distinct()
    tasks = [sql_task(project), *released]
    out = tmp_path / "b.tar.gz"
    call_command("export_bundle", project=project.slug, out=str(out),
                 tasks=[t.pk for t in tasks], draft=True, allow_internet=allowed)  # fmt: skip
    files = members(out)
    assert json.loads(files[layout.MANIFEST])["allow_internet"] is allowed
    folders = {e["folder"] for e in json.loads(files[layout.MANIFEST])["tasks"]}
    assert len(folders) == len(tasks)
    assert {name.split("/", 1)[0] for name in files if "/" in name} == folders | {
        PACKAGE,
        layout.SHARED_CONTENTS,
    }
    entries = {e["folder"]: e for e in json.loads(files[layout.MANIFEST])["tasks"]}
    for folder in sorted(folders):
        kept = json.loads(files[f"{folder}/{layout.ANNOTATE}"])["release_files"]
        for mode in ("baseline", "ask_human", "full_info"):
            toml = files[f"{folder}/{mode}/task.toml"]
            if kept:
                assert toml == release[f"{folder}/{mode}/task.toml"], (folder, mode)
                assert tomllib.loads(toml.decode())["environment"]["allow_internet"] is True
            else:
                assert tomllib.loads(toml.decode())["environment"]["allow_internet"] is allowed
        # The manifest says what each task's task.toml says, not only the lead's choice.
        assert entries[folder]["allow_internet"] is (True if kept else allowed), folder


def test_the_data_the_release_keeps_elsewhere_is_said_on_the_task_page(
    client, project, author, release_examples
):
    _import_release(project, release_examples)
    task = Task.objects.get(project=project, source_metadata__folder="sql_0")
    archive = json.loads((release_examples / "sql/sql_0/shared/data_archive.json").read_text())
    client.force_login(author)
    page = client.get(f"/tasks/{task.pk}/").content.decode()
    assert f"the release keeps it at {archive['db_artifact_path']}" in page


@pytest.mark.slow
@pytest.mark.shared_data
def test_every_calibration_task_round_trips_byte_for_byte(project, lead, tmp_path):
    """The 98 release tasks of ../shared/examples/hilbench-calibration: import_hilbench →
    export_bundle → import_bundle → export_bundle, every release file back byte for byte.
    (A question the release ends with a space or a blank line used to be trimmed, and the
    regenerated instruction.md then refused 7 of the 49 SQL tasks, and with them the rest.)"""
    from tests.conftest import shared_path

    root = shared_path("examples", "hilbench-calibration")
    assert _round_trip(project, lead, root, tmp_path) == 98
