import json
import shutil

import pytest
from django.core.management import call_command

from authoring.lint import lint_task
from exchange.importers import import_hilbench
from exchange.importers.hilbench import QUESTION_ALIASES
from hilbench_annotate.errors import ImportRefused
from hilbench_annotate.models import Task
from hilbench_annotate.services import task_snapshot
from hilbench_annotate.vocabulary import QUALITY_CRITERIA_KEYS, TaskSource

from ..conftest import FIXTURES

pytestmark = pytest.mark.django_db


def _registry_as_stored(task: Task) -> list[dict]:
    return [
        {
            "id": b.key,
            "type": b.type,
            "subtype": b.subtype or None,
            "description": b.description,
            "resolution": b.resolution,
            "example_questions": [q.text for q in b.trigger_questions.order_by("position")],
        }
        for b in task.blockers.order_by("position")
    ]


def _registry_on_disk(folder) -> list[dict]:
    raw = json.loads((folder / "shared/ask-human-data/blocker_registry.json").read_text())
    return [
        {
            "id": b["id"],
            "type": b["type"],
            "subtype": b.get("subtype") or None,
            "description": b["description"],
            "resolution": b["resolution"],
            "example_questions": next(b[a] for a in QUESTION_ALIASES if a in b),
        }
        for b in raw["blockers"]
    ]


def _folders(root):
    return sorted(p for p in root.iterdir() if p.is_dir())


@pytest.mark.parametrize("domain", ["sql", "swe"])
def test_release_folders_import_with_registries_equal_field_by_field(
    project, domain, release_examples
):
    root = release_examples / domain
    call_command("import_hilbench", str(root), project=project.slug)

    folders = _folders(root)
    assert Task.objects.filter(project=project, domain=domain).count() == len(folders)
    for folder in folders:
        task = Task.objects.get(project=project, source_metadata__folder=folder.name)
        assert _registry_as_stored(task) == _registry_on_disk(folder)
        assert task.blocker_count == len(_registry_on_disk(folder))


def test_sql_folder_keeps_question_business_info_and_ground_truth(project):
    folder = FIXTURES / "hilbench" / "sql" / "sql_0"
    import_hilbench(project=project, root=folder)

    task = Task.objects.get(project=project, source=TaskSource.HILBENCH)
    env = task.sql_environment
    assert task.blocked_spec["question"].startswith("Which reading club members borrowed")
    assert env.db_id == "library"
    assert env.gold_sql == (folder / "shared/ground_truth.sql").read_text()
    assert "\r" not in env.gold_sql  # the release's CRLF file, read as text
    assert env.golden_output == (folder / "shared/golden_output.csv").read_text()
    business = json.loads((folder / "shared/data/business_info.json").read_text())
    assert env.business_info == business["business_info"]
    # Like the release, the folder does not ship the database: imported, noted on the task.
    assert env.database is None
    assert (
        "Database library was absent from the task folder "
        "(the release keeps it at public_sql_0/library.sqlite)" in task.import_notes
    )


def test_sql_folder_with_its_database_stores_it_and_its_descriptions(project):
    folder = FIXTURES / "hilbench" / "sql" / "sql_1"
    import_hilbench(project=project, root=folder)

    env = Task.objects.get(project=project).sql_environment
    shipped = folder / "shared/data/database.sqlite"
    assert env.database is not None
    assert env.database.path.read_bytes() == shipped.read_bytes()
    assert set(env.descriptions) == {"reading", "station"}
    assert "météo" in env.descriptions["station"]  # a Windows-1252 file, as BIRD has some
    assert "°C" in env.descriptions["reading"]
    assert "absent" not in Task.objects.get(project=project).import_notes


def test_swe_folder_keeps_statement_tests_and_patches(project):
    folder = FIXTURES / "hilbench" / "swe" / "swe_0"
    import_hilbench(project=project, root=folder)

    task = Task.objects.get(project=project)
    env = task.swe_environment
    metadata = json.loads((folder / "shared/metadata.json").read_text())
    assert env.fail_to_pass == metadata["swe_bench_metadata"]["FAIL_TO_PASS"]
    assert env.pass_to_pass == metadata["swe_bench_metadata"]["PASS_TO_PASS"]
    assert env.test_patch == metadata["test_patch"]
    assert env.gold_patch == (folder / "baseline/solution/ground_truth.patch").read_text()
    assert env.repo_name == "fixture/textkit"
    from hilbench_annotate.spec import render_swe_statement

    assert (
        render_swe_statement(task.blocked_spec)
        == (folder / "shared/problem_statement.txt").read_text()
    )
    assert "Repository fixture/textkit was absent" in task.import_notes
    # Its tests run through the release's scripts, which the folder does not carry.
    assert env.environment_spec["log_parser"] == "sweap_json"
    assert "run_script.sh and parser.py are not in the folder" in task.import_notes


def test_reimport_of_release_changes_nothing(project, release_examples):
    count = sum(len(_folders(release_examples / domain)) for domain in ("sql", "swe"))
    first = import_hilbench(project=project, root=release_examples)
    second = import_hilbench(project=project, root=release_examples)
    assert len(first.created) == count
    assert second.created == [] and len(second.unchanged) == count
    assert Task.objects.count() == count


def test_bad_blocker_type_refuses_the_whole_import(project, tmp_path):
    root = tmp_path / "sql"
    shutil.copytree(FIXTURES / "hilbench" / "sql", root)
    registry_path = root / "sql_1/shared/ask-human-data/blocker_registry.json"
    registry = json.loads(registry_path.read_text())
    registry["blockers"][1]["type"] = "vibes"
    registry_path.write_text(json.dumps(registry))

    with pytest.raises(ImportRefused) as err:
        import_hilbench(project=project, root=root)

    assert err.value.problems[0][0] == "sql_1"
    assert "type 'vibes' is not a sql blocker type" in err.value.problems[0][1]
    assert Task.objects.count() == 0


def test_trigger_question_aliases_are_read(project, tmp_path):
    folder = tmp_path / "sql_0"
    shutil.copytree(FIXTURES / "hilbench" / "sql" / "sql_0", folder)
    registry_path = folder / "shared/ask-human-data/blocker_registry.json"
    registry = json.loads(registry_path.read_text())
    for blocker in registry["blockers"]:
        blocker["acceptable_questions"] = blocker.pop("example_questions")
    registry_path.write_text(json.dumps(registry))

    import_hilbench(project=project, root=folder)
    assert _registry_as_stored(Task.objects.get()) == _registry_on_disk(folder)


def test_release_blockers_are_recorded_as_validated_by_the_release(project, release_examples):
    """The release's people judged every blocker against the quality criteria: imported,
    each criterion is attested with a note saying so, and lint asks for none of them."""
    import_hilbench(project=project, root=release_examples)
    for task in Task.objects.filter(project=project):
        folder = task.source_metadata["folder"]
        for blocker in task.blockers.all():
            assert set(blocker.criteria) == set(QUALITY_CRITERIA_KEYS)
            for attested in blocker.criteria.values():
                assert attested["ok"] is True
                assert f"Validated in the HiL-Bench release (task {folder})" in attested["note"]
        assert [f for f in lint_task(task_snapshot(task)) if f.rule == "criteria_unattested"] == []
