"""Environment builds cold and cached, and what the sandbox costs per test run.

    .venv/bin/python bench/environments.py [--runs 30]

1. Builds the demo SWE task's environment (Python 3.11 + pytest from the package index) in a
   fresh sandbox root — cold — then asks for it again — cached (the acceptance: ≤ 1 s).
2. Runs the same commands bare (``subprocess``) and in the local sandbox (bubblewrap, no
   network, limits, a fresh copy of a small repository) and prints the median overhead per
   run (the goal: ≤ 150 ms).
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _median_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    var = Path(tempfile.mkdtemp(prefix="hilbench-envbench-"))
    var.chmod(0o755)
    os.environ["HILBENCH_VAR_DIR"] = str(var)
    os.environ.pop("DATABASE_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hilbench_annotate.settings")
    os.environ.setdefault("DJANGO_DEBUG", "1")  # a throwaway database, not a deployment
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from exchange.demo import swe_demo
    from exchange.importers import import_swebench
    from hilbench_annotate.models import Project, Task
    from validators.environments import environment_for
    from validators.sandbox import BwrapSandbox, SandboxLimits, run_folder

    call_command("migrate", verbosity=0)
    demo = swe_demo.build(var / "demo")
    user = get_user_model().objects.create(username="bench")
    project = Project.objects.create(name="Bench", slug="bench")
    import_swebench(
        project=project, instances=demo["instances"], repo=str(demo["repo"]), actor=user
    )
    env = Task.objects.get(project=project).swe_environment
    started = time.monotonic()
    built, failed = environment_for(env)
    cold = time.monotonic() - started
    assert built is not None, failed.error
    started = time.monotonic()
    again, _ = environment_for(env)
    cached = time.monotonic() - started
    print(f"environment build, cold:   {cold:6.2f} s  (Python 3.11 venv + pytest from the index)")
    print(f"environment build, cached: {cached * 1000:6.1f} ms")

    commands = {"true": "true", "python3 -c pass": "/usr/bin/python3 -c pass"}
    sandbox = BwrapSandbox()
    limits = SandboxLimits(wall_s=60)
    with run_folder() as folder:
        tree = folder / "tree"
        subprocess.run(["cp", "-a", str(demo["repo"]), str(tree)], check=True)
        for label, command in commands.items():
            bare, boxed = [], []
            for _ in range(args.runs):
                started = time.monotonic()
                subprocess.run(["/bin/sh", "-c", command], cwd=tree, check=True)
                bare.append(time.monotonic() - started)
                started = time.monotonic()
                result = sandbox.run(command=command, tree=tree, limits=limits)
                boxed.append(time.monotonic() - started)
                assert result.exit_code == 0, result.output
            overhead = _median_ms(boxed) - _median_ms(bare)
            print(
                f"{label:16s} bare {_median_ms(bare):6.1f} ms · sandbox {_median_ms(boxed):6.1f} "
                f"ms · overhead {overhead:6.1f} ms (median of {args.runs}, repository copied in)"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
