"""The embedded judge's precision, recall, latency and throughput on the release's examples.

    .venv/bin/python bench/judge.py [--examples ../shared/examples/hilbench]

Labelled set, from the registries under ``--examples`` (``<kind>/<task>/shared/ask-human-data/
blocker_registry.json``):

* positives: each blocker's example question number *f* held out, asked against the task's
  registry in which that blocker's references are its other example questions + description
  (leave-one-out: a held-out question is never among its own references);
* off-task negatives: those held-out questions asked against every *other* task's registry;
* written negatives (below): off-task chatter, broad/best-practice questions, and adjacent
  questions about the same task that no blocker covers.

Split: fold 0 (each blocker's first example question held out, and its off-task copies) plus
the even-numbered written negatives calibrate ``default_threshold`` and ``margin``; folds 1..k
(every other example question, each held out in turn) plus the odd-numbered written negatives
give the reported numbers. Calibration and test never share a question, so the reported
precision/recall are not fitted to the items they are measured on.

Precision = correct matches / all matches predicted; recall = correct matches / all positives
(the paper's definitions). Latency: single questions against sql_0's 5-blocker registry
(reference embeddings cached), p50/p99 over >= 200 calls; throughput: ``judge_many``.
"""

import argparse
import json
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from judge.base import RegistryBlocker  # noqa: E402
from judge.embedded import EmbeddedJudge, get_model, load_registry  # noqa: E402
from judge.rules import reject_reason  # noqa: E402

DEFAULT_EXAMPLES = ROOT.parent / "shared" / "examples" / "hilbench"

# Off-task and broad questions, each asked against one task (round robin).
GENERIC_NEGATIVES = [
    "What is the capital of France?",
    "How do I install PostgreSQL on macOS?",
    "What time zone are you in?",
    "Which Python version does this container run?",
    "How long do I have to finish this task?",
    "What is the best practice for writing SQL joins?",
    "Any tips for debugging this kind of problem?",
    "How should I approach this task?",
    "What should I do?",
    "Is there anything else I should know?",
    "Can you help me with this?",
    "What is the answer to the question?",
    "How would you solve this?",
    "Is there any other information I need?",
]

# Questions about the task that no blocker of its registry covers.
ADJACENT_NEGATIVES = {
    "sql_0": [
        "Should district names be returned in alphabetical order?",
        "Which table stores the district names?",
        "Should duplicate district names be removed from the result?",
        "How are the account and client tables joined?",
        "Should the output include the district id as well as the name?",
        "What is the date format used in the trans table?",
    ],
    "sql_10": [
        "Which table contains the card rulings text?",
        "Should the card names be distinct in the output?",
        "How is the pre-modern format legality stored in the legalities table?",
        "Do I need to join the rulings table on uuid?",
        "Should the ruling text match exactly or with a LIKE pattern?",
    ],
    "sql_3": [
        "Should I count distinct card names or distinct card ids?",
        "Which table links cards to their sets?",
        "Does the result need to be a single number?",
        "Should cards without a set code be ignored?",
        "What is the primary key of the cards table?",
    ],
    "swe_0": [
        "Which test file covers the sys_info module?",
        "Should I add a changelog fragment for this fix?",
        "What Python versions must the change support?",
        "Where is the distro package vendored in the repository?",
        "Should the docstrings of these functions be updated?",
        "How do I run the unit tests for module_utils?",
    ],
    "swe_5": [
        "Should the module documentation include an EXAMPLES section?",
        "Where should the unit tests for the new module be placed?",
        "Which Ansible version should be listed in version_added?",
        "Does the module need to support check mode?",
        "Should the comment parameter have a maximum length?",
        "How should IPv6 fixed addresses be named in the module?",
    ],
}

Item = tuple[str, list[RegistryBlocker], str | None, str]  # question, registry, expected, kind


def load_tasks(examples: Path) -> dict[str, list[RegistryBlocker]]:
    tasks = {}
    for path in sorted(examples.glob("*/*/shared/ask-human-data/blocker_registry.json")):
        tasks[path.parents[2].name] = load_registry(path)
    if not tasks:
        raise SystemExit(f"no registries under {examples}")
    return tasks


def _held_out(registry: list[RegistryBlocker], index: int, fold: int) -> list[RegistryBlocker]:
    blocker = registry[index]
    rest = tuple(q for i, q in enumerate(blocker.trigger_questions) if i != fold)
    return [*registry[:index], replace(blocker, trigger_questions=rest), *registry[index + 1 :]]


def build_sets(tasks: dict[str, list[RegistryBlocker]]) -> tuple[list[Item], list[Item]]:
    calibration: list[Item] = []
    test: list[Item] = []
    for task, registry in tasks.items():
        for index, blocker in enumerate(registry):
            for fold, question in enumerate(blocker.trigger_questions):
                split = calibration if fold == 0 else test
                split.append((question, _held_out(registry, index, fold), blocker.id, "positive"))
                for other, other_registry in tasks.items():
                    if other != task:
                        split.append((question, other_registry, None, "off-task (other task)"))
    names = list(tasks)
    written: list[tuple[str, str, str]] = []
    for number, question in enumerate(GENERIC_NEGATIVES):
        written.append((question, names[number % len(names)], "off-task/broad"))
    for task, questions in ADJACENT_NEGATIVES.items():
        if task in tasks:
            written.extend((q, task, "adjacent") for q in questions)
    for number, (question, task, kind) in enumerate(written):
        split = calibration if number % 2 == 0 else test
        split.append((question, tasks[task], None, kind))
    return calibration, test


def evaluate(judge: EmbeddedJudge, items: list[Item]) -> dict:
    verdicts = judge.judge_many([(q, r) for q, r, _, _ in items])
    predicted = correct = positives = 0
    false_by_kind: dict[str, int] = {}
    missed = []
    for (question, _r, expected, kind), verdict in zip(items, verdicts, strict=True):
        positives += expected is not None
        if verdict.blocker_id is not None:
            predicted += 1
            if verdict.blocker_id == expected:
                correct += 1
            else:
                false_by_kind[kind] = false_by_kind.get(kind, 0) + 1
        elif expected is not None:
            missed.append((question, verdict.reason))
    return {
        "precision": correct / predicted if predicted else 1.0,
        "recall": correct / positives if positives else 0.0,
        "predicted": predicted,
        "correct": correct,
        "positives": positives,
        "negatives": len(items) - positives,
        "false_matches": false_by_kind,
        "missed": missed,
    }


def demo_set() -> list[Item]:
    """The labelled questions that ship with the demo data (``seed_demo``)."""
    from exchange.demo.blocked_task import (
        DEMO_BLOCKERS,
        DEMO_VALIDATION_QUESTIONS,
    )

    registry = [
        RegistryBlocker(
            id=b["key"],
            description=b["description"],
            trigger_questions=tuple(b["trigger_questions"]),
            resolution=b["resolution"],
        )
        for b in DEMO_BLOCKERS
    ]
    return [
        (question, registry, gold, "demo" if gold is None else "positive")
        for gold, question in DEMO_VALIDATION_QUESTIONS
    ]


def latency(judge: EmbeddedJudge, registry: list[RegistryBlocker], questions: list[str]) -> dict:
    pool = [q for q in questions if reject_reason(q) is None]
    calls = [pool[i % len(pool)] for i in range(max(240, len(pool)))]
    for question in pool[:10]:  # warm up: model, reference cache
        judge.judge(question, registry)
    times = []
    for question in calls:
        start = time.perf_counter()
        judge.judge(question, registry)
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    batch = [(q, registry) for q in calls * 4]
    start = time.perf_counter()
    judge.judge_many(batch)
    elapsed = time.perf_counter() - start
    return {
        "n": len(times),
        "p50_ms": statistics.median(times),
        "p99_ms": times[min(len(times) - 1, int(round(0.99 * len(times))) - 1)],
        "batch_n": len(batch),
        "throughput_qps": len(batch) / elapsed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=Path, default=DEFAULT_EXAMPLES)
    parser.add_argument("--min-precision", type=float, default=0.97)
    parser.add_argument("--lexical", type=float, nargs="*", default=[0.0, 0.15, 0.3])
    parser.add_argument("--quantized", action="store_true", help="also try int8 dynamic quant")
    parser.add_argument("--json", type=Path, help="write the results here too")
    args = parser.parse_args()

    tasks = load_tasks(args.examples)
    calibration, test = build_sets(tasks)
    print(
        f"tasks: {len(tasks)}  blockers: {sum(len(r) for r in tasks.values())}  "
        f"calibration items: {len(calibration)}  test items: {len(test)}"
    )
    start = time.perf_counter()
    get_model()
    print(f"model load: {time.perf_counter() - start:.2f} s")

    results = []
    for quantized in [False, True] if args.quantized else [False]:
        for weight in args.lexical:
            judge = EmbeddedJudge(default_threshold=0.6, margin=0.0, lexical_weight=weight)
            judge.quantized = quantized
            chosen = judge.calibrate(
                [(q, r, e) for q, r, e, _ in calibration], min_precision=args.min_precision
            )
            measured = evaluate(judge, test)
            label = f"lexical={weight:.2f} quantized={quantized}"
            print(
                f"\n[{label}] calibrated on fold 0: threshold={chosen['default_threshold']:.2f}"
                f" margin={chosen['margin']:.3f} (cal P={chosen['precision']:.3f}"
                f" R={chosen['recall']:.3f}, {chosen['positives']}+/{chosen['negatives']}-)"
            )
            print(
                f"  test folds 1..k: precision={measured['precision']:.3f}"
                f" ({measured['correct']}/{measured['predicted']})"
                f"  recall={measured['recall']:.3f} ({measured['correct']}/"
                f"{measured['positives']})  negatives={measured['negatives']}"
                f"  false matches by kind={measured['false_matches']}"
            )
            for question, reason in measured["missed"]:
                print(f"    missed: {question!r}: {reason}")
            results.append({"label": label, "calibration": chosen, "test": measured})

    best = max(results, key=lambda r: (r["test"]["recall"], r["test"]["precision"]))
    judge = EmbeddedJudge(
        default_threshold=best["calibration"]["default_threshold"],
        margin=best["calibration"]["margin"],
        lexical_weight=float(best["label"].split()[0].split("=")[1]),
    )
    judge.quantized = "quantized=True" in best["label"]
    questions = [q for q, _, _, _ in calibration + test]
    timing = latency(judge, tasks["sql_0"], questions) if "sql_0" in tasks else {}
    if timing:
        print(
            f"\nlatency [{best['label']}], sql_0 (5 blockers), {timing['n']} single questions: "
            f"p50={timing['p50_ms']:.2f} ms p99={timing['p99_ms']:.2f} ms; batched "
            f"judge_many over {timing['batch_n']}: {timing['throughput_qps']:.0f} questions/s"
        )
    demo = demo_set()
    report = evaluate(judge, demo)
    print(
        f"\ndemo data (the blocked retail_bank task, {report['positives']} positives, "
        f"{report['negatives']} negatives, labels as seeded): precision "
        f"{report['precision']:.3f}, recall {report['recall']:.3f}"
    )
    if args.json:
        for result in results:
            result["test"].pop("missed")
        args.json.write_text(json.dumps({"results": results, "latency": timing}, indent=2))


if __name__ == "__main__":
    main()
