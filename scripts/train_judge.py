"""Fit the embedded judge's weights on HiL-Bench release registries and measure them.

    .venv/bin/python scripts/train_judge.py [--data DIR] [--out judge/weights/embedded.json]
    make judge-weights
    .venv/bin/python scripts/train_judge.py --leave-group-out [--cv-out FILE]   (make judge-cv)

1. Cross-validation by task halves (``judge.training.cross_validate``), for ``--seeds``
   seeds: fit on one half (thresholds from out-of-fold logits within it), judge the other
   half with the shipped decision code, and the reverse; precision and recall overall, per
   domain, and how recall spreads over tasks. Whole databases and repositories go to a
   half, so the seeds give few distinct halvings (printed; 2 for the calibration data, the
   SWE halves the same in all): they vary mostly the negatives drawn and the inner folds.
2. The shipped model: fitted on every task, thresholds from out-of-fold logits.
3. An independent check on the release examples (``--examples``), none of which is in
   the calibration data.

The output file holds the weights, the thresholds, a version derived from them, and the
figures above; the same data gives the same file.

``--leave-group-out`` runs only ``judge.training.cross_validate_groups`` (each database or
repository judged by a judge fitted on all the others), prints it and writes it to
``--cv-out`` if given; it never fits or writes the shipped weights.
"""

import argparse
import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from judge.embedded import EmbeddedJudge  # noqa: E402
from judge.encoder import MODEL_ID, get_encoder  # noqa: E402
from judge.thresholds import DOMAIN_PRECISION_FLOOR  # noqa: E402
from judge.training import (  # noqa: E402
    FOLDS,
    GENERIC_TEST,
    TARGET_PRECISION,
    TEST_GENERIC,
    TEST_OTHERS,
    Featurizer,
    counts,
    cross_validate,
    cross_validate_groups,
    distinct_partitions,
    judge_outcomes,
    load_tasks,
    measuring_examples,
    recall_distribution,
    train,
)

SHARED = ROOT.parent / "shared" / "examples"


def _line(name: str, figures: dict) -> str:
    parts = [
        f"{d} P {figures[d]['precision']:.3f} R {figures[d]['recall']:.3f}"
        for d in ("all", "sql", "swe")
    ]
    return f"{name:<12} " + " | ".join(parts)


def _refusals(name: str, figures: dict) -> str:
    """The vague and joined-message figures of a cross-validation (``judge.probes``)."""
    vague = ", ".join(
        f"{set_name} {v['answering']}/{v['tasks']}"
        for set_name, v in figures["vague_tasks_answering"].items()
    )
    joined = figures["joined_answered"]
    return (
        f"{'':<12} vague questions: tasks answering any — {vague}; "
        f"joined messages answered {joined['answered']}/{joined['messages']} "
        f"({joined['share']:.1%})"
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=SHARED / "hilbench-calibration")
    parser.add_argument("--examples", type=Path, default=SHARED / "hilbench")
    parser.add_argument("--out", type=Path, default=ROOT / "judge" / "weights" / "embedded.json")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--leave-group-out", action="store_true")
    parser.add_argument("--cv-out", type=Path)
    args = parser.parse_args()

    tasks = load_tasks(args.data)
    if not tasks:
        print(f"no registries under {args.data}", file=sys.stderr)
        return 1
    featurizer = Featurizer(get_encoder().encode)
    print(f"{len(tasks)} tasks ({sum(t.domain == 'sql' for t in tasks)} SQL) from {args.data}")
    if args.leave_group_out:
        return _leave_group_out(tasks, featurizer, args.cv_out)
    partitions = distinct_partitions(tasks, range(args.seeds))
    print(f"{args.seeds} seeds, {len(partitions)} distinct halvings (seeds {partitions})")

    folds = []
    for seed in range(args.seeds):
        result = cross_validate(tasks, featurizer, seed=seed)
        folds.append(result)
        print(_line(f"halving {seed}", result), f"tasks<0.85 {result['recall_distribution']}")
        print(_refusals(f"halving {seed}", result))
    summary = {
        domain: {
            metric: {
                "mean": round(sum(f[domain][metric] for f in folds) / len(folds), 4),
                "min": min(f[domain][metric] for f in folds),
            }
            for metric in ("precision", "recall")
        }
        for domain in ("all", "sql", "swe")
    }

    model = train(tasks, featurizer, seed=0)
    weights = model.as_json()
    version = hashlib.sha256(json.dumps(weights, sort_keys=True).encode()).hexdigest()[:10]
    document = {
        "version": version,
        "encoder": MODEL_ID,
        **weights,
        "method": {
            "model": "L2 logistic regression per (question, blocker), Newton's method",
            "thresholds": f"per domain, chosen together: the most questions right with pooled "
            f"precision {TARGET_PRECISION} (per domain {DOMAIN_PRECISION_FLOOR}) on "
            f"out-of-fold logits of {FOLDS} folds",
            "inputs": "blocker descriptions, types and trigger questions, and the task's text; "
            "never a resolution",
            "positives": "every example question held out in turn (leave one out)",
            "negatives": f"per task, one question of each of {TEST_OTHERS} other tasks of its "
            f"domain and {TEST_GENERIC} generic questions (training: of every other task, and "
            "20 generic questions)",
        },
        "data": {
            "tasks": len(tasks),
            "sql": sum(t.domain == "sql" for t in tasks),
            "swe": sum(t.domain == "swe" for t in tasks),
            "questions": sum(len(b.trigger_questions) for t in tasks for b in t.registry),
        },
        "cross_validation": {
            "halvings": args.seeds,
            **summary,
            "vague_tasks_answering": {
                name: max(f["vague_tasks_answering"][name]["share"] for f in folds)
                for name in folds[0]["vague_tasks_answering"]
            },
            "joined_answered": max(f["joined_answered"]["share"] for f in folds),
        },
    }
    release = load_tasks(args.examples) if args.examples.is_dir() else []
    if release:
        judge = EmbeddedJudge(document, embed=featurizer.embed_cached)
        items = measuring_examples(release, GENERIC_TEST, 99)
        figures = counts(judge_outcomes(judge, items))
        figures["recall_distribution"] = recall_distribution(figures.pop("task_recall"))
        document["release_examples"] = {d: figures[d] for d in ("all", "sql", "swe")}
        print(_line("examples", figures))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")
    print(_line("cv mean", {d: {m: v["mean"] for m, v in s.items()} for d, s in summary.items()}))
    print(_line("cv min", {d: {m: v["min"] for m, v in s.items()} for d, s in summary.items()}))
    print(f"weights {version}, thresholds {weights['thresholds']} -> {args.out}")
    return 0


def _leave_group_out(tasks, featurizer, out: Path | None) -> int:
    result = cross_validate_groups(tasks, featurizer)
    for group, figures in result["groups"].items():
        print(
            f"{group:<24} {figures['domain']} {figures['tasks']:>2} tasks "
            f"P {figures['precision']:.3f} R {figures['recall']:.3f} "
            f"({figures['correct']}/{figures['positives']})"
        )
    print(_line("pooled", result))
    print("lowest group", result["min_group"], "tasks<0.85", result["recall_distribution"])
    print(_refusals("pooled", result))
    if out:
        out.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
