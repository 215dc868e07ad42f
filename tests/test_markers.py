"""The suite's markers hold: a test that needs a container engine is marked ``containers``
(so `make test-fast` leaves it out), read from the test modules' source as the other rules of
tests/test_architecture.py are.

A test needs the engine when its body, or a fixture of its module it uses (by argument,
``usefixtures`` or ``autouse``), calls one of the helpers that skip (or, on CI, fail) without
one, or runs the ``docker`` command itself (``subprocess.run(["docker", …])``).
"""

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ENGINE_HELPERS = {"docker_or_skip", "_docker_or_skip", "_harbor_or_skip"}


def _calls(node: ast.AST) -> set[str]:
    names = set()
    for call in ast.walk(node):
        if isinstance(call, ast.Call):
            func = call.func
            names.add(func.id if isinstance(func, ast.Name) else getattr(func, "attr", ""))
    return names


def _runs_docker(call: ast.AST) -> bool:
    """``f(["docker", …], …)``: a command run (a list compared with one runs nothing)."""
    if not (isinstance(call, ast.Call) and call.args and isinstance(call.args[0], ast.List)):
        return False
    first = call.args[0].elts[:1]
    return bool(first) and isinstance(first[0], ast.Constant) and first[0].value == "docker"


def _needs_engine(node: ast.AST) -> bool:
    return bool(_calls(node) & ENGINE_HELPERS) or any(_runs_docker(n) for n in ast.walk(node))


def _decorator_names(func: ast.FunctionDef) -> list[str]:
    return [ast.unparse(d) for d in func.decorator_list]


def _marked(decorators: list[str], marker: str) -> bool:
    return any(d == f"pytest.mark.{marker}" or d.startswith(f"pytest.mark.{marker}(") for d in
               decorators)  # fmt: skip


def _module_marked(tree: ast.Module, marker: str) -> bool:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets
        ):
            return f"pytest.mark.{marker}" in ast.unparse(node.value)
    return False


def engine_tests_unmarked(path: Path) -> list[str]:
    """Tests of ``path`` that need a container engine and are not marked ``containers``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    if _module_marked(tree, "containers"):
        return []
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
    fixtures, autouse = {}, set()
    for func in functions:
        for decorator in func.decorator_list:
            text = ast.unparse(decorator)
            if text.startswith("pytest.fixture"):
                fixtures[func.name] = func
                if "autouse=True" in text:
                    autouse.add(func.name)
    needing = {name for name, f in fixtures.items() if _needs_engine(f)}
    unmarked = []
    for func in functions:
        if not func.name.startswith("test_"):
            continue
        decorators = _decorator_names(func)
        used = {a.arg for a in func.args.args} | autouse
        used |= {name for d in decorators if "usefixtures" in d for name in needing if name in d}
        if (_needs_engine(func) or used & needing) and not _marked(decorators, "containers"):
            unmarked.append(func.name)
    return unmarked


def test_every_test_that_needs_a_container_engine_is_marked_containers():
    unmarked = {
        str(path.relative_to(TESTS)): names
        for path in sorted(TESTS.rglob("test_*.py"))
        if (names := engine_tests_unmarked(path))
    }
    assert unmarked == {}


RULE_CASES = {
    "calls the helper": (
        "def test_a():\n    docker_or_skip()\n",
        ["test_a"],
    ),
    "marked": (
        "import pytest\n@pytest.mark.containers\ndef test_a():\n    docker_or_skip()\n",
        [],
    ),
    "module marked": (
        "import pytest\npytestmark = [pytest.mark.containers]\n"
        "def test_a():\n    _harbor_or_skip()\n",
        [],
    ),
    "by a fixture argument": (
        "import pytest\n@pytest.fixture\ndef engine():\n    docker_or_skip()\n"
        "def test_a(engine):\n    pass\ndef test_b(tmp_path):\n    pass\n",
        ["test_a"],
    ),
    "by usefixtures": (
        "import pytest\n@pytest.fixture\ndef docker():\n    docker_or_skip('x')\n"
        "@pytest.mark.usefixtures('docker')\ndef test_a(tmp_path):\n    pass\n",
        ["test_a"],
    ),
    "by an autouse fixture": (
        "import pytest\n@pytest.fixture(autouse=True)\ndef _e():\n    _docker_or_skip()\n"
        "def test_a():\n    pass\n",
        ["test_a"],
    ),
    "runs docker itself": (
        "import subprocess\ndef test_a():\n    subprocess.run(['docker', 'ps'])\n",
        ["test_a"],
    ),
    "compares a docker command": (
        "def test_a(calls):\n    assert calls[0][:2] == ['docker', 'build']\n",
        [],
    ),
    "no engine": ("def test_a():\n    assert 1\n", []),
}


@pytest.mark.parametrize("source, expected", RULE_CASES.values(), ids=RULE_CASES.keys())
def test_the_rule_finds_what_it_should(tmp_path, source, expected):
    path = tmp_path / "test_case.py"
    path.write_text(source)
    assert engine_tests_unmarked(path) == expected
