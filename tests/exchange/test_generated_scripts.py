"""Security review (a): what an upload puts in a field never runs in a script the export writes.

Each script the export generates (``test.sh``, ``solve.sh``, the sidecars' ``build.sh``) is
written through the real export — a release folder imported with ``import_hilbench`` and
exported with ``export_bundle``, or an app task's mode folder from ``modes`` — with
``$(touch …)``, backticks, quotes, a backslash, ``!`` and a line break in the field that
reaches it, then run by bash in a temporary folder. Only the commands the script calls are
stubbed (``python3``, ``docker``, ``cp``, ``git``: each records its arguments), so what bash
itself makes of the script is real: no command substitution runs (the marker file never
appears) and the value arrives where it goes, literally.
"""

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from django.core.management import call_command

from exchange.bundles import layout, modes
from exchange.bundles.release_runtime import FETCH, SIDECAR_DIR
from hilbench_annotate.envspec import EMPTY
from hilbench_annotate.models import Task

from ..conftest import FIXTURES
from .bundle_helpers import members

pytestmark = pytest.mark.django_db
MODES = ("baseline", "ask_human", "full_info")
STUBBED = ("python3", "python", "docker", "cp", "git")


def hostile(marker: Path) -> str:
    """A value that runs ``touch marker`` wherever a shell evaluates it instead of quoting it."""
    return (
        f"db $(touch {marker}) `touch {marker}` \"double\" 'single' ${{HOME}} back\\slash "
        f"bang!\nsecond line; touch {marker}"
    )


def _stubs(folder: Path) -> Path:
    """A folder of stand-ins for the commands scripts call: each writes its name and its
    arguments (NUL-separated) to a file of its own in ``$CALLS``."""
    folder.mkdir()
    for name in STUBBED:
        stub = folder / name
        stub.write_text(
            "#!/bin/sh\n"
            'n=$(ls "$CALLS" | wc -l)\n'
            'printf \'%s\\0\' "$(basename "$0")" "$@" > "$CALLS/$n"\n'
        )
        stub.chmod(0o755)
    return folder


def run_script(script: bytes, tmp: Path, **env: str) -> tuple[subprocess.CompletedProcess, list]:
    """``script`` run by bash in a fresh folder under ``tmp``, the stubs first on PATH:
    (the finished process, each stubbed call as [name, *arguments])."""
    work = tmp / f"run-{len(list(tmp.glob('run-*')))}"
    work.mkdir()
    calls = work / "calls"
    calls.mkdir()
    bin_dir = _stubs(work / "bin")
    path = work / "script.sh"
    path.write_bytes(script)
    done = subprocess.run(
        ["/bin/bash", str(path)],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": f"{bin_dir}:/usr/bin:/bin", "CALLS": str(calls), "HOME": str(work), **env},
    )
    recorded = sorted(calls.iterdir(), key=lambda p: int(p.name))
    return done, [p.read_bytes().decode().split("\0")[:-1] for p in recorded]


def _release_folder(root: Path, domain: str, folder: str) -> Path:
    target = root / domain / folder
    shutil.copytree(FIXTURES / "hilbench" / domain / folder, target)
    return target


def _import_and_export(project, root: Path, tmp: Path) -> dict[str, bytes]:
    for domain in ("sql", "swe"):
        if (root / domain).is_dir():
            call_command("import_hilbench", str(root / domain), project=project.slug)
    out = tmp / "bundle.tar.gz"
    tasks = [t.pk for t in Task.objects.filter(project=project)]
    call_command("export_bundle", project=project.slug, out=str(out), tasks=tasks, draft=True)
    return members(out)


@pytest.mark.parametrize("field", ["db_artifact_path", "hf_bucket", "desc_artifact_paths"])
def test_a_release_archive_field_reaches_the_verifier_literally(project, lead, tmp_path, field):
    """The finding: ``shared/data_archive.json``'s fields were JSON-quoted into a
    double-quoted bash string in ``test.sh``, so ``$(…)`` ran in the verifier."""
    marker = tmp_path / "pwned"
    value = hostile(marker)
    folder = _release_folder(tmp_path / "release", "sql", "sql_0")
    archive = json.loads((folder / "shared/data_archive.json").read_text())
    archive[field] = [value] if field == "desc_artifact_paths" else value
    (folder / "shared/data_archive.json").write_text(json.dumps(archive))
    files = _import_and_export(project, tmp_path / "release", tmp_path)

    # What the verifier says is the FETCH.md paragraph as plain text (its markdown code
    # marks, the backticks, dropped); the column descriptions are not in that paragraph.
    where = archive["db_artifact_path"].replace("`", "")
    bucket = archive["hf_bucket"].replace("`", "")
    sentence = (
        f"The release keeps this task's database outside its repository: {where} in the "
        f"Hugging Face bucket {bucket}. Fetch it to shared/data/database.sqlite of this task "
        "folder (every mode mounts shared/data at /data)."
    )
    absent = tmp_path / "absent.sqlite"
    present = tmp_path / "database.sqlite"
    present.write_bytes(b"")
    for mode in MODES:
        test = files[f"sql_0/{mode}/tests/test.sh"]
        done, calls = run_script(test, tmp_path, HILBENCH_DATABASE=str(absent))
        assert done.returncode == 1, done.stderr
        assert done.stderr == f"verifier: no {absent}: {sentence}\n"
        assert calls == []
        done, calls = run_script(test, tmp_path, HILBENCH_DATABASE=str(present))
        assert done.returncode == 0, done.stderr
        assert calls == [
            ["python3", "/tests/grade.py", layout.SUBMISSION, str(present),
             "/tests/golden_output.csv", "/logs/verifier/reward.txt"]
        ]  # fmt: skip
    assert not marker.exists(), "a command in data_archive.json ran in test.sh"
    # FETCH.md (read by people, never run) carries the value as it is.
    assert value in files[f"sql_0/{FETCH}"].decode()
    if field == "desc_artifact_paths":
        assert value not in files["sql_0/full_info/tests/test.sh"].decode()


def test_the_sidecars_build_script_builds_only_the_images_it_knows(project, lead, tmp_path):
    """``build.sh`` names the sidecar images a release compose file names: only the app's
    own servers (a name is matched against them), each word quoted for sh."""
    marker = tmp_path / "pwned"
    folder = _release_folder(tmp_path / "release", "sql", "sql_0")
    compose = folder / "baseline/environment/docker-compose.yaml"
    compose.write_text(
        compose.read_text()
        + f"  extra:\n    image: hil-bench-harbor/$(touch {marker}):latest\n"
        + f"  other:\n    image: hil-bench-harbor/x`touch {marker}`:latest\n"
    )
    files = _import_and_export(project, tmp_path / "release", tmp_path)
    done, calls = run_script(files[f"sql_0/{SIDECAR_DIR}/build.sh"], tmp_path)
    assert done.returncode == 0, done.stderr
    builds = [call for call in calls if call[:2] == ["docker", "build"]]
    assert sorted(call[-1] for call in builds) == ["ask-human", "business-info", "sql-tools"]
    for call in builds:  # under the app's own tag and label (the release's name comes after)
        name = call[-1]
        label = "hilbench.built-by=hilbench-annotate"
        assert call == ["docker", "build", "-q", "--label", label, "-t",
                        f"hilbench-sidecar/{name}:release", name]  # fmt: skip
    names = {"ask-human", "business-info", "sql-tools"}
    assert all(a.split("/")[1].split(":")[0] in names for c in calls for a in c[2:] if "/" in a)
    assert not marker.exists()


def test_a_release_swe_task_s_fields_reach_the_verifier_as_data(project, lead, tmp_path):
    """A release SWE task's tests and test command reach ``tests.json`` (data the grader
    reads), never ``test.sh``'s text: the script is the same whatever they hold."""
    marker = tmp_path / "pwned"
    value = hostile(marker)
    folder = _release_folder(tmp_path / "release", "swe", "swe_0")
    metadata = json.loads((folder / "shared/metadata.json").read_text())
    metadata["swe_bench_metadata"]["FAIL_TO_PASS"].append(value)
    metadata["swe_bench_metadata"]["PASS_TO_PASS"].append(value)
    (folder / "shared/metadata.json").write_text(json.dumps(metadata))
    files = _import_and_export(project, tmp_path / "release", tmp_path)
    for mode in MODES:
        test = files[f"swe_0/{mode}/tests/test.sh"]
        assert value not in test.decode()
        done, calls = run_script(test, tmp_path)
        assert done.returncode == 0, done.stderr
        assert calls == [["python3", "/tests/grade.py", "/tests/tests.json",
                          "/logs/verifier/reward.txt"]]  # fmt: skip
        tests = json.loads(files[f"swe_0/{mode}/tests/tests.json"])
        assert value in tests["fail_to_pass"] and value in tests["pass_to_pass"]
    assert not marker.exists()


def test_an_app_sql_task_s_solution_and_verifier_take_its_text_as_files(tmp_path):
    marker = tmp_path / "pwned"
    value = hostile(marker)
    files = modes.sql_mode_files(
        mode="ask_human", folder="sql_0", image="hilbench-annotate/sql_0-ask_human:abc",
        data={"business_info.json": b"{}"}, registry=b"{}", gold_sql=value,
        golden_output=value, judge_settings={"context": value},
    )  # fmt: skip
    assert files["solution/ground_truth.sql"] == value.encode()
    done, calls = run_script(files["solution/solve.sh"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert calls == [["cp", "/solution/ground_truth.sql", layout.SUBMISSION]]
    done, calls = run_script(files["tests/test.sh"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert calls == [["python3", "/tests/grade.py", layout.SUBMISSION, "/tests/database.sqlite",
                      "/tests/golden_output.csv", "/logs/verifier/reward.txt"]]  # fmt: skip
    assert not marker.exists()


def test_an_app_swe_task_s_solution_and_verifier_take_its_text_as_files(tmp_path):
    marker = tmp_path / "pwned"
    value = hostile(marker)
    tests = {"fail_to_pass": [value], "pass_to_pass": [value], "test_command": value,
             "log_parser": "pytest"}  # fmt: skip
    files = modes.swe_mode_files(
        mode="baseline", folder="swe_0", image="hilbench-annotate/swe_0-baseline:abc",
        repository=None, spec={**EMPTY, "run_script": value}, registry=b"{}",
        gold_patch=value, test_patch=value, tests=tests, judge_settings={},
    )  # fmt: skip
    repo = tmp_path / "repo"
    repo.mkdir()
    done, calls = run_script(files["solution/solve.sh"], tmp_path, REPO=str(repo))
    assert done.returncode == 0, done.stderr
    assert calls == [["git", "apply", "--whitespace=nowarn", "/solution/ground_truth.patch"]]
    assert files["solution/ground_truth.patch"] == value.encode()
    done, calls = run_script(files["tests/test.sh"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert calls == [["python3", "/tests/grade.py", "/tests/tests.json",
                      "/logs/verifier/reward.txt", modes.AGENT_PATCH]]  # fmt: skip
    assert json.loads(files["tests/tests.json"])["test_command"] == value
    assert not marker.exists()
