"""Bundles in real containers: image builds, Harbor trials, Harbor's overhead, concurrency.

    .venv/bin/python bench/containers.py [--domains sql,swe] [--concurrency 1,2,3]

Needs `make containers` (the engine and the local base images) and `make harbor`. Exports the
demo's blocked SQL task and its planted SWE task (as tests/exchange/test_harbor_trials.py
does), then prints:

1. **Image build, cold and cached, per mode**: ``docker compose build`` of the mode's compose
   file (the agent's image and its sidecars) with ``--no-cache``, then again from the cache.
2. **One oracle trial per mode**: ``harbor run -a oracle`` wall time, and Harbor's own phase
   times from the trial's result.json (environment setup, agent, verifier).
3. **Harbor's per-trial overhead over a bare ``docker run``**: the same work — the mode's
   built image, ``solve.sh`` then the verifier's ``test.sh`` — in one ``docker run --rm``
   (SQL: the submission handed over in the container), against the oracle trial's wall time.
4. **N concurrent trials**: the task's three modes as one job with ``-n N`` for each N of
   ``--concurrency``: wall time and trials per minute, on this machine's cores.

Every figure is one run on a noisy shared machine: read them as sizes, not as constants.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from _setup import ROOT, configure, fresh_database  # noqa: E402 - sibling module

configure("containers.sqlite3")
HARBOR = ROOT / ".venv-harbor"
MODES = ("baseline", "ask_human", "full_info")
ENV = {
    **os.environ,
    "DOCKER_CONFIG": str(HARBOR / "docker"),
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "DOCKER_BUILDKIT": "0",
    "PYTHONPATH": str(ROOT),
}


def _export(work: Path, domains: list[str]) -> dict[str, Path]:
    from django.core.management import call_command

    from hilbench_annotate.models import Project
    from tests.exchange.bundle_helpers import extract, plant_swe, sql_task

    call_command("seed_demo", verbosity=0)
    project = Project.objects.get(slug="demo")
    tasks = {"sql": lambda: sql_task(project), "swe": lambda: plant_swe(project, work)}
    chosen = [tasks[d]() for d in domains]
    out = work / "bundle.tar.gz"
    call_command("export_bundle", project="demo", out=str(out), tasks=[t.pk for t in chosen],
                 draft=True, verbosity=0)  # fmt: skip
    root = extract(out, work / "bundle")
    return {d: root / f"{d}_0" for d in domains}


def _timed(command: list, **kwargs) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    done = subprocess.run(command, env=ENV, capture_output=True, text=True, **kwargs)
    return time.perf_counter() - start, done


def _compose(mode: Path, *args: str) -> list:
    project = f"bench-{mode.parent.name}-{mode.name}".replace("_", "-")
    compose = mode / "environment" / "docker-compose.yaml"
    return ["docker", "compose", "-p", project, "-f", str(compose), *args]


def _builds(mode: Path) -> tuple[float, float]:
    cold, done = _timed(_compose(mode, "build", "--no-cache"))
    if done.returncode:
        sys.exit(f"build of {mode} failed: {done.stderr[-2000:]}")
    cached, _ = _timed(_compose(mode, "build"))
    return cold, cached


def _harbor(path: Path, jobs: Path, agent: str, concurrent: int = 1) -> tuple[float, list[dict]]:
    before = set(jobs.glob("*")) if jobs.exists() else set()
    wall, done = _timed([
        HARBOR / "bin" / "harbor", "run", "-e", "harbor_agents.environments:OfflineDocker",
        "-p", str(path), "-a", agent, "-o", str(jobs), "--override-cpus", "2",
        "-n", str(concurrent),
    ])  # fmt: skip
    [job] = set(jobs.glob("*")) - before
    results = [json.loads(p.read_text()) for p in sorted(job.glob("*/result.json"))]
    if not results:
        sys.exit(f"harbor run on {path} made no trial: {done.stdout[-2000:]}")
    return wall, results


def _phase(result: dict, name: str) -> float:
    phase = result.get(name) or {}
    start, end = phase.get("started_at"), phase.get("finished_at")
    if not start or not end:
        return 0.0
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


def _bare(mode: Path) -> float:
    """solve.sh then test.sh in one container of the mode's built agent image."""
    image = _image(mode)
    script = (
        "mkdir -p /logs/verifier /harbor_shared /tmp/hilbench && bash /solution/solve.sh "
        "&& bash /tests/test.sh; cat /logs/verifier/reward.txt"
    )
    wall, done = _timed([
        "docker", "run", "--rm", "--network", "none",
        "-v", f"{mode / 'solution'}:/solution:ro", "-v", f"{mode / 'tests'}:/tests:ro",
        image, "bash", "-c", script,
    ])  # fmt: skip
    reward = done.stdout.strip().splitlines()[-1:] or ["?"]
    print(f"    bare docker run: {wall:.1f} s, reward {reward[0]}")
    return wall


def _image(mode: Path) -> str:
    for line in (mode / "environment" / "docker-compose.yaml").read_text().splitlines():
        if line.strip().startswith("image:"):
            return line.split(":", 1)[1].strip()
    raise SystemExit(f"no image named in {mode}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domains", default="sql,swe")
    parser.add_argument("--concurrency", default="1,2,3")
    args = parser.parse_args()
    if not (HARBOR / ".installed").is_file() or shutil.which("docker") is None:
        sys.exit("needs `make containers` and `make harbor`")
    fresh_database()
    print(f"cores: {os.cpu_count()}")
    with tempfile.TemporaryDirectory(prefix="bench-containers-") as tmp:
        work = Path(tmp)
        tasks = _export(work, args.domains.split(","))
        jobs = work / "jobs"
        for domain, task in tasks.items():
            print(f"\n{domain}: {task.name}")
            for name in MODES:
                mode = task / name
                cold, cached = _builds(mode)
                print(f"  {name}: build cold {cold:.1f} s, cached {cached:.1f} s")
                wall, [result] = _harbor(mode, jobs, "oracle")
                reward = ((result.get("verifier_result") or {}).get("rewards") or {}).get("reward")
                setup, agent, verify = (
                    _phase(result, k) for k in ("environment_setup", "agent_execution", "verifier")
                )
                print(f"    oracle trial: {wall:.1f} s wall, reward {reward} (environment "
                      f"{setup:.1f} s, agent {agent:.1f} s, verifier {verify:.1f} s)")  # fmt: skip
                bare = _bare(mode)
                print(f"    Harbor's overhead over a bare docker run: {wall - bare:.1f} s")
            for n in (int(c) for c in args.concurrency.split(",")):
                wall, results = _harbor(task, jobs, "oracle", concurrent=n)
                rewards = [
                    ((r.get("verifier_result") or {}).get("rewards") or {}).get("reward")
                    for r in results
                ]
                print(f"  {len(results)} trials, {n} at a time: {wall:.1f} s, "
                      f"{60 * len(results) / wall:.1f} trials/min, rewards {rewards}")  # fmt: skip
        for mode in (t / m for t in tasks.values() for m in MODES):
            subprocess.run(_compose(mode, "down", "--rmi", "local"), env=ENV, capture_output=True)


if __name__ == "__main__":
    main()
