"""The real SWE-bench instances of ../shared/data/swe-bench, end to end, and their table.

    .venv/bin/python bench/swebench.py [--repo pytest|pylint|all] [--only ID,ID] [--markdown]

Imports the instances (specifications filled from SWE-bench's own data), builds each
distinct environment once (local sandbox, network allowed while building), and runs every
instance's tests before and with the gold patch (sandbox, no network). Prints one row per
instance: FAIL_TO_PASS before / after, PASS_TO_PASS, the environment and the times. Uses a
fresh var folder and database of its own; exits 1 if any instance is not proven.
"""

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data" / "swe-bench"
# The repositories of ../shared/data/swe-bench: instances file and git bundle.
REPOS = {
    "pytest": ("pytest-instances.jsonl", "pytest-dev__pytest.bundle"),
    "pylint": ("pylint-instances.jsonl", "pylint-dev__pylint.bundle"),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", default="all", choices=[*REPOS, "all"])
    parser.add_argument("--only", default="", help="comma-separated instance ids")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args()
    if not DATA.is_dir():
        print(f"no data at {DATA}", file=sys.stderr)
        return 2
    var = Path(tempfile.mkdtemp(prefix="hilbench-swebench-"))
    var.chmod(0o755)  # the sandbox user reaches the environments under it
    os.environ["HILBENCH_VAR_DIR"] = str(var)
    os.environ.pop("DATABASE_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hilbench_annotate.settings")
    os.environ.setdefault("DJANGO_DEBUG", "1")  # a throwaway database, not a deployment
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from exchange.importers import import_swebench
    from hilbench_annotate.models import Project, Task
    from validators.environments import environment_key
    from validators.models import EnvironmentBuild
    from validators.swe import check_swe_tests

    call_command("migrate", verbosity=0)
    wanted = {i for i in args.only.split(",") if i}
    user = get_user_model().objects.create(username="bench")
    chosen = []
    for name in REPOS if args.repo == "all" else [args.repo]:
        instances, bundle = REPOS[name]
        records = [json.loads(line) for line in (DATA / instances).open()]
        mine = [r for r in records if not wanted or r["instance_id"] in wanted]
        if not mine:
            continue
        selection = var / f"{name}-instances.jsonl"
        selection.write_text("".join(json.dumps(r) + "\n" for r in mine))
        project = Project.objects.create(name=f"SWE-bench {name}", slug=f"swe-bench-{name}")
        started = time.monotonic()
        report = import_swebench(
            project=project, instances=selection, repo=str(DATA / bundle), actor=user
        )
        print(f"{name}: imported {len(mine)} instances in {time.monotonic() - started:.1f} s")
        for note in report.notes:
            print(f"  note: {note}")
        chosen += [(project, r) for r in mine]
    rows, proven = [], 0
    for project, record in chosen:
        task = Task.objects.get(project=project, source_id=record["instance_id"])
        env = task.swe_environment
        key = environment_key(env)
        cached = EnvironmentBuild.objects.filter(key=key, status="succeeded").exists()
        started = time.monotonic()
        before, after = check_swe_tests(env)
        seconds = time.monotonic() - started
        build = EnvironmentBuild.objects.filter(key=key).order_by("-id").first()
        ok = before.outcome == after.outcome == "passed"
        proven += ok
        row = {
            "instance": record["instance_id"],
            "version": record["version"],
            "f2p": len(env.fail_to_pass),
            "p2p": len(env.pass_to_pass),
            "before": before.outcome,
            "after": after.outcome,
            "environment": f"{key[:8]} ({'cached' if cached else 'built'})",
            "build_s": build.duration_s if build and not cached else 0.0,
            "total_s": round(seconds, 1),
            "why": "" if ok else (before.message if before.outcome != "passed" else after.message),
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.markdown:
        print("\n| instance | version | F2P fail before | F2P+P2P pass with gold | "
              "environment | build s | total s |")  # fmt: skip
        print("|---|---|---|---|---|---|---|")
        for r in rows:
            print(
                f"| {r['instance']} | {r['version']} | {r['before']} ({r['f2p']}) | "
                f"{r['after']} ({r['f2p'] + r['p2p']}) | {r['environment']} | "
                f"{r['build_s']} | {r['total_s']} |"
            )
    print(f"\n{proven} of {len(rows)} instances proven")
    return 0 if proven == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
