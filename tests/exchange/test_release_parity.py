"""Release parity: the five HiL-Bench release examples, imported and exported, give back every
file the release has, byte for byte (only our annotate/ and provenance/ files are new), through
a second round trip too; an edited task is rewritten in the release's own style."""

import json

import pytest
from django.core.management import call_command

from exchange.bundles import layout
from hilbench_annotate import services as core
from hilbench_annotate.models import Membership, Project, Task
from tests.conftest import shared_path

from .bundle_helpers import members

pytestmark = [pytest.mark.django_db, pytest.mark.shared_data]
OURS = ("annotate/", "provenance/")


def _release_tree():
    root = shared_path("examples", "hilbench")
    return {
        f"{folder.name}/{path.relative_to(folder).as_posix()}": path.read_bytes()
        for domain in ("sql", "swe")
        for folder in sorted((root / domain).iterdir())
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def _import_release(project, author):
    root = shared_path("examples", "hilbench")
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
    return {k: v for k, v in members(out).items() if k != layout.MANIFEST}


def _compare(release: dict[str, bytes], exported: dict[str, bytes]) -> None:
    missing = sorted(set(release) - set(exported))
    different = sorted(p for p in release if p in exported and exported[p] != release[p])
    added = sorted(
        p for p in set(exported) - set(release) if not p.split("/", 1)[1].startswith(OURS)
    )
    assert (missing, different, added) == ([], [], [])


def test_the_five_release_examples_round_trip_byte_for_byte(project, author, lead, tmp_path):
    release = _release_tree()
    tasks = _import_release(project, author)
    assert len(tasks) == 5
    first = _export(project, tasks, tmp_path / "first.tar.gz")
    _compare(release, first)
    # And again: import our bundle into a new project, export it.
    again = Project.objects.create(name="Again", slug="again")
    Membership.objects.create(project=again, user=lead, role="lead")
    call_command("import_bundle", str(tmp_path / "first.tar.gz"), project="again")
    second = _export(again, list(Task.objects.filter(project=again)), tmp_path / "second.tar.gz")
    _compare(release, second)


def test_an_edited_task_is_rewritten_in_the_releases_style(project, author, lead, tmp_path):
    release = _release_tree()
    _import_release(project, author)
    task = Task.objects.get(project=project, source_metadata__folder="sql_3")
    blocker = task.blockers.order_by("position").first()
    core.blocker_update(
        blocker=blocker,
        actor=author,
        expected_version=task.version,
        resolution="Use the card's printed name, not its face name.",
    )
    exported = _export(project, [task], tmp_path / "edited.tar.gz")
    registry = exported["sql_3/" + layout.REGISTRY]
    original = release["sql_3/" + layout.REGISTRY]
    assert registry != original
    edited = json.loads(registry)["blockers"]
    first = json.loads(original)["blockers"][0]
    assert list(edited[0]) == list(first)  # the release's key order
    assert edited[0]["resolution"] == "Use the card's printed name, not its face name."
    assert registry.splitlines()[1].startswith(original.splitlines()[1][:4])  # its indent
    # Only what derives from the resolution changed: full_info's text, not the others.
    assert exported["sql_3/full_info/instruction.md"] != release["sql_3/full_info/instruction.md"]
    for unchanged in ("baseline/instruction.md", "ask_human/instruction.md", "baseline/task.toml",
                      "shared/data_archive.json", "baseline/environment/Dockerfile"):  # fmt: skip
        assert exported[f"sql_3/{unchanged}"] == release[f"sql_3/{unchanged}"], unchanged


def test_the_data_the_release_keeps_elsewhere_is_said_on_the_task_page(client, project, author):
    _import_release(project, author)
    task = Task.objects.get(project=project, source_metadata__folder="sql_0")
    client.force_login(author)
    page = client.get(f"/tasks/{task.pk}/").content.decode()
    assert "the release keeps it at public_sql_0/financial.sqlite" in page
