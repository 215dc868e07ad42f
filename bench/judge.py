"""The embedded judge's speed and memory, and its accuracy figures.

    .venv/bin/python bench/judge.py [--examples ../shared/examples/hilbench]

* Load: time to load the encoder and the weights; resident memory before and after.
* Latency: single ``judge()`` calls against a 5-blocker registry (sql_0 of the release
  examples, or the demo's registry when they are absent) whose index is cached, p50 / p90 /
  p99 over 300 calls of varied questions; the first call on a new registry (building its
  index) separately.
* Throughput: ``judge_many`` over 1,200 questions.
* Accuracy: the cross-validated figures of the shipped weights, as ``make judge-weights``
  measured them (``judge/weights/embedded.json``), and the held-out release examples.
* Over HTTP (``--http``, the figure the issue asks for): the app's own server (gunicorn, as
  deployed: DEBUG off, 2 sync workers, each with the judge preloaded) on a fresh database
  of its own (SQLite under ``var/bench``, or ``DATABASE_URL``) holding the demo's blocked
  task, whose index the save built (``judge_index_prepare``). A harness token starts one
  ``ask_human`` run and asks, over one keep-alive connection: the first question of the
  run, then 300 questions nobody asked before (the judge really runs; the verdict cache is
  not hit) and 300 repeats (served from it); p50 / p95 / p99 of each, client-measured.
"""

import argparse
import json
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from judge.base import RegistryBlocker  # noqa: E402
from judge.embedded import WEIGHTS, EmbeddedJudge, load_registry  # noqa: E402
from judge.encoder import get_encoder  # noqa: E402

DEFAULT_EXAMPLES = ROOT.parent / "shared" / "examples" / "hilbench"
QUESTIONS = [
    "Which dates mark the beginning and end of the crisis period?",
    "What is the capital of France?",
    "How old must a client be to count as a senior account owner?",
    "Which column holds the unemployment rate of a district?",
    "Should the output be sorted by district name?",
    "What counts as an economically distressed district in this dataset?",
    "Is the crisis period one calendar year or a fiscal year?",
    "What does the status code A mean for a loan?",
    "How should ties be broken when two districts have the same value?",
    "Which birth date cutoff identifies senior account owners?",
]


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def registry(examples: Path) -> list[RegistryBlocker]:
    path = examples / "sql" / "sql_0" / "shared" / "ask-human-data" / "blocker_registry.json"
    if path.is_file():
        return load_registry(path)
    from exchange.demo.blocked_task import DEMO_BLOCKERS  # noqa: PLC0415 - bench only

    return [
        RegistryBlocker(b["key"], b["description"], tuple(b["trigger_questions"]), b["resolution"])
        for b in DEMO_BLOCKERS
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=Path, default=DEFAULT_EXAMPLES)
    parser.add_argument("--http", action="store_true", help="also over the app's own server")
    parser.add_argument("--requests", type=int, default=300)
    args = parser.parse_args()
    if args.http:
        import judge_http  # noqa: PLC0415 - configures Django, so only when asked

        judge_http.main(args.requests)
    before = rss_mb()
    start = time.perf_counter()
    get_encoder()
    judge = EmbeddedJudge()
    print(f"load: {time.perf_counter() - start:.2f} s; RSS {before:.0f} -> {rss_mb():.0f} MB")

    blockers = registry(args.examples)
    start = time.perf_counter()
    judge.judge(QUESTIONS[0], blockers)
    print(f"first call on a {len(blockers)}-blocker registry: "
          f"{(time.perf_counter() - start) * 1000:.1f} ms (builds its index)")  # fmt: skip
    times = []
    for number in range(300):
        question = f"{QUESTIONS[number % len(QUESTIONS)]}"
        if number >= len(QUESTIONS):
            question = question.rstrip("?") + f" (case {number})?"  # no two calls alike
        start = time.perf_counter()
        judge.judge(question, blockers)
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    print(
        f"judge(): p50 {statistics.median(times):.1f} ms, p90 {times[269]:.1f} ms, "
        f"p99 {times[296]:.1f} ms over {len(times)} calls"
    )
    batch = [(QUESTIONS[i % len(QUESTIONS)] + f" #{i}", blockers) for i in range(1200)]
    start = time.perf_counter()
    judge.judge_many(batch)
    print(f"judge_many: {len(batch) / (time.perf_counter() - start):.0f} questions/s")
    print(f"RSS after: {rss_mb():.0f} MB")

    weights = json.loads(WEIGHTS.read_text())
    cv = weights.get("cross_validation", {})
    for domain in ("all", "sql", "swe"):
        if domain in cv:
            figures = cv[domain]
            print(
                f"cross-validated {domain}: precision {figures['precision']['mean']:.3f} "
                f"(min {figures['precision']['min']:.3f}), recall {figures['recall']['mean']:.3f}"
                f" (min {figures['recall']['min']:.3f}) over {cv['halvings']} seeds of the"
                " halving (2 distinct partitions of the calibration tasks: docs/quality.md)"
            )
    held_out = weights.get("release_examples", {}).get("all")
    if held_out:
        print(
            f"release examples (not in the training data): precision "
            f"{held_out['precision']:.3f}, recall {held_out['recall']:.3f}"
        )
    print(f"weights {weights['version']}, thresholds {weights['thresholds']}")


if __name__ == "__main__":
    main()
