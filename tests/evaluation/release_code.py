"""The HiL-Bench release's own scoring code, loaded from where it lies in ../shared
(``examples/hilbench/harness-reference/``) and run there, never copied into the project.

* ``sql()``: ``hil_bench/utils/calculate_sql_pass_at_1.py`` as it is (it needs pandas, which
  the project's test extras pin for this).
* ``hil_metrics()``: ``hil_bench/utils/compute_hil_metrics.py``. Its one import,
  ``from ..ask_human_server import Log`` (a type), would load the release's Flask and litellm
  server; it is given a stand-in module holding ``Log`` instead.
* ``runner()``: ``run_hil_bench.py``'s functions and constants (``summarize_rows``,
  ``parse_metrics_rows``, its own ``compute_hil_metrics``…), compiled from the file's own
  syntax tree without its imports of chromadb, datasets and tqdm, which they do not use.

Each skips the calling test with the reason when ../shared or pandas is not there.
"""

from __future__ import annotations
import __future__

import ast
import functools
import importlib.util
import json
import os
import re
import sys
import types
from collections import defaultdict
from pathlib import Path
from typing import Any, TypedDict

import pytest

from ..conftest import shared_path

PANDAS_REASON = (
    "the HiL-Bench release's scoring code reads results with pandas; install the test "
    "extras (pip install -e '.[dev]')"
)


def root() -> Path:
    """The release's harness folder in ../shared (skips the test where it is absent)."""
    return shared_path("examples", "hilbench", "harness-reference")


def _load(name: str, path: Path, package: str | None = None) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    if package:
        module.__package__ = package
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@functools.cache
def _sql(path: str) -> types.ModuleType:
    return _load("hilbench_release_sql", Path(path))


def sql() -> types.ModuleType:
    pytest.importorskip("pandas", reason=PANDAS_REASON)
    return _sql(str(root() / "hil_bench" / "utils" / "calculate_sql_pass_at_1.py"))


@functools.cache
def _hil_metrics(path: str) -> types.ModuleType:
    package = "hilbench_release"
    for name in (package, f"{package}.utils"):
        stub = types.ModuleType(name)
        stub.__path__ = []
        sys.modules.setdefault(name, stub)
    server = types.ModuleType(f"{package}.ask_human_server")
    server.Log = TypedDict("Log", {"questions": list, "n_blockers": int, "blockers": dict})
    sys.modules[server.__name__] = server
    return _load(f"{package}.utils.compute_hil_metrics", Path(path), f"{package}.utils")


def hil_metrics() -> types.ModuleType:
    return _hil_metrics(str(root() / "hil_bench" / "utils" / "compute_hil_metrics.py"))


@functools.cache
def _runner(path: str) -> types.SimpleNamespace:
    tree = ast.parse(Path(path).read_text(), filename=path)
    namespace: dict[str, Any] = {
        "__name__": "hilbench_release_run_hil_bench",
        "Any": Any,
        "Path": Path,
        "defaultdict": defaultdict,
        "json": json,
        "os": os,
        "re": re,
    }
    for node in tree.body:
        constant = isinstance(node, ast.Assign) and all(
            isinstance(t, ast.Name) and t.id.isupper() for t in node.targets
        )
        if not (isinstance(node, ast.FunctionDef) or constant):
            continue  # imports, and the module's thread lock
        module = ast.Module(body=[node], type_ignores=[])
        # The file's own ``from __future__ import annotations``: annotations stay unevaluated.
        code = compile(module, path, "exec", flags=__future__.annotations.compiler_flag)
        try:
            exec(code, namespace)  # noqa: S102 - the release's own code, read from ../shared
        except NameError:
            continue  # a constant built from a module these functions do not need
    return types.SimpleNamespace(**namespace)


def runner() -> types.SimpleNamespace:
    return _runner(str(root() / "run_hil_bench.py"))
