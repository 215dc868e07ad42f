"""Issue 27: SWE-bench's ``packages: requirements.txt`` — the repository's own requirement
files, read at the instance's setup commit from the mirror — and the other specification
shapes (conda ``environment.yml``, ``eval_commands``), end to end on repositories the tests
make: resolved as SWE-bench's harness resolves them, built in the sandbox, shown on the
Environment tab, exported into the bundle."""

from pathlib import Path

import pytest
from django.urls import reverse

from hilbench_annotate.envspec import build_key, eval_script, spec_clean
from hilbench_annotate.errors import DomainError
from tests.factories import MembershipFactory, UserFactory
from validators.environments import environment_for
from validators.requirements import conda_unavailable, requirements_at, resolve_requirements
from validators.swe import BEFORE_CHECK, GOLD_CHECK, check_swe_tests

from .conftest import docker_or_skip
from .gitutil import git
from .test_swe_checks import mirror_of, swe_environment

pytestmark = pytest.mark.django_db

TINY_PACKAGE = {
    "vendor/tinyreq/pyproject.toml": (
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "tinyreq"\nversion = "1.0"\n'
    ),
    "vendor/tinyreq/tinyreq/__init__.py": "VALUE = 42\n",
}


def _member_of(project):
    user = UserFactory(username="env-author")
    MembershipFactory(project=project, user=user, role="author")
    return user


def _commit(work: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        path = work / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git(work, "add", "-A")
    git(work, "commit", "-qm", message)
    return git(work, "rev-parse", "HEAD").strip()


@pytest.fixture
def repo(tmp_path):
    """A repository whose requirement files change after its setup commit: at ``setup`` they
    install pytest and a package vendored in the repository (through ``-r``); at ``base``
    the top file names a package no registry has."""
    work = tmp_path / "reqs"
    work.mkdir()
    git(tmp_path, "init", "-q", str(work))
    setup = _commit(
        work,
        {
            **TINY_PACKAGE,
            "requirements_test.txt": (
                "-r requirements_test_min.txt\n-r requirements_gone.txt\n# Type packages\n"
                "types-pkg_resources==0.1.3\n-e .\n.[testing]\npytest==8.3.3  # pinned\n"
            ),
            "requirements_test_min.txt": "# the minimum\n./vendor/tinyreq\n-e .\n",
            "tests/test_x.py": (
                "import os\nimport tinyreq\n\n\ndef test_x():\n"
                "    assert tinyreq.VALUE == 42 and os.environ.get('FROM_EVAL') == 'yes'\n"
            ),
        },
        "setup",
    )
    base = _commit(work, {"requirements_test.txt": "no-such-package-anywhere==9.9\n"}, "base")
    return work, mirror_of(work, tmp_path / "reqs.git"), setup, base


def _env(mirror, base: str, test_command: str, **spec):
    """The task over ``mirror`` at ``base``, its one FAIL_TO_PASS test, Python 3.11 and
    ``spec``."""
    return swe_environment(
        mirror,
        base_commit=base,
        fail_to_pass=["tests/test_x.py::test_x"],
        test_command=test_command,
        environment_spec={"python": "3.11", **spec},
    )


def test_requirements_resolve_as_swebench_reads_them(repo):
    _work, mirror, setup, base = repo
    found = resolve_requirements(mirror, setup, ["requirements_dev.txt", "requirements_test.txt"])
    assert found.path == "requirements_test.txt"  # the first candidate present
    assert found.included == ["requirements_test_min.txt"]
    assert found.missing == ["requirements_gone.txt"]  # skipped, as SWE-bench skips it
    # Included lines first, then the file's own; "-e .", ".[test…" and comments dropped;
    # the yanked types-pkg_resources replaced by types-setuptools (REPLACE_REQ_PACKAGES).
    assert found.lines == ["./vendor/tinyreq", "types-setuptools", "pytest==8.3.3  # pinned"]
    # The commit matters: at the base commit the same file says something else.
    assert resolve_requirements(mirror, base, ["requirements_test.txt"]).lines == [
        "no-such-package-anywhere==9.9"
    ]
    with pytest.raises(DomainError) as refused:
        resolve_requirements(mirror, setup, ["requirements.txt", "req/dev.txt"])
    assert "requirements.txt, req/dev.txt" in str(refused.value)
    assert setup[:12] in str(refused.value)
    assert requirements_at(str(mirror), setup, ("nope.txt",))[0] is None


def test_the_specification_validates_and_keys_the_new_fields():
    spec = spec_clean(
        {
            "requirement_files": "requirements_test.txt\nci/dev.txt",
            "requirements_commit": "ABCDEF1234567",
            "eval_commands": ["export LANG=en_US.UTF-8"],
        }
    )
    assert spec["requirement_files"] == ["requirements_test.txt", "ci/dev.txt"]
    assert spec["requirements_commit"] == "abcdef1234567"
    for bad in (
        {"requirement_files": ["../outside.txt"]},
        {"requirement_files": ["/etc/passwd"]},
        {"conda_files": ["a b.yml"]},
        {"requirements_commit": "main; rm -rf /"},
    ):
        with pytest.raises(DomainError):
            spec_clean(bad)
    # Where the files are read is part of what the build installs; eval_commands are not.
    plain = spec_clean({"packages": ["pytest==8.3.3"]})
    with_files = {**plain, "requirement_files": ["r.txt"]}
    assert build_key(plain, base_commit="a" * 40) != build_key(with_files, base_commit="a" * 40)
    assert build_key(with_files, base_commit="a" * 40) != build_key(
        {**with_files, "requirements_commit": "b" * 40}, base_commit="a" * 40
    )
    assert build_key(plain, base_commit="a" * 40) == build_key(
        {**plain, "eval_commands": ["export X=1"]}, base_commit="a" * 40
    )
    assert eval_script({"eval_commands": ["export A=1", "false"]}, "pytest") == (
        "export A=1\nfalse\npytest"
    )


@pytest.mark.slow
def test_an_environment_builds_from_the_files_at_the_setup_commit(repo, app_data, client):
    """Built in the sandbox from the requirement files as they were at the setup commit
    (the base commit's would fail); the eval commands run before the tests; the Environment
    tab shows every line pip read."""
    _work, mirror, setup, base = repo
    env = swe_environment(
        mirror,
        base_commit=base,
        fail_to_pass=["tests/test_x.py::test_x"],
        gold_patch="",
        test_command="python -m pytest -rA tests/test_x.py",
        environment_spec={
            "language": "python",
            "python": "3.11",
            "requirement_files": ["requirements_test.txt"],
            "requirements_commit": setup,
            "eval_commands": ["export FROM_EVAL=yes", "locale-gen 2>/dev/null"],
            "log_parser": "pytest",
        },
    )
    built, failed = environment_for(env)
    assert failed is None, failed.log
    build = env.task.environment_builds.order_by("-id").first()
    assert "requirements: requirements_test.txt (with requirements_test_min.txt)" in build.log
    assert "pip install -r /env/requirements/requirements.txt" in build.log
    assert built.manifest["requirements"]["path"] == "requirements_test.txt"
    assert built.manifest["requirements"]["commit"] == setup
    # The test passes only with tinyreq installed and FROM_EVAL exported by eval_commands
    # (the failing locale-gen before it does not stop the run).
    results = {r.name: r for r in check_swe_tests(env)}
    assert results[GOLD_CHECK].outcome == "passed", results[GOLD_CHECK].message
    assert "pass before the gold patch" in results[BEFORE_CHECK].message  # no fix needed

    client.force_login(_member_of(env.task.project))
    page = client.get(reverse("environment-card", args=[env.task.pk])).content.decode()
    assert "requirements_test.txt" in page and "requirements_test_min.txt" in page
    assert "./vendor/tinyreq" in page and "types-setuptools" in page
    assert "3 requirement lines" in page


def test_a_missing_requirement_file_names_the_step_and_the_file(repo, app_data):
    _work, mirror, setup, base = repo
    env = _env(
        mirror,
        base,
        "python -m pytest -rA tests/test_x.py",
        requirement_files=["requirements/dev.txt"],
        requirements_commit=setup,
    )
    for result in check_swe_tests(env):
        assert result.outcome == "error"
        assert result.message.startswith(
            "The environment is not buildable: its build failed at step 'requirements'"
        ), result.message
        assert "No requirement file at commit" in result.message
        assert "requirements/dev.txt" in result.message


def test_a_conda_environment_says_plainly_it_cannot_build_here(repo, app_data, client):
    _work, mirror, _setup, base = repo
    env = _env(
        mirror,
        base,
        "pytest -rA tests/test_x.py",
        python="3.10",
        conda_files=["ci/requirements/environment.yml"],
    )
    built, failed = environment_for(env)
    assert built is None and failed.step == "conda"
    assert "conda environments cannot build on this machine" in failed.error
    assert "ci/requirements/environment.yml" in failed.error
    [before, _after] = check_swe_tests(env)
    assert "not buildable" in before.message and "no conda channel" in before.message
    client.force_login(_member_of(env.task.project))
    page = client.get(reverse("environment-card", args=[env.task.pk])).content.decode()
    assert "Environment not buildable on this machine." in page
    assert "no conda channel" in conda_unavailable(["environment.yml"])


def test_the_bundle_installs_the_same_resolved_lines():
    """An exported SWE mode folder carries the resolved requirement lines beside its
    Dockerfiles (agent and verifier), installed before the packages, and runs the
    eval_commands before the test command."""
    from exchange.bundles.modes import swe_mode_files

    spec = spec_clean(
        {"python": "3.9", "requirement_files": ["requirements_test.txt"], "packages": ["x==1"]}
    )
    files = swe_mode_files(
        mode="full_info",
        folder="swe_0",
        image="hilbench-swe:swe_0",
        repository=None,
        spec=spec,
        registry=b"[]",
        gold_patch="",
        test_patch="",
        tests={"test_command": eval_script({"eval_commands": ["export A=1"]}, "pytest -rA")},
        judge_settings={},
        requirements="./vendor/tinyreq\npytest==8.3.3\n",
    )
    assert files["environment/requirements.txt"] == b"./vendor/tinyreq\npytest==8.3.3\n"
    assert files["tests/requirements.txt"] == files["environment/requirements.txt"]
    for dockerfile in (files["environment/Dockerfile"], files["tests/Dockerfile"]):
        text = dockerfile.decode()
        assert "COPY requirements.txt /tmp/requirements.txt" in text
        assert text.index("pip install --no-cache-dir -r /tmp/requirements.txt") < text.index(
            "pip install --no-cache-dir x==1"
        )
    assert b'"test_command": "export A=1\\npytest -rA"' in files["tests/tests.json"]


@pytest.mark.containers
def test_the_docker_backend_builds_the_same_environment_as_an_image(repo, app_data, settings):
    """The docker sandbox backend, on this machine's engine and its local base image: the
    resolved lines installed as an image layer, the tests run in a container with no
    network."""
    docker_or_skip()
    settings.SANDBOX_BACKEND = "docker"
    _work, mirror, setup, base = repo
    env = _env(
        mirror,
        base,
        "python -m pytest -rA -p no:cacheprovider tests/test_x.py",
        requirement_files=["requirements_test.txt"],
        requirements_commit=setup,
        eval_commands=["export FROM_EVAL=yes"],
    )
    built, failed = environment_for(env)
    assert failed is None, (failed.error or "")[-3000:]
    assert built.manifest["image"].startswith("hilbench-env:")
    build = env.task.environment_builds.order_by("-id").first()
    assert "COPY requirements/requirements.txt /tmp/" in build.log
    results = {r.name: r for r in check_swe_tests(env)}
    assert results[GOLD_CHECK].outcome == "passed", results[GOLD_CHECK].message
    assert results[GOLD_CHECK].details["network_isolated"]


def test_an_attackers_r_lines_read_nothing_outside_the_repository(tmp_path):
    """``-r`` lines naming host files or climbing out of the repository are skipped and
    named: the files are read from the mirror's objects only, never from this machine."""
    work = tmp_path / "evil"
    work.mkdir()
    git(tmp_path, "init", "-q", str(work))
    commit = _commit(
        work,
        {"req.txt": "-r /etc/passwd\n-r ../../../etc/shadow\n-r ../req.txt\nok==1\n"},
        "evil",
    )
    mirror = mirror_of(work, tmp_path / "evil.git")
    found = resolve_requirements(mirror, commit, ["req.txt"])
    assert found.lines == ["ok==1"]
    assert found.included == []
    assert len(found.missing) == 3 and "root:" not in found.text
