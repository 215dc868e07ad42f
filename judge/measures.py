"""How a judge did on the questions it judged: precision and recall overall, per domain and
per task, and how recall spreads over tasks. Read by the held-out validation
(``validation``), ``manage.py judge_batch`` and ``training``'s reports; counting needs
nothing of the fitting, so it lives apart from ``training``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Outcome:
    """One question judged: what it targets (None: nothing) and what the judge said."""

    domain: str
    task: str
    label: str | None
    predicted: str | None


def counts(outcomes: list[Outcome]) -> dict:
    """Precision and recall (the paper's: correct matches over all matches, and over all
    questions that target a blocker) overall and per domain, and recall per task."""
    out: dict = {}
    for domain in ("all", "sql", "swe"):
        chosen = [o for o in outcomes if domain in ("all", o.domain)]
        positives = sum(o.label is not None for o in chosen)
        predicted = sum(o.predicted is not None for o in chosen)
        correct = sum(o.predicted is not None and o.predicted == o.label for o in chosen)
        out[domain] = {
            "precision": round(correct / predicted, 4) if predicted else 1.0,
            "recall": round(correct / positives, 4) if positives else 0.0,
            "positives": positives,
            "negatives": len(chosen) - positives,
            "predicted": predicted,
            "correct": correct,
        }
    per_task: dict[str, list[int]] = {}
    for o in outcomes:
        if o.label is not None:
            tally = per_task.setdefault(o.task, [0, 0])
            tally[0] += o.predicted == o.label
            tally[1] += 1
    out["task_recall"] = {t: round(c / n, 4) for t, (c, n) in sorted(per_task.items())}
    return out


def recall_distribution(task_recall: dict[str, float]) -> dict:
    """How recall spreads over tasks: quartiles and the share of tasks under 0.85."""
    import numpy as np

    values = sorted(task_recall.values())
    if not values:
        return {}
    quantile = lambda q: round(float(np.quantile(values, q)), 4)  # noqa: E731
    return {
        "tasks": len(values),
        "min": values[0],
        "p25": quantile(0.25),
        "median": quantile(0.5),
        "p75": quantile(0.75),
        "below_0.85": round(sum(v < 0.85 for v in values) / len(values), 4),
    }
