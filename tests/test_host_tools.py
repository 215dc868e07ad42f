"""docs/security.md names every module that hands bytes to a host-side tool (git, tar, sqlite,
sqlglot, an HTTP client, any subprocess); a module that starts calling one without being named
there for that tool fails here, so no new path from task-supplied bytes to the host goes
unreviewed."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPS = ("hilbench_annotate", "authoring", "review", "validators", "judge", "evaluation", "exchange")
PAGE = ROOT / "docs" / "security.md"
SUBPROCESS = {"run", "Popen", "check_output", "check_call", "call", "getoutput"}
# What a label found in the code must find in the tool cell of the row naming the module.
TOOL_WORDS = {
    "git": "git",
    "sqlite": "sqlite",
    "tar": "tar",
    "zip": "zip",
    "sqlglot": "sqlglot",
    "http": "HTTP",
    "bwrap": "bubblewrap",
}
# Rows whose modules never run on the host (the bundle's runtime) or read only our own text.
ANY_TOOL = ("in the bundle's containers", "our own demo data")


def _imports_git(node: ast.AST) -> bool:
    if isinstance(node, ast.Import):
        return any(a.name.split(".")[0] in ("git", "pygit2") for a in node.names)
    if isinstance(node, ast.ImportFrom):
        return (node.module or "").split(".")[0] in ("git", "pygit2")
    return False


def _call_label(node: ast.Call) -> str | None:
    func = node.func
    if isinstance(func, ast.Name):
        return "git" if func.id == "run_git" else None
    if not isinstance(func, ast.Attribute):
        return None
    value = func.value
    owner = value.id if isinstance(value, ast.Name) else getattr(value, "attr", None)
    if owner == "subprocess" and func.attr in SUBPROCESS:
        first = node.args[0] if node.args else None
        if isinstance(first, ast.List | ast.Tuple) and first.elts:
            head = first.elts[0]
            if isinstance(head, ast.Constant) and isinstance(head.value, str):
                return Path(head.value).name
        return "subprocess"
    if owner == "os" and (func.attr in ("system", "popen") or func.attr.startswith("exec")):
        return "subprocess"
    return {
        ("sqlite3", "connect"): "sqlite",
        ("tarfile", "open"): "tar",
        ("zipfile", "ZipFile"): "zip",
        ("sqlglot", "parse"): "sqlglot",
        ("sqlglot", "parse_one"): "sqlglot",
        ("sqlglot", "transpile"): "sqlglot",
        ("request", "urlopen"): "http",
        ("request", "build_opener"): "http",
        ("urllib", "urlopen"): "http",
        ("http", "client"): "http",
    }.get((owner, func.attr))


def tools_used(source: str) -> set[str]:
    """The host-side tools a module's code calls (labels of ``TOOL_WORDS``, a program's
    name for a literal command, ``subprocess`` for one built at run time)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if _imports_git(node):
            found.add("git")
        elif isinstance(node, ast.ImportFrom) and node.module == "http.client":
            found.add("http")
        elif isinstance(node, ast.Call):
            label = _call_label(node)
            if label:
                found.add(label)
    return found


def page_rows() -> list[tuple[str, set[str], set[str]]]:
    """(tool cell, modules, tests) of each row of the page's host-side tools table."""
    text = PAGE.read_text()
    section = text.split("## Host-side tools", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 5 or cells[0] in ("tool", "---"):
            continue
        modules = set(re.findall(r"`([\w/]+\.py)`", cells[1]))
        tests = set(re.findall(r"`(tests/[\w/]+\.py)`", cells[-1]))
        rows.append((cells[0], modules, tests))
    return rows


def _production_modules():
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path.relative_to(ROOT).as_posix(), path


def _covered(module: str, tool: str, rows) -> bool:
    for cell, modules, _tests in rows:
        if module not in modules:
            continue
        if cell.startswith(ANY_TOOL) or tool == "subprocess":
            return True
        if TOOL_WORDS.get(tool, tool).lower() in cell.lower():
            return True
    return False


def test_every_module_handing_bytes_to_a_host_tool_is_named_on_the_security_page():
    rows = page_rows()
    missing = [
        f"{module}: {tool}"
        for module, path in _production_modules()
        for tool in sorted(tools_used(path.read_text()))
        if not _covered(module, tool, rows)
    ]
    assert not missing, (
        "These modules call a host-side tool the security page does not name for them; add "
        "them to the table in docs/security.md with their defence and test:\n" + "\n".join(missing)
    )


def test_the_page_names_only_modules_and_tests_that_exist():
    rows = page_rows()
    assert len(rows) >= 10
    for cell, modules, tests in rows:
        assert modules, f"row {cell!r} names no module"
        assert tests, f"row {cell!r} names no test that proves its defence"
        for path in modules | tests:
            assert (ROOT / path).is_file(), f"docs/security.md names {path}, which is not there"


def test_the_rule_catches_each_shape():
    shapes = {
        "import subprocess\nsubprocess.run(['git', 'apply'])": {"git"},
        "import subprocess\nsubprocess.Popen(argv)": {"subprocess"},
        "import subprocess\nsubprocess.check_output(['tar', 'xf', p])": {"tar"},
        "from hilbench_annotate.toolkit.gitrepo import run_git\nrun_git(r, ['log'])": {"git"},
        "import git\ngit.Repo.clone_from(a, b)": {"git"},
        "import pygit2": {"git"},
        "import sqlite3\nsqlite3.connect(p)": {"sqlite"},
        "import tarfile\ntarfile.open(p)": {"tar"},
        "import sqlglot\nsqlglot.parse_one(sql)": {"sqlglot"},
        "import urllib.request\nurllib.request.urlopen(u)": {"http"},
        "import os\nos.system('ls')": {"subprocess"},
        "from http.client import HTTPConnection": {"http"},
        "import json\njson.loads(x)": set(),
    }
    for source, expected in shapes.items():
        assert tools_used(source) == expected, source
    rows = [("git (plumbing)", {"a/b.py"}, {"tests/x.py"})]
    assert _covered("a/b.py", "git", rows) and not _covered("a/b.py", "sqlite", rows)
    assert not _covered("a/c.py", "git", rows)
