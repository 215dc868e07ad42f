"""Issue 27: each shape of SWE-bench specification the importer meets, read from the vendored
data (``exchange/importers/swebench_specs.json``, swebench 4.1.0) as SWE-bench's harness
reads it; and an import of an instance whose environment cannot build here says why, naming
it."""

import json

import pytest

from exchange.importers import import_swebench
from exchange.importers.swebench_env import environment_from_swebench, swebench_specs
from hilbench_annotate.models import Task
from tests.validators.gitutil import git

SETUP = "e90702074e68e20dc8e5df5013ee3ecf22139c3e"
DJANGO_TEST_PATCH = (
    "diff --git a/tests/admin_views/tests.py b/tests/admin_views/tests.py\n"
    "--- a/tests/admin_views/tests.py\n+++ b/tests/admin_views/tests.py\n"
    "diff --git a/tests/utils_tests/files/strip_tags1.txt "
    "b/tests/utils_tests/files/strip_tags1.txt\n"
)


def _one_commit_repository(tmp_path, name: str, filename: str, text: str):
    """A repository of one commit holding ``filename``: (its folder, the commit)."""
    work = tmp_path / name
    work.mkdir()
    git(tmp_path, "init", "-q", str(work))
    (work / filename).write_text(text)
    git(work, "add", "-A")
    git(work, "commit", "-qm", "base")
    return work, git(work, "rev-parse", "HEAD").strip()


def _spec(repo, version, test_patch="", setup_commit=SETUP):
    return environment_from_swebench(
        repo=repo,
        version=version,
        test_patch=test_patch,
        repository_has_tags=True,
        setup_commit=setup_commit,
    )


def test_the_vendored_data_carries_the_harness_paths():
    specs = swebench_specs()
    assert specs["pylint-dev/pylint"]["requirement_paths"] == ["requirements_test.txt"]
    assert specs["django/django"]["requirement_paths"] == ["tests/requirements/py3.txt"]
    assert specs["pydata/xarray"]["conda_paths"] == [
        "ci/requirements/environment.yml",
        "environment.yml",
    ]
    assert specs["django/django"]["log_parser"] == "django"
    # How many versions of each kind the importer meets (the figures).
    kinds = {}
    for repo, entry in specs.items():
        for version_spec in entry["versions"].values():
            kind = tuple(version_spec.get("packages") or [])
            if kind in (("requirements.txt",), ("environment.yml",)):
                kinds.setdefault(kind[0], {}).setdefault(repo, 0)
                kinds[kind[0]][repo] += 1
    assert kinds["requirements.txt"]["django/django"] == 17
    assert kinds["requirements.txt"]["pylint-dev/pylint"] == 14
    assert kinds["environment.yml"]["pydata/xarray"] == 9


def test_pip_packages():
    spec, command, notes = _spec("pytest-dev/pytest", "5.4", "diff --git a/t/x.py b/testing/t.py\n")
    assert "pluggy==0.13.1" in spec["packages"] or spec["packages"]
    assert spec["requirement_files"] == [] and spec["conda_files"] == []
    assert spec["requirements_commit"] == ""
    assert spec["install"] == ["python -m pip install -e ."]
    assert command == "pytest -rA testing/t.py" and notes == []


def test_requirement_files_are_the_repositorys_own_at_the_setup_commit():
    spec, command, notes = _spec("pylint-dev/pylint", "2.15", "diff --git a/a b/tests/t.py\n")
    assert spec["requirement_files"] == ["requirements_test.txt"]
    assert spec["requirements_commit"] == SETUP
    # Not a `pip install -r requirements.txt` in the checkout (the old reading).
    assert not any("requirements.txt" in c for c in spec["install"] + spec["pre_install"])
    assert spec["install"] == ["python -m pip install -e ."]
    assert spec["python"] == "3.9" and command == "pytest -rA tests/t.py" and notes == []


def test_a_conda_environment_is_named_and_noted_as_unbuildable():
    spec, _command, notes = _spec("pydata/xarray", "0.12")
    assert spec["conda_files"] == ["ci/requirements/environment.yml", "environment.yml"]
    assert spec["requirement_files"] == []
    [note] = notes
    assert note.startswith("pydata/xarray 0.12: cannot build here")
    assert "no conda channel" in note


def test_pre_install_commands_are_kept_and_apt_get_is_noted():
    spec, _command, notes = _spec("pytest-dev/pytest", "6.3")
    assert spec["pre_install"] == ["sed -i 's/>=>=/>=/' setup.cfg"] and notes == []
    spec, _command, notes = _spec("pylint-dev/pylint", "2.8")
    assert spec["pre_install"][0].startswith("apt-get update")
    assert any("apt-get" in n and "docker sandbox backend" in n for n in notes)


def test_djangos_runner_directives_parser_and_eval_commands():
    spec, command, _notes = _spec("django/django", "3.0", DJANGO_TEST_PATCH)
    assert command == (
        "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 admin_views.tests"
    )  # the test module as a dotted label; the .txt file is not a test module (NON_TEST_EXTS)
    assert spec["log_parser"] == "django"
    assert spec["requirement_files"] == ["tests/requirements/py3.txt"]
    assert "export LANG=en_US.UTF-8" in spec["eval_commands"]
    assert spec["python"] == "3.6"


@pytest.mark.django_db
def test_an_import_of_an_unbuildable_instance_says_why_naming_it(project, tmp_path):
    work, base = _one_commit_repository(tmp_path, "xarray", "xarray.py", "X = 1\n")
    records = [
        {
            "instance_id": f"pydata__xarray-{n}",
            "repo": "pydata/xarray",
            "base_commit": base,
            "environment_setup_commit": base,
            "version": "0.12",
            "problem_statement": "Fix it.",
            "patch": "diff --git a/xarray.py b/xarray.py\n",
            "test_patch": "diff --git a/t.py b/xarray/tests/test_x.py\n",
            "FAIL_TO_PASS": json.dumps(["xarray/tests/test_x.py::test_x"]),
            "PASS_TO_PASS": "[]",
        }
        for n in (1, 2)
    ]
    instances = tmp_path / "instances.jsonl"
    instances.write_text("".join(json.dumps(r) + "\n" for r in records))
    report = import_swebench(project=project, instances=instances, repo=str(work))
    assert report.created == ["pydata__xarray-1", "pydata__xarray-2"]
    [note] = report.notes
    assert "cannot build here" in note and "no conda channel" in note
    assert note.endswith("(pydata__xarray-1, pydata__xarray-2)")
    env = Task.objects.get(source_id="pydata__xarray-1").swe_environment
    assert env.environment_spec["conda_files"] == [
        "ci/requirements/environment.yml",
        "environment.yml",
    ]


@pytest.mark.django_db
def test_an_import_whose_requirement_file_is_missing_says_so(project, tmp_path):
    work, base = _one_commit_repository(tmp_path, "pylint", "setup.py", "")
    record = {
        "instance_id": "pylint-dev__pylint-1",
        "repo": "pylint-dev/pylint",
        "base_commit": base,
        "environment_setup_commit": "f" * 40,  # not in the repository
        "version": "2.15",
        "problem_statement": "Fix it.",
        "patch": "diff --git a/setup.py b/setup.py\n",
        "test_patch": "diff --git a/t.py b/tests/test_x.py\n",
        "FAIL_TO_PASS": ["tests/test_x.py::test_x"],
        "PASS_TO_PASS": [],
    }
    instances = tmp_path / "instances.jsonl"
    instances.write_text(json.dumps(record) + "\n")
    report = import_swebench(project=project, instances=instances, repo=str(work))
    assert report.created == ["pylint-dev__pylint-1"]
    assert any(
        "environment_setup_commit ffffffffffff is not in the repository" in n for n in report.notes
    )
    assert any(
        "the environment cannot build: No requirement file at commit" in n
        and "requirements_test.txt" in n
        and n.endswith("(pylint-dev__pylint-1)")
        for n in report.notes
    ), report.notes
