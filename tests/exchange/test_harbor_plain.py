"""Issue 44, item 12: a bundle runs offline with a plain Harbor and nothing of the app.

Harbor's own Docker environment refuses a no-network task where its egress-control images
cannot be pulled (``network_mode='no-network' is not supported``). The bundle carries the
project's offline environment (``hilbench_harbor/``, the app's ``harbor_agents`` modules byte
for byte) and its ``README.md`` the one command. Run here as a stranger would: Harbor's own
venv, its working directory the extracted bundle outside the checkout, no ``PYTHONPATH`` to
the app (the app's packages are not importable there), the command read from the README.
The demo's blocked SQL task: Harbor's own environment refuses it, the bundle's runs it
with oracle 1, no-op 0.
"""

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from exchange.bundles import harness
from tests.validators.conftest import _skip, docker_or_skip

from ..conftest import ROOT
from .bundle_helpers import export, extract, manifest_files, members

pytestmark = [pytest.mark.django_db, pytest.mark.containers]
HARBOR = ROOT / ".venv-harbor"


def test_the_bundle_carries_the_offline_environment_and_the_command(demo_bundle):
    files = members(demo_bundle)
    for name in harness.MODULES:
        copy = files[f"{harness.PACKAGE}/{name}"]
        assert copy == (ROOT / "harbor_agents" / name).read_bytes(), name
        # The copy imports the standard library, Harbor and its own package: never the app.
        for node in ast.walk(ast.parse(copy)):
            if isinstance(node, ast.ImportFrom) and node.level:
                assert f"{node.module}.py" in harness.MODULES, (name, node.module)
                continue
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom):
                names = [node.module]
            for module in names:
                top = module.split(".")[0]
                assert top == "harbor" or top in sys.stdlib_module_names, (name, module)
    assert f"{harness.PACKAGE}/__init__.py" in files
    command = harness.offline_command("sql_0/baseline")
    assert command.encode() in files[harness.README]
    manifest = json.loads(files["manifest.json"])
    assert f"{harness.PACKAGE}/environments.py" in manifest_files(manifest)
    # The user guide says the same line.
    assert command in (ROOT / "docs" / "user-guide.md").read_text()


def _plain_env(tmp_path: Path) -> dict[str, str]:
    """Harbor's venv on PATH and its Docker Compose plugin; nothing of the app."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "VIRTUAL_ENV", "DJANGO_SETTINGS_MODULE")
        and not k.startswith("HILBENCH_")
    }
    env["PATH"] = f"{HARBOR / 'bin'}:{env.get('PATH', '/usr/bin:/bin')}"
    env["DOCKER_CONFIG"] = str(HARBOR / "docker")  # Compose v2 as a CLI plugin (make harbor)
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # Harbor's LiteLLM: no price-table download
    env["HOME"] = str(tmp_path / "home")
    return env


def _run(line: str, cwd: Path, env: dict) -> tuple[float | None, dict | None, str]:
    before = set((cwd / "jobs").glob("*")) if (cwd / "jobs").exists() else set()
    done = subprocess.run(
        ["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=1800
    )
    log = done.stdout[-3000:] + done.stderr[-3000:]
    jobs = set((cwd / "jobs").glob("*")) - before
    assert len(jobs) == 1, log
    results = list(jobs.pop().glob("*/result.json"))
    assert len(results) == 1, log
    [result_file] = results
    result = json.loads(result_file.read_text())
    rewards = (result.get("verifier_result") or {}).get("rewards") or {}
    return rewards.get("reward"), result.get("exception_info"), log


def test_a_plain_harbor_runs_an_exported_sql_task_offline(demo_bundle, tmp_path):
    if not (HARBOR / ".installed").is_file():
        _skip("no Harbor: `make harbor`")
    docker_or_skip()
    outside = tmp_path / "stranger"
    root = extract(demo_bundle, outside / "bundle")
    assert not root.resolve().is_relative_to(ROOT.resolve())
    readme = (root / harness.README).read_text()
    [line] = [x.strip() for x in readme.splitlines() if x.strip().startswith("PYTHONPATH=.")]
    assert line == harness.offline_command("sql_0/baseline")
    env = _plain_env(tmp_path)
    (tmp_path / "home").mkdir()
    # Nothing of the app is importable where the command runs.
    probe = subprocess.run(
        ["bash", "-c", "PYTHONPATH=. python -c 'import harbor_agents'"],
        cwd=root, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert probe.returncode != 0 and "No module named 'harbor_agents'" in probe.stderr
    # Harbor's own Docker environment refuses the task here (no registry: no egress control).
    refused = subprocess.run(
        ["bash", "-c", "harbor run -p sql_0/baseline -a oracle -o refused"],
        cwd=root, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert "network_mode='no-network' is not supported" in " ".join(
        (refused.stdout + refused.stderr).replace("│", " ").split()
    ), refused.stdout[-2000:]
    oracle, error, log = _run(line, root, env)
    print(f"\nplain Harbor, {line}: reward {oracle}")
    assert oracle == 1.0, (error, log)
    nop, error, log = _run(line.replace("-a oracle", "-a nop"), root, env)
    print(f"plain Harbor, {line.replace('-a oracle', '-a nop')}: reward {nop}")
    assert nop == 0.0, (error, log)


@pytest.mark.shared_data
def test_spider_questions_imported_fresh_score_oracle_1_in_a_plain_harbor(project, lead, tmp_path):
    """Issue 44's acceptance: tasks nobody prepared — Spider questions imported fresh (their
    golden output filled from the gold SQL at import), exported as a draft — run by the same
    plain Harbor line: oracle 1 on each, no-op 0."""
    if not (HARBOR / ".installed").is_file():
        _skip("no Harbor: `make harbor`")
    docker_or_skip()
    from django.core.management import call_command

    from hilbench_annotate.models import Task

    from .test_import_golden import _few_spider_questions

    questions, databases = _few_spider_questions(tmp_path, count=2)
    call_command("import_bird", questions=questions, databases=databases, project=project.slug)
    tasks = list(Task.objects.filter(project=project))
    assert len(tasks) == 2
    root = extract(export(project, tmp_path / "s.tar.gz", tasks=tasks), tmp_path / "x" / "bundle")
    env = _plain_env(tmp_path)
    (tmp_path / "home").mkdir()
    folders = sorted(p.name for p in root.glob("sql_*"))
    assert len(folders) == 2
    for folder in folders:
        line = harness.offline_command(f"{folder}/baseline")
        oracle, error, log = _run(line, root, env)
        print(f"\nplain Harbor, fresh Spider task {folder}: oracle {oracle}")
        assert oracle == 1.0, (error, log)
    nop, error, log = _run(harness.offline_command(f"{folders[0]}/baseline").replace(
        "-a oracle", "-a nop"), root, env)  # fmt: skip
    assert nop == 0.0, (error, log)
