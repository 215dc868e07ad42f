"""Interpreters for environments: the machine's, by version, shown to runs read-only."""

import os
from pathlib import Path

import pytest

from hilbench_annotate.errors import DomainError
from validators import interpreters


def test_an_interpreter_under_usr_is_used_where_it_is():
    if not Path("/usr/bin/python3.11").exists():
        pytest.skip("no /usr/bin/python3.11 here")
    found = interpreters.resolve("3.11")
    assert found.executable == "/usr/bin/python3.11" and found.version.startswith("3.11.")
    assert found.mount is None  # every run sees /usr already: nothing is copied


def test_an_interpreter_elsewhere_is_copied_once_without_its_site_packages(settings, tmp_path):
    pyenv = Path(os.path.expanduser("~/.pyenv/versions"))
    versions = sorted(pyenv.glob("3.9*")) if pyenv.is_dir() else []
    if not versions:
        pytest.skip("no pyenv Python 3.9 here")
    found = interpreters.resolve("3.9")
    assert found.mount is not None
    assert found.mount.target == str(versions[-1])  # shown at its own path (absolute rpath)
    copy = found.mount.source
    assert copy.is_relative_to(Path(settings.SANDBOX_ROOT).resolve())
    assert not any((copy / "lib").glob("python3.9/site-packages/*"))
    assert interpreters.resolve("3.9").mount.source == copy  # the second time: the same copy


def test_a_missing_version_names_the_ones_there_are():
    with pytest.raises(DomainError, match=r"No Python 3\.1 on this machine \(it has 3\."):
        interpreters.resolve("3.1")
