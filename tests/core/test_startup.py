"""A management command starts without the libraries only some work needs.

Every app's ``AppConfig.ready`` imports most of its modules (gates, panels, bulk actions, job
kinds, run executors, warm-ups, revision hooks), so a module-level import of numpy, pygit2,
GitPython or sqlglot anywhere on that path was paid by every command, worker and web
process: 0.2 s of ``manage.py import_bird --help``'s 0.72 s. The functions that use them
import them (docs/architecture.md, "Start-up").
"""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("numpy", "pygit2", "git", "sqlglot")

# manage.py as the shell runs it, then what the process holds once the command is done.
PROBE = """
import json, sys
sys.argv = ["manage.py", "import_bird", "--help"]
import manage
try:
    manage.main()
except SystemExit:
    pass
from django.apps import apps
from hilbench_annotate import bulk_actions, gates, jobs, revision_hooks, warmup
from evaluation.services.runs import RUN_EXECUTORS
print(json.dumps({
    "heavy": sorted(m for m in HEAVY if m in sys.modules),
    "ready": apps.ready,
    "gates": gates.gate_names(),
    "kinds": sorted(jobs.KINDS),
    "bulk": sorted(bulk_actions._ACTIONS),
    "hooks": sorted(revision_hooks._HOOKS),
    "warmups": sorted(warmup._WARMUPS),
    "executors": sorted(RUN_EXECUTORS),
}))
"""


def _run_probe(tmp_path) -> tuple[str, dict]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "CELERY_"))}
    env.update(
        DJANGO_SETTINGS_MODULE="hilbench_annotate.settings",
        DJANGO_SECRET_KEY="startup-test",
        HILBENCH_VAR_DIR=str(tmp_path),
    )
    done = subprocess.run(
        [sys.executable, "-c", f"HEAVY = {HEAVY!r}\n{PROBE}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    *help_lines, last = done.stdout.strip().splitlines()
    return "\n".join(help_lines), json.loads(last)


def test_a_command_starts_without_numpy_pygit2_gitpython_or_sqlglot(tmp_path):
    help_text, loaded = _run_probe(tmp_path)

    assert loaded["heavy"] == [], f"loaded at start-up: {loaded['heavy']}"
    # Not because start-up was skipped: every app's ready ran and registered its pieces.
    assert "--questions" in help_text and "--databases" in help_text
    assert loaded["ready"] is True
    assert {"lint_clean", "structural", "judge_recall", "pass_rate"} <= set(loaded["gates"])
    assert {"exchange.ImportJob", "validators.ValidationRun", "evaluation.EvaluationRun"} <= set(
        loaded["kinds"]
    )
    assert {"add_tag", "assign", "structural_checks"} <= set(loaded["bulk"])
    assert "judge_index" in loaded["hooks"]
    assert "judge" in loaded["warmups"]
    assert "harbor" in loaded["executors"]
