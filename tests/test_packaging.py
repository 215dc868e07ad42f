"""`pip install -e .` (every `make` target's first step) works whatever the tests or task code
left under var/: setuptools' package discovery, as pyproject.toml configures it, never walks
into the folders the app writes."""

import tomllib
from pathlib import Path

from setuptools.discovery import PackageFinder, PEP420PackageFinder

from hilbench_annotate.toolkit.trees import remove_tree

ROOT = Path(__file__).resolve().parent.parent


def test_package_discovery_does_not_walk_a_deep_tree_under_var(tmp_path):
    found = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    config = found["packages"]["find"]
    (tmp_path / "judge").mkdir()
    (tmp_path / "judge" / "__init__.py").write_text("")
    deep = tmp_path / "var" / "sandbox"
    deep.mkdir(parents=True)
    for _ in range(1200):  # one level at a time: Path.mkdir(parents=True) recurses too
        deep = deep / "d"
        deep.mkdir()
    finder = PEP420PackageFinder if config.get("namespaces", True) else PackageFinder
    try:
        packages = finder.find(str(tmp_path), exclude=config["exclude"], include=config["include"])
    finally:  # pytest clears old temporary folders with shutil.rmtree, which recurses
        remove_tree(tmp_path / "var")
    assert packages == ["judge"]
