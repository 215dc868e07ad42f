"""Synthetic model results for the demo project, imported through the real import path so
the leaderboard, curves and selection gate have something to show on a fresh ``make run``.

The two "models" are labelled ``demo-synthetic-*``: they are generated from a seeded random
generator, not measured.
"""

import json
import random
import tempfile
from pathlib import Path

from evaluation.models import EvaluationRun, TaskPass
from evaluation.services import (
    evaluation_run_execute,
    failure_label_set,
    results_import_start,
    support_import,
)
from exchange.demo.blocked_task import DEMO_VALIDATION_QUESTIONS
from hilbench_annotate.models import Task

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
    targeted = [q for key, q, _style in DEMO_VALIDATION_QUESTIONS if key]
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
            root = Path(directory) / model
            _write_results_folder(root, model, lines, tasks={t.pk: t for t in tasks}, rng=rng)
            for run in results_import_start(project=project, actor=lead, path=root):
                evaluation_run_execute(run_id=run.pk)
            scores_path = Path(directory) / f"{model}-scores.jsonl"
            scores_path.write_text("".join(json.dumps(s) + "\n" for s in scores))
            support_import(project=project, actor=lead, path=scores_path, model_name=model)
    _demo_labels(project)


def _trajectory(task, record: dict, rng: random.Random) -> list[dict]:
    """A plausible, synthetic trajectory: look around, query, ask, submit."""
    steps = [{"role": "user", "content": f"{task.title}", "time": 0}]
    t = 0.0

    def add(**step):
        nonlocal t
        t = round(t + rng.uniform(2, 20), 1)
        steps.append({**step, "time": t})

    add(
        role="assistant",
        content="I will look at the tables first.",
        tool="get_database_info",
        tool_input={},
        tool_output="loan: loan_id, account_id, amount, status\n"
        "transaction_log: trans_id, account_id, trans_date, amount, k_symbol",
    )
    add(
        role="assistant",
        tool="execute_sql",
        tool_input={"query": "SELECT status, count(*) FROM loan GROUP BY status"},
        tool_output="status | count(*)\nA | 203\nB | 31\nC | 403\nD | 45",
    )
    for question in record.get("questions", []):
        add(
            role="assistant",
            content="The question leaves this open; I will ask.",
            tool="ask_human",
            tool_input={"question": question["text"]},
        )
    query = "SELECT client_id FROM loan WHERE status = 'D'"
    add(
        role="assistant",
        content="Submitting my answer.",
        tool="submit_sql",
        tool_input={"query": query},
        tool_output="correct" if record["resolved"] else "wrong",
    )
    return steps


def _write_results_folder(root: Path, model: str, lines: list[dict], *, tasks, rng) -> None:
    """The HiL-Bench results layout: pass_level_metrics.csv and one trajectory per pass."""
    rows = ["model,task,mode,pass,resolved,tokens"]
    for record in lines:
        rows.append(
            f"{model},{record['task']},{record['mode']},{record['pass']},"
            f"{int(record['resolved'])},{record['tokens']}"
        )
        folder = root / "trajectories" / record["mode"] / model / str(record["task"])
        folder.mkdir(parents=True, exist_ok=True)
        steps = _trajectory(tasks[record["task"]], record, rng)
        (folder / f"pass_{record['pass']}_trajectory.json").write_text(json.dumps(steps, indent=1))
    root.mkdir(parents=True, exist_ok=True)
    (root / "pass_level_metrics.csv").write_text("\n".join(rows) + "\n")


def _demo_labels(project) -> None:
    """Two people label a few failed passes, so the heat map and kappa have something."""
    from django.contrib.auth import get_user_model

    users = {
        u.username: u for u in get_user_model().objects.filter(username__in=["reviewer", "auditor"])
    }
    if len(users) < 2:
        return
    choices = [
        ("logic", "strategy"),
        ("tool_use", "accuracy"),
        ("alignment", "self_assessment"),
        ("logic", "completion"),
    ]
    failed = list(TaskPass.objects.filter(run__project=project, resolved=False).order_by("pk"))[
        ::4
    ][:24]
    for n, task_pass in enumerate(failed):
        first = choices[n % len(choices)]
        second = first if n % 5 else choices[(n + 1) % len(choices)]
        failure_label_set(
            task_pass=task_pass, actor=users["reviewer"], dimension=first[0], mode=first[1]
        )
        failure_label_set(
            task_pass=task_pass, actor=users["auditor"], dimension=second[0], mode=second[1]
        )
