"""A bundle an earlier export wrote (fixtures/bundle/fixtures.tar.gz, by
fixtures/make_bundle.py) still reads into the tasks it describes, and exporting them again
writes the same task data. Code the bundle carries beside the data (sidecars, graders) is
the exporting app's own, so only the data is compared."""

import json
import subprocess

import pytest

from exchange.bundles import layout
from exchange.importers.bundle import import_bundle
from hilbench_annotate.models import Task

from ..conftest import FIXTURES
from .bundle_helpers import export, members

pytestmark = pytest.mark.django_db
BUNDLE = FIXTURES / "bundle" / "fixtures.tar.gz"
MODES = ("baseline", "ask_human", "full_info")


def _data(files: dict[str, bytes]) -> dict[str, bytes]:
    """The task data of a bundle: what import reads and export derives from the task."""

    def is_data(name: str) -> bool:
        folder, _, rest = name.partition("/")
        mode, _, inside = rest.partition("/")
        if rest.startswith("shared/sidecars/"):
            return False  # the sidecars' code: the exporting app's own
        if rest.startswith(("shared/", "annotate/")):
            return True
        return mode in MODES and (inside in ("instruction.md", "task.toml") or
                                  inside.startswith("solution/"))  # fmt: skip

    return {name: data for name, data in files.items() if is_data(name)}


def test_the_fixture_bundle_imports_into_the_tasks_it_describes(project, tmp_path):
    files = members(BUNDLE)
    manifest = json.loads(files[layout.MANIFEST])
    assert manifest["draft"] is True

    report = import_bundle(project=project, path=BUNDLE)

    assert sorted(report.created) == ["sql_1", "swe_0"]
    for folder in report.created:
        task = Task.objects.get(project=project, domain=folder.split("_")[0])
        registry = json.loads(files[f"{folder}/{layout.REGISTRY}"])["blockers"]
        stored = list(task.blockers.order_by("position"))
        assert [b.key for b in stored] == [b["id"] for b in registry]
        assert [b.resolution for b in stored] == [b["resolution"] for b in registry]
    sql = Task.objects.get(project=project, domain="sql").sql_environment
    assert sql.database.path.read_bytes() == files[f"sql_1/{layout.SQL_DATABASE}"]
    assert sql.gold_sql == files[f"sql_1/{layout.SQL_GROUND_TRUTH}"].decode()
    swe = Task.objects.get(project=project, domain="swe").swe_environment
    metadata = json.loads(files[f"swe_0/{layout.METADATA}"])
    head = subprocess.run(
        ["git", "-C", str(swe.repository.path), "cat-file", "-t", swe.base_commit],
        capture_output=True,
        text=True,
        check=True,
    )
    assert head.stdout.strip() == "commit"
    assert swe.base_commit == metadata["repository_head"]
    assert swe.fail_to_pass == metadata["swe_bench_metadata"]["FAIL_TO_PASS"]

    again = import_bundle(project=project, path=BUNDLE)
    assert again.created == [] and sorted(again.unchanged) == ["sql_1", "swe_0"]


def test_its_tasks_export_the_same_task_data(project, lead, tmp_path):
    import_bundle(project=project, path=BUNDLE)
    tasks = list(Task.objects.filter(project=project).order_by("domain"))

    again = _data(members(export(project, tmp_path / "again.tar.gz", tasks=tasks)))

    before = _data(members(BUNDLE))
    assert sorted(again) == sorted(before)
    assert [name for name in before if again[name] != before[name]] == []
