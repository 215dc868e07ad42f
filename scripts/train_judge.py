"""Fit the embedded judge's weights on HiL-Bench release registries, and measure it honestly.

    .venv/bin/python scripts/train_judge.py [--data DIR] [--out judge/weights/embedded.json]
    make judge-weights
    .venv/bin/python scripts/train_judge.py --leave-group-out [--cv-out FILE]   (make judge-cv)

``make judge-weights``: the setting (the thresholds' pooled precision target and each
domain's floor) chosen by leaving each database or repository out in turn
(``judge.nested.choose_setting``), then the model fitted on every task with its thresholds
chosen for that setting on out-of-fold logits (``judge.training.train``); an independent
check on the release examples (``--examples``), none of which is in the calibration data.
The output file holds the weights, the thresholds, the setting, a version derived from them;
the same data gives the same file.

``make judge-cv`` (``--leave-group-out``): nested leave-one-group-out cross-validation
(``judge.nested.cross_validate_nested``) — each database or repository judged by a judge whose
every number was chosen on the other groups only — with the in-fold figures beside the
out-of-fold ones, the spam, vague and joined-message figures on the left-out groups, and the
same measure on the release examples with the shipped weights. It never writes weights.
"""

import argparse
import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from judge import spam  # noqa: E402
from judge.embedded import EmbeddedJudge  # noqa: E402
from judge.encoder import MODEL_ID, get_encoder  # noqa: E402
from judge.nested import MUST, choose_setting, cross_validate_nested  # noqa: E402
from judge.training import (  # noqa: E402
    FOLDS,
    GENERIC_TEST,
    TEST_GENERIC,
    TEST_OTHERS,
    Featurizer,
    counts,
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
    """The vague, joined-message and spam figures of a cross-validation."""
    vague = ", ".join(
        f"{set_name} {v['answering']}/{v['tasks']}"
        for set_name, v in figures["vague_tasks_answering"].items()
    )
    joined = figures["joined_answered"]
    text = (
        f"{'':<12} vague questions: tasks answering any — {vague}; "
        f"joined messages answered {joined['answered']}/{joined['messages']} "
        f"({joined['share']:.1%})"
    )
    if "spam_tasks_answering" in figures:
        forms = ", ".join(
            f"{form} {v['answering']}/{v['tasks']}"
            for form, v in figures["spam_tasks_answering"].items()
        )
        text += f"\n{'':<12} task-text spam: tasks answering any — {forms}"
    return text


def _release_check(path: Path, judge, featurizer) -> dict | None:
    release = load_tasks(path) if path.is_dir() else []
    if not release:
        return None
    figures = counts(judge_outcomes(judge, measuring_examples(release, GENERIC_TEST, 99)))
    figures["recall_distribution"] = recall_distribution(figures.pop("task_recall"))
    figures["spam_tasks_answering"] = spam.harvest(judge, release)
    return figures


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=SHARED / "hilbench-calibration")
    parser.add_argument("--examples", type=Path, default=SHARED / "hilbench")
    parser.add_argument("--out", type=Path, default=ROOT / "judge" / "weights" / "embedded.json")
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
        return _leave_group_out(tasks, featurizer, args)
    setting, table = choose_setting(tasks, featurizer)
    print(f"setting chosen leaving each group out: {setting.as_json()}")
    model = train(tasks, featurizer, target=setting.target, floors=setting.floors)
    weights = model.as_json()
    version = hashlib.sha256(json.dumps(weights, sort_keys=True).encode()).hexdigest()[:10]
    document = {
        "version": version,
        "encoder": MODEL_ID,
        **weights,
        "setting": setting.as_json(),
        "method": {
            "model": "L2 logistic regression per (question, blocker), Newton's method",
            "thresholds": f"per domain, chosen together: the most questions right with pooled "
            f"precision {setting.target} (per domain {setting.floors}) on out-of-fold logits "
            f"of {FOLDS} folds; the setting chosen by leaving each database or repository out "
            f"(the most right with pooled and per-domain precision {MUST} on the group left "
            "out)",
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
        "setting_choice": table,
    }
    judge = EmbeddedJudge(document, embed=featurizer.embed_cached)
    release = _release_check(args.examples, judge, featurizer)
    if release is not None:
        document["release_examples"] = {d: release[d] for d in ("all", "sql", "swe")}
        print(_line("examples", release))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")
    print(f"weights {version}, thresholds {weights['thresholds']} -> {args.out}")
    return 0


def _leave_group_out(tasks, featurizer, args) -> int:
    result = cross_validate_nested(tasks, featurizer)
    print(_line("out of fold", result))
    print(_line("in fold", result["in_fold"]))
    gap = {
        d: {m: round(result["in_fold"][d][m] - result[d][m], 4) for m in ("precision", "recall")}
        for d in ("all", "sql", "swe")
    }
    print(f"{'gap':<12} " + " | ".join(
        f"{d} P {gap[d]['precision']:+.3f} R {gap[d]['recall']:+.3f}" for d in gap
    ))  # fmt: skip
    print("tasks<0.85", result["recall_distribution"])
    print(_refusals("out of fold", result))
    release = _release_check(args.examples, EmbeddedJudge(embed=featurizer.embed_cached), None)
    if release is not None:
        result["release_examples"] = release
        print(_line("examples", release), "(the shipped weights)")
        print(f"{'':<12} task-text spam: {release['spam_tasks_answering']}")
    if args.cv_out:
        args.cv_out.write_text(json.dumps(result, indent=1, sort_keys=True, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
