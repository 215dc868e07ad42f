"""Issue 27: Django's instances run ``./tests/runtests.py`` with SWE-bench's directives and its
log parser. No Django data is at hand, so a Django-shaped repository the test makes — a real
``tests/runtests.py`` (unittest underneath, as Django's is), a settings module, test packages
named by dotted labels, ``tests/requirements/py3.txt`` — is imported through SWE-bench's
specification for django/django 3.0 and proven in the sandbox: FAIL_TO_PASS fails before
the gold patch and passes with it, PASS_TO_PASS passes both times."""

from pathlib import Path

import pytest

from exchange.importers.swebench_env import environment_from_swebench
from validators.logparsers import FAILED, PASSED, parse_django
from validators.swe import BEFORE_CHECK, GOLD_CHECK, check_swe_tests

from .gitutil import git
from .test_swe_checks import mirror_of, swe_environment

pytestmark = pytest.mark.django_db

RUNTESTS = '''#!/usr/bin/env python
"""Django's test runner, in miniature: the same arguments, unittest's verbose output."""
import argparse
import os
import sys
import unittest

parser = argparse.ArgumentParser()
parser.add_argument("labels", nargs="*")
parser.add_argument("--verbosity", type=int, default=1)
parser.add_argument("--settings", required=True)
parser.add_argument("--parallel", default="1")
args = parser.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [here, os.path.dirname(here)]
os.environ["DJANGO_SETTINGS_MODULE"] = args.settings
settings = __import__(args.settings)
print("Testing against Django installed in %r with up to %s processes" % (here, args.parallel))
print("Using locale %s" % os.environ.get("LANG", "(none)"))
suite = unittest.defaultTestLoader.loadTestsFromNames(args.labels)
result = unittest.TextTestRunner(verbosity=args.verbosity, stream=sys.stderr).run(suite)
sys.exit(not result.wasSuccessful())
'''

TESTS_BEFORE = """import unittest

from slugs import slugify


class SlugifyTests(unittest.TestCase):
    def test_lower(self):
        self.assertEqual(slugify("ABC"), "abc")
"""

TEST_PATCH_TESTS = """
    def test_spaces(self):
        self.assertEqual(slugify("a b  c"), "a-b-c")
"""


def _diff(work: Path, change) -> str:
    change()
    diff = git(work, "diff")
    git(work, "checkout", "-q", ".")
    return diff


@pytest.fixture
def django_shaped(tmp_path):
    work = tmp_path / "django"
    (work / "tests" / "text_utils").mkdir(parents=True)
    (work / "tests" / "requirements").mkdir()
    (work / "slugs.py").write_text("def slugify(text):\n    return text.lower()\n")
    runtests = work / "tests" / "runtests.py"
    runtests.write_text(RUNTESTS)
    runtests.chmod(0o755)
    (work / "tests" / "test_sqlite.py").write_text(
        "DATABASES = {'default': {'ENGINE': 'django.db.backends.sqlite3'}}\n"
    )
    (work / "tests" / "text_utils" / "__init__.py").write_text("")
    (work / "tests" / "text_utils" / "tests.py").write_text(TESTS_BEFORE)
    (work / "tests" / "requirements" / "py3.txt").write_text("# nothing beyond Python\n")
    git(tmp_path, "init", "-q", str(work))
    git(work, "add", "-A")
    git(work, "commit", "-qm", "base")
    base = git(work, "rev-parse", "HEAD").strip()
    tests = work / "tests" / "text_utils" / "tests.py"
    test_patch = _diff(work, lambda: tests.write_text(TESTS_BEFORE + TEST_PATCH_TESTS))
    gold = _diff(
        work,
        lambda: (work / "slugs.py").write_text(
            "def slugify(text):\n    return '-'.join(text.lower().split())\n"
        ),
    )
    return work, mirror_of(work, tmp_path / "django.git"), base, test_patch, gold


def test_a_django_shaped_instance_is_proven_with_runtests_and_its_parser(django_shaped, app_data):
    _work, mirror, base, test_patch, gold = django_shaped
    spec, command, _notes = environment_from_swebench(
        repo="django/django",
        version="3.0",
        test_patch=test_patch,
        repository_has_tags=True,
        setup_commit=base,
    )
    assert command == (
        "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 text_utils.tests"
    )
    assert spec["log_parser"] == "django"
    assert spec["requirement_files"] == ["tests/requirements/py3.txt"]
    # SWE-bench pins Python 3.6 and installs Django itself (pip install -e .); this
    # repository is not a package, and the machine has 3.11: only those two are changed.
    spec = {**spec, "python": "3.11", "install": []}
    env = swe_environment(
        mirror,
        base_commit=base,
        test_patch=test_patch,
        gold_patch=gold,
        test_command=command,
        environment_spec=spec,
        # unittest's ids on Python 3.11 carry the method name after the class.
        fail_to_pass=["test_spaces (text_utils.tests.SlugifyTests.test_spaces)"],
        pass_to_pass=["test_lower (text_utils.tests.SlugifyTests.test_lower)"],
    )
    results = {r.name: r for r in check_swe_tests(env)}
    before, after = results[BEFORE_CHECK], results[GOLD_CHECK]
    assert before.outcome == "passed", before.message
    assert after.outcome == "passed", after.message
    assert before.details["network_isolated"] and after.details["network_isolated"]
    # eval_commands ran before the tests (the locale export reached runtests.py).
    assert "Using locale en_US.UTF-8" in after.details["log_tail"], after.details["log_tail"]


def test_the_django_parser_reads_swebench_shaped_logs():
    log = "\n".join(
        [
            "Testing against Django installed in '/testbed/django' with up to 1 processes",
            "test_a (admin_views.tests.AdminViewBasicTest) ... ok",
            "test_b (admin_views.tests.AdminViewBasicTest) ... FAIL",
            "test_c (admin_views.tests.AdminViewBasicTest) ... ERROR",
            "test_d (admin_views.tests.AdminViewBasicTest) ... skipped 'no db'",
            "test_e (admin_views.tests.AdminViewBasicTest) ... System check identified no "
            "issues (0 silenced).",
            "ok",
            "test_f (admin_views.tests.AdminViewBasicTest) ...  OK",
            "FAIL: test_g (admin_views.tests.AdminViewBasicTest)",
        ]
    )
    statuses = parse_django(log)
    assert statuses["test_a (admin_views.tests.AdminViewBasicTest)"] == PASSED
    assert statuses["test_b (admin_views.tests.AdminViewBasicTest)"] == FAILED
    assert statuses["test_c (admin_views.tests.AdminViewBasicTest)"] == "ERROR"
    assert statuses["test_d (admin_views.tests.AdminViewBasicTest)"] == "SKIPPED"
    assert statuses["test_e (admin_views.tests.AdminViewBasicTest)"] == PASSED
    assert statuses["test_f (admin_views.tests.AdminViewBasicTest)"] == PASSED
    assert statuses["test_g"] == FAILED  # SWE-bench keeps the header's second word
