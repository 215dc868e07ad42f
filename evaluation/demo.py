"""Synthetic model results for the demo project, imported through the real import path so
the leaderboard, curves and selection gate have something to show on a fresh ``make run``.

The two "models" are labelled ``demo-synthetic-*``: they are generated from a seeded random
generator, not measured.
"""

import json
import random
import tempfile
from pathlib import Path

from hilbench_annotate.demo.blocked_task import DEMO_VALIDATION_QUESTIONS
from hilbench_annotate.models import Task

from .models import EvaluationRun
from .services import evaluation_run_execute, results_import_start, support_import

MODELS = {
    # model: (baseline, full_info, ask_human) solve rates, and whether it asks well
    "demo-synthetic-a": ((0.15, 0.85, 0.45), 0.7),
    "demo-synthetic-b": ((0.25, 0.75, 0.30), 0.4),
}
OFF_TASK = ["Can you tell me more about the task?", "What is the best approach here?"]


def demo_results(project, lead) -> None:
    if EvaluationRun.objects.filter(project=project).exists():
        return
    tasks = list(Task.objects.filter(project=project).order_by("pk"))
    targeted = [q for key, q in DEMO_VALIDATION_QUESTIONS if key]
    with tempfile.TemporaryDirectory() as directory:
        for n, (model, ((base, full, ask), asks_well)) in enumerate(MODELS.items()):
            rng = random.Random(n)
            lines, scores = [], []
            for task in tasks:
                rates = {"baseline": base, "full_info": full, "ask_human": ask}
                for mode, rate in rates.items():
                    for index in (1, 2, 3):
                        record = {
                            "task": task.pk,
                            "mode": mode,
                            "pass": index,
                            "resolved": rng.random() < rate,
                            "tokens": rng.randint(4000, 30000),
                        }
                        if mode == "ask_human":
                            pool = targeted if task.blockers.exists() else []
                            wanted = rng.randint(1, 3) if rng.random() < asks_well else 0
                            asked = [rng.choice(pool) for _ in range(wanted) if pool]
                            if rng.random() > asks_well:
                                asked.append(rng.choice(OFF_TASK))
                            record["questions"] = [
                                {"text": q, "time": 30 * (i + 1)} for i, q in enumerate(asked)
                            ]
                        lines.append(record)
                if task.domain == "sql":
                    correct = rng.random() < base
                    helped = correct or rng.random() < full
                    score = min(1.0, max(0.0, rng.gauss(0.7 if not correct else 0.4, 0.2)))
                    scores.append(
                        {
                            "task": task.pk,
                            "score": round(score * asks_well + rng.random() * (1 - asks_well), 4),
                            "correct": correct,
                            "correct_with_support": helped,
                        }
                    )
            path = Path(directory) / f"{model}.jsonl"
            path.write_text("".join(json.dumps(line) + "\n" for line in lines))
            for run in results_import_start(
                project=project, actor=lead, path=path, model_name=model
            ):
                evaluation_run_execute(run_id=run.pk)
            scores_path = Path(directory) / f"{model}-scores.jsonl"
            scores_path.write_text("".join(json.dumps(s) + "\n" for s in scores))
            support_import(project=project, actor=lead, path=scores_path, model_name=model)
