"""Time the history-leakage check on a 20,000-commit repository against ``git log -S``.

    .venv/bin/python bench/leakage.py [--commits 20000] [--rebuild] [--skip-pytest]

Then the same on a real repository when ``../shared/data/swe-bench`` is present: the pytest
mirror (its git bundle, cloned bare once under var/bench/pytest.git), every object of it
scanned for all the forbidden texts of one SWE-bench instance (its gold patch's lines and its
setup-free base), against one ``git log --all -S<text>`` — the ratio in one run, with the CPU
time each side used and the machine's load average (on a shared machine the wall times follow
both).

The point: ``check_leakage`` looks for every forbidden text (here 10) in every object of the
store in one streaming ``cat-file --batch-all-objects`` pass, while the obvious alternative,
``git log --all -S<text>``, diffs every commit and handles one string per run. The bench prints
both times so the claim "fast on big repositories" stays checked.

The repository (bare, under var/bench/leakage-repo) is built once with ``git fast-import`` from
a generated stream — one process, not one git call per commit — and reused afterwards. Its
history touches a few files; a few forbidden lines live in it for a while (so the check has
real hits to report), the others never appear.
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hilbench_annotate.toolkit.gitrepo import git_env, run_git  # noqa: E402
from validators.leakage import check_leakage, forbidden_texts  # noqa: E402

REPO = ROOT / "var" / "bench" / "leakage-repo"
FILES = [f"src/module_{n}.py" for n in range(5)]
LINES_PER_FILE = 80
T0 = 1_600_000_000

PLANTED = {  # forbidden line -> (commit where it appears, commit where it is removed)
    'raise ValueError("charge amount must be positive")': (15_000, 15_050),
    "TIMEOUT_SECONDS = 30  # agreed with the payments team": (2_000, 18_000),
    "return apply_discount(amount, rate=customer.discount_rate)": (19_990, None),
}
ABSENT = [
    "The timeout is thirty seconds, as agreed with the payments team",
    "cache_key = f'{tenant_id}:{order_id}:{currency}'",
    "if retry_count > MAX_RETRIES: raise PaymentGatewayTimeout(order_id)",
    "logger.warning('refund exceeds captured amount for %s', order_id)",
    "settings.PAYMENTS_WEBHOOK_SECRET = os.environ['WEBHOOK_SECRET']",
    "assert response.status_code == 409, response.content",
    "return Decimal(amount).quantize(Decimal('0.01'), rounding=ROUND_HALF_EVEN)",
]


def _line(file_index: int, line_index: int, version: int) -> str:
    return f"value_{file_index}_{line_index} = compute({line_index}, version={version})  # filler"


def _stream(commits: int):
    """fast-import commands, one commit at a time, each changing one line of one file."""
    files = [
        [_line(f, n, 0) for n in range(LINES_PER_FILE)] for f in range(len(FILES))
    ]  # file -> lines
    for number in range(1, commits + 1):
        chunks = []
        touched = [number % len(FILES)]
        lines = files[touched[0]]
        lines[(number * 7) % LINES_PER_FILE] = _line(touched[0], number % LINES_PER_FILE, number)
        for index, (text, (start, stop)) in enumerate(PLANTED.items()):
            target = files[index % len(FILES)]
            if number == start:
                target.append(f"    {text}")
                touched.append(index % len(FILES))
            if number == stop:
                target.remove(f"    {text}")
                touched.append(index % len(FILES))
        message = f"Change {number}\n".encode()
        when = T0 + number * 600
        chunks.append(b"commit refs/heads/main\n")
        chunks.append(f"committer Bench <bench@localhost> {when} +0000\n".encode())
        chunks.append(b"data %d\n%s" % (len(message), message))
        if number == 1:
            touched = list(range(len(FILES)))
        for file_index in sorted(set(touched)):
            content = ("\n".join(files[file_index]) + "\n").encode()
            chunks.append(f"M 100644 inline {FILES[file_index]}\n".encode())
            chunks.append(b"data %d\n%s\n" % (len(content), content))
        yield b"".join(chunks)


def build(commits: int) -> None:
    """Create the bare repository with ``git fast-import`` fed from :func:`_stream`."""
    with tempfile.TemporaryDirectory(prefix="hilbench-bench-") as home:
        if REPO.exists():
            subprocess.run(["rm", "-rf", str(REPO)], check=True)
        REPO.parent.mkdir(parents=True, exist_ok=True)
        run_git(None, ["init", "-q", "--bare", "--initial-branch=main", str(REPO)], home=Path(home))
        process = subprocess.Popen(
            ["git", f"--git-dir={REPO}", "fast-import", "--quiet"],
            stdin=subprocess.PIPE,
            env=git_env(Path(home)),
            cwd=home,
        )
        assert process.stdin is not None
        for chunk in _stream(commits):
            process.stdin.write(chunk)
        process.stdin.close()
        if process.wait(timeout=600) != 0:
            raise SystemExit("git fast-import failed")


def commit_count() -> int:
    if not (REPO / "HEAD").is_file():
        return 0
    result = run_git(REPO, ["rev-list", "--count", "HEAD"], check=False)
    return int(result.stdout) if result.returncode == 0 else 0


SHARED = ROOT.parent / "shared" / "data" / "swe-bench"
PYTEST = ROOT / "var" / "bench" / "pytest.git"
INSTANCE = "pytest-dev__pytest-7490"
ROUNDS = 5


def pytest_bench() -> None:
    bundle = SHARED / "pytest-dev__pytest.bundle"
    if not bundle.is_file():
        print(f"(no {bundle}: the real-repository figures are skipped)")
        return
    with tempfile.TemporaryDirectory(prefix="hilbench-bench-") as home:
        if not (PYTEST / "HEAD").is_file():
            run_git(None, ["clone", "-q", "--mirror", str(bundle), str(PYTEST)], home=Path(home))
        commits = run_git(PYTEST, ["rev-list", "--all", "--count"], home=Path(home)).stdout
    records = [json.loads(line) for line in (SHARED / "pytest-instances.jsonl").open()]
    record = next(r for r in records if r["instance_id"] == INSTANCE)
    forbidden = forbidden_texts(gold_patch=record["patch"], setup_patch="", resolutions=[])
    longest = max((t for _label, t in forbidden), key=len)
    checks, scans, logs, check_cpus, log_cpus = [], [], [], [], []
    load_before = os.getloadavg()
    for _round in range(ROUNDS):  # interleaved, so both see the same machine
        cpu, started = _cpu_seconds(), time.perf_counter()
        results = check_leakage(repo=PYTEST, base_commit=record["base_commit"], forbidden=forbidden)
        checks.append(time.perf_counter() - started)
        check_cpus.append(_cpu_seconds() - cpu)
        text = next(result for result in results if result.name == "no_forbidden_text")
        scans.append(text.details["seconds"])
        cpu, started = _cpu_seconds(), time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="hilbench-bench-") as home:
            args = ["log", "--all", "--format=%H", f"-S{longest}"]
            run_git(PYTEST, args, home=Path(home), timeout=900)
        logs.append(time.perf_counter() - started)
        log_cpus.append(_cpu_seconds() - cpu)
    load_after = os.getloadavg()
    check, scan, log = (statistics.median(v) for v in (checks, scans, logs))
    print(
        f"pytest ({int(commits)} commits, {text.details['objects_scanned']} objects), "
        f"{INSTANCE}'s {len(forbidden)} forbidden texts, median of {ROUNDS} interleaved rounds: "
        f"object scan {scan:.2f} s, whole check_leakage {check:.2f} s (every rule); "
        f"git log --all -S<one text> {log:.2f} s; ratio scan/log {scan / log:.2f}, "
        f"check/log {check / log:.2f}"
    )
    # On a machine others share, wall time follows the CPU each side needs: say both.
    print(
        f"  CPU (user + system, every process): check {statistics.median(check_cpus):.2f} s, "
        f"git log -S {statistics.median(log_cpus):.2f} s; load average (1, 5, 15 min) "
        f"{_load(load_before)} before, {_load(load_after)} after, on {os.cpu_count()} cores"
    )


def _cpu_seconds() -> float:
    """CPU time of this process and of the children it has waited for (git, helpers)."""
    own, children = (
        resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _load(averages: tuple[float, float, float]) -> str:
    return "/".join(f"{value:.2f}" for value in averages)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--commits", type=int, default=20_000)
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--skip-pytest", action="store_true")
    options = parser.parse_args()

    started = time.perf_counter()
    if options.rebuild or commit_count() < options.commits:
        build(options.commits)
        print(f"built {commit_count()} commits in {time.perf_counter() - started:.1f} s")
    else:
        print(f"reusing {REPO} ({commit_count()} commits)")
    base = run_git(REPO, ["rev-parse", f"HEAD~{options.commits // 2}"]).stdout.decode().strip()

    forbidden = [("gold patch added line", text) for text in PLANTED] + [
        ("absent text", text) for text in ABSENT
    ]
    started = time.perf_counter()
    results = check_leakage(repo=REPO, base_commit=base, forbidden=forbidden)
    check_seconds = time.perf_counter() - started
    text = next(result for result in results if result.name == "no_forbidden_text")
    leaked = text.details.get("texts_found", [])

    one = next(iter(PLANTED))
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="hilbench-bench-") as home:
        pickaxe = run_git(
            REPO, ["log", "--all", "--format=%H", f"-S{one}"], home=Path(home), timeout=600
        )
    log_seconds = time.perf_counter() - started

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="hilbench-bench-") as home:
        for _label, each in forbidden:
            args = ["log", "--all", "--format=%H", f"-S{each}"]
            run_git(REPO, args, home=Path(home), timeout=600)
    all_log_seconds = time.perf_counter() - started

    print(
        f"check_leakage, {len(forbidden)} texts: {check_seconds:.2f} s "
        f"(of which the object scan {text.details['seconds']:.2f} s), "
        f"{text.details['objects_scanned']} objects scanned, "
        f"{len(leaked)} texts found in {text.details.get('leak_count', 0)} objects"
    )
    print(
        f"git log --all -S<one text>: {log_seconds:.2f} s "
        f"({len(pickaxe.stdout.split())} commits found)"
    )
    print(
        f"git log --all -S, once per text for all {len(forbidden)} texts: {all_log_seconds:.2f} s"
    )
    for result in results:
        print(f"  {result.name}: {result.outcome}")
    if not options.skip_pytest:
        pytest_bench()


if __name__ == "__main__":
    main()
