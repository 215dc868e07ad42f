"""Requirement files fan out without bound (a security finding): ``requirements.txt`` naming a
200 kB ``big.txt`` 100 times took the Environment card 11 s and 20 MB of HTML, 18,000 times a
MemoryError at 2 GB. The whole expansion is bounded — lines, bytes and ``-r`` lines, an
``-r`` file counted each time it is named — and past a bound the resolver, the card, a build
and the SWE-bench import all say so in the same words, having read nothing past it."""

import json
import re
import time
import tracemalloc

import pytest
from django.urls import reverse

from exchange.importers import import_swebench
from hilbench_annotate.errors import DomainError
from hilbench_annotate.models import Task
from hilbench_annotate.vocabulary import Role
from tests.conftest import shared_path
from tests.factories import MembershipFactory, UserFactory
from validators import requirements as resolver
from validators.environments import environment_for
from validators.requirements import REMEMBERED, Bounds, requirements_at, resolve_requirements

from .gitutil import git
from .test_swe_checks import mirror_of, swe_environment

pytestmark = pytest.mark.django_db

# ~199 kB of distinct requirement lines, as the finding's big.txt.
BIG = "".join(f"package-{i:06d}==1.0\n" for i in range(199_000 // 20))
PASSES_LINES = "the expansion of requirements.txt passes 20,000 lines"
# Without a bound the resolver reads big.txt once per -r line: far past this, it has none.
UNBOUNDED_READ = 10_000_000


@pytest.fixture
def reads(monkeypatch):
    """The bytes the resolver reads from the mirror, stopped (as a failure) long before an
    unbounded fan-out could fill this machine's memory."""
    total = {"bytes": 0}
    real = resolver.read_file

    def counted(*args, **kwargs):
        text = real(*args, **kwargs)
        total["bytes"] += len(text)
        assert total["bytes"] < UNBOUNDED_READ, "the resolver reads without bound"
        return text

    monkeypatch.setattr(resolver, "read_file", counted)
    return total


@pytest.fixture
def fan_out(tmp_path):
    """A mirror whose commit holds ``requirements.txt`` naming ``big.txt`` 18,000 times (a
    198 kB file), ``fan100.txt`` naming it 100 times, and pylint's ordinary pair of files."""
    work = tmp_path / "fan"
    work.mkdir()
    git(tmp_path, "init", "-q", str(work))
    files = {
        "big.txt": BIG,
        "requirements.txt": "-r big.txt\n" * 18_000,
        "fan100.txt": "-r big.txt\n" * 100,
        "requirements_test.txt": "-r requirements_test_min.txt\ncoverage~=6.4\n",
        "requirements_test_min.txt": "-e .[testutils]\nastroid==2.12.2\npytest~=7.1\n",
    }
    for name, text in files.items():
        (work / name).write_text(text)
    git(work, "add", "-A")
    git(work, "commit", "-qm", "fan out")
    commit = git(work, "rev-parse", "HEAD").strip()
    return work, mirror_of(work, tmp_path / "fan.git"), commit


@pytest.mark.parametrize("top", ["requirements.txt", "fan100.txt"])
def test_a_fan_out_stops_at_the_bound_in_words_and_at_once(fan_out, reads, top):
    _work, mirror, commit = fan_out
    tracemalloc.start()
    started = time.monotonic()
    try:
        with pytest.raises(DomainError) as refused:
            resolve_requirements(mirror, commit, [top])
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.monotonic() - started < 5
    assert str(refused.value) == (
        f"the expansion of {top} passes 20,000 lines (an -r file counts each time it is "
        "named; HILBENCH_REQUIREMENTS_MAX_LINES); nothing was resolved past that, and "
        "nothing is installed from it."
    )
    assert reads["bytes"] < 1_000_000  # big.txt once, not once per -r line
    assert peak < 20_000_000  # the bounds and one file, never the expansion (20 MB, 3.6 GB)


def test_every_bound_is_said_and_nothing_under_it_is_refused(fan_out, settings):
    _work, mirror, commit = fan_out
    small = Bounds(lines=5, bytes=10_000, includes=1)
    assert resolve_requirements(mirror, commit, ["requirements_test.txt"], small).lines == [
        "astroid==2.12.2",
        "pytest~=7.1",
        "coverage~=6.4",
    ]
    cases = [
        (Bounds(lines=4, bytes=10_000, includes=1), "passes 4 lines"),
        (Bounds(lines=5, bytes=50, includes=1), "passes 50 bytes (an -r file counts"),
        (Bounds(lines=5, bytes=10_000, includes=0), "passes 0 -r lines"),
    ]
    for bounds, said in cases:
        with pytest.raises(DomainError, match=re.escape(said)):
            resolve_requirements(mirror, commit, ["requirements_test.txt"], bounds)
    # The settings are the default bounds, read when resolving.
    settings.REQUIREMENTS_MAX_INCLUDES = 0
    with pytest.raises(DomainError, match="HILBENCH_REQUIREMENTS_MAX_INCLUDES"):
        resolve_requirements(mirror, commit, ["requirements_test.txt"])


def test_an_ordinary_repository_resolves_as_before(fan_out):
    _work, mirror, commit = fan_out
    found, problem = requirements_at(str(mirror), commit, ("requirements_test.txt",))
    assert problem == ""
    assert found.path == "requirements_test.txt"
    assert found.included == ["requirements_test_min.txt"]
    assert found.lines == ["astroid==2.12.2", "pytest~=7.1", "coverage~=6.4"]


def test_the_web_process_remembers_the_refusal_not_the_expansion(fan_out, reads):
    _work, mirror, commit = fan_out
    REMEMBERED.clear()
    found, problem = requirements_at(str(mirror), commit, ("requirements.txt",))
    assert found is None and problem.startswith(PASSES_LINES)
    assert REMEMBERED.size < 2_000
    assert requirements_at(str(mirror), commit, ("requirements.txt",)) == (found, problem)


def test_the_cache_keeps_within_its_budget(fan_out):
    """Least recently used out first; an entry bigger than the whole budget is not kept."""
    _work, mirror, commit = fan_out
    remembered = type(REMEMBERED)(budget=5_000)
    found = resolve_requirements(mirror, commit, ["requirements_test.txt"])
    for n in range(10):
        remembered.put(("key", n), (found, ""))
        assert remembered.size <= 5_000
    assert remembered.get(("key", 0)) is None and remembered.get(("key", 9)) == (found, "")
    remembered.put(("huge",), (None, "x" * 6_000))
    assert remembered.get(("huge",)) is None


def test_the_environment_card_says_so_in_a_small_page(fan_out, reads, client):
    """The real view, as the task's author: 200, the message, no requirement lines."""
    _work, mirror, commit = fan_out
    for top in ("fan100.txt", "requirements.txt"):
        REMEMBERED.clear()
        env = swe_environment(
            mirror,
            base_commit=commit,
            environment_spec={"python": "3.11", "requirement_files": [top]},
        )
        author = UserFactory()
        MembershipFactory(project=env.task.project, user=author, role=Role.AUTHOR)
        Task.objects.filter(pk=env.task.pk).update(author=author)
        client.force_login(author)
        started = time.monotonic()
        response = client.get(reverse("environment-card", args=[env.task.pk]))
        assert time.monotonic() - started < 5
        assert response.status_code == 200
        page = response.content.decode()
        assert f"the expansion of {top} passes 20,000 lines" in page
        assert "package-000001" not in page and len(page) < 20_000
        assert "Build now" in page  # the author's card, with its button


def test_a_build_refuses_with_the_message_and_installs_nothing(fan_out, reads, app_data):
    _work, mirror, commit = fan_out
    env = swe_environment(
        mirror,
        base_commit=commit,
        fail_to_pass=["tests/test_x.py::test_x"],
        environment_spec={"python": "3.11", "requirement_files": ["requirements.txt"]},
    )
    built, failed = environment_for(env)
    assert built is None and failed.step == "requirements"
    assert PASSES_LINES in failed.error
    assert "package-000001" not in failed.log
    assert "pip install" not in failed.log


def test_the_swebench_import_notes_it(fan_out, reads, project, tmp_path):
    work, _mirror, commit = fan_out
    (work / "requirements_test.txt").write_text("-r big.txt\n" * 18_000)
    git(work, "commit", "-qam", "fan out pylint's file")
    base = git(work, "rev-parse", "HEAD").strip()
    record = {
        "instance_id": "pylint-dev__pylint-1",
        "repo": "pylint-dev/pylint",
        "base_commit": base,
        "environment_setup_commit": base,
        "version": "2.15",
        "problem_statement": "Fix it.",
        "patch": "diff --git a/big.txt b/big.txt\n",
        "test_patch": "diff --git a/t.py b/tests/test_x.py\n",
        "FAIL_TO_PASS": ["tests/test_x.py::test_x"],
        "PASS_TO_PASS": [],
    }
    instances = tmp_path / "instances.jsonl"
    instances.write_text(json.dumps(record) + "\n")
    report = import_swebench(project=project, instances=instances, repo=str(work))
    assert report.created == ["pylint-dev__pylint-1"]
    assert any(
        "the environment cannot build: the expansion of requirements_test.txt passes" in n
        for n in report.notes
    ), report.notes


@pytest.mark.shared_data
def test_real_requirement_files_fit_the_bounds_easily(tmp_path):
    """pylint's requirement files at each SWE-bench Lite instance's setup commit: a few dozen
    lines and one or two ``-r`` files, far under the defaults."""
    data = shared_path("data", "swe-bench")
    mirror = tmp_path / "pylint.git"
    git(tmp_path, "clone", "-q", "--mirror", str(data / "pylint-dev__pylint.bundle"), str(mirror))
    records = [json.loads(line) for line in (data / "pylint-instances.jsonl").open()]
    tight = Bounds(lines=200, bytes=20_000, includes=4)  # 1% of the defaults' lines
    for commit in {r["environment_setup_commit"] for r in records}:
        found = resolve_requirements(mirror, commit, ["requirements_test.txt"], tight)
        assert found.included and 5 < len(found.lines) < 100
