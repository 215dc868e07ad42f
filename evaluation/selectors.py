"""Reads: passes grouped the way the metrics need them, the leaderboard, task selection.

Which passes count: for each model, task and mode, the passes of that model's most recent
finished run that holds the task in that mode (an earlier run of the same model is
superseded, not averaged in). Selection only counts passes on the task's current revision;
an edited task needs new evidence.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from hilbench_annotate.errors import DomainError
from hilbench_annotate.models import Project, Revision, Task
from hilbench_annotate.selectors import current_revisions
from judge.labels import cohen_kappa
from judge.models import AskHumanCall

from . import metrics, selection
from .models import (
    EvaluationRun,
    ExcludedTry,
    FailureLabel,
    Mode,
    SelectionPolicy,
    SupportStudy,
    TaskPass,
)
from .services.common import project_tasks
from .services.failures import taxonomy
from .tries import exclusions_text

KS = (1, 2, 3)


@dataclass
class PassRow:
    run_id: int
    model: str
    task_id: int
    domain: str
    mode: str
    index: int
    resolved: bool
    blocker_count: int
    revision_id: int
    ask_human_run_id: int | None
    tokens: int | None
    source: str
    served_model: str | None  # the model the run's endpoint serves; None without one
    calls: list[str | None] = field(default_factory=list)
    blocker_ids: list[str] = field(default_factory=list)

    @property
    def identity(self) -> str | None:
        """The model this pass's run is, as the pass-rate gate counts models."""
        return selection.run_identity(
            source=self.source, model_name=self.model, served_model=self.served_model
        )


def _latest_passes(queryset, *, reference: bool = False) -> list[PassRow]:
    """The passes of each model's latest succeeded run per task and mode: of the models'
    runs, or (``reference``) of the reference agents' (the benchmark report's), never both."""
    rows = list(
        queryset.filter(run__status=EvaluationRun.Status.SUCCEEDED, run__reference=reference)
        .order_by("-run__created_at", "-run_id", "index")
        .values_list(
            "run_id",
            "run__model_name",
            "task_id",
            "task__domain",
            "mode",
            "index",
            "resolved",
            "blocker_count",
            "revision_id",
            "ask_human_run_id",
            "tokens",
            "run__source",
            "run__endpoint__model",
        )
    )
    chosen_run: dict[tuple, int] = {}
    kept = []
    for row in rows:
        pass_row = PassRow(*row)
        key = (pass_row.model, pass_row.task_id, pass_row.mode)
        run = chosen_run.setdefault(key, pass_row.run_id)
        if run == pass_row.run_id:
            kept.append(pass_row)
    ask_runs = [r.ask_human_run_id for r in kept if r.ask_human_run_id]
    calls: dict[int, list[str | None]] = defaultdict(list)
    for run_id, key, capped, error in (
        AskHumanCall.objects.filter(run_id__in=ask_runs)
        .order_by("run_id", "id")
        .values_list("run_id", "blocker_key", "capped", "error")
    ):
        # Rejected, capped and failed calls all count, as calls that matched nothing.
        calls[run_id].append(None if capped or error else key)
    registries = registry_ids(revision_ids={r.revision_id for r in kept if r.ask_human_run_id})
    for row in kept:
        if row.ask_human_run_id:
            row.calls = calls[row.ask_human_run_id]
            row.blocker_ids = registries[row.revision_id]
    kept.sort(key=lambda r: (r.model, r.task_id, r.mode, r.index))
    return kept


def project_passes(*, project, domain: str | None = None) -> list[PassRow]:
    queryset = TaskPass.objects.filter(run__project=project)
    if domain:
        queryset = queryset.filter(task__domain=domain)
    return _latest_passes(queryset)


def _group(rows: list[PassRow], *keys: str) -> dict[tuple, list[PassRow]]:
    grouped: dict[tuple, list[PassRow]] = defaultdict(list)
    for row in rows:
        grouped[tuple(getattr(row, k) for k in keys)].append(row)
    return grouped


def mode_summary(*, rows: list[PassRow]) -> dict:
    """pass@k, and for ask_human passes Ask-F1 (micro), questions per pass, duplicates."""
    per_task = {
        task_id: [r.resolved for r in sorted(passes, key=lambda r: r.index)]
        for (task_id,), passes in _group(rows, "task_id").items()
    }
    rates = metrics.pass_at_k_rates(per_task, KS)
    summary = {
        "tasks": len(per_task),
        "passes": len(rows),
        # pass@1..3 over the same tasks: those with every pass; the others apart. The
        # release's figure, and the unbiased estimate under its own name.
        "pass_at_tasks": rates["tasks"],
        "tasks_short": rates["short"],
        **{f"pass_at_{k}": rate for k, rate in rates["rates"].items()},
        **{f"pass_at_{k}_unbiased": rate for k, rate in rates["unbiased"].items()},
    }
    asked = [r for r in rows if r.mode == Mode.ASK_HUMAN]
    if asked:
        score = metrics.ask_score_micro(
            metrics.ask_score(r.calls, blocker_count=r.blocker_count) for r in asked
        )
        summary.update(
            ask_precision=score.precision,
            ask_recall=score.recall,
            ask_f1=score.f1,
            questions_per_pass=sum(len(r.calls) for r in asked) / len(asked),
            duplicate_rate=metrics.duplicate_rate_micro(r.calls for r in asked),
            reward_mean=sum(_reward(r).total for r in asked) / len(asked),
        )
    tokens = [r.tokens for r in rows if r.tokens is not None]
    summary["tokens_per_pass"] = sum(tokens) / len(tokens) if tokens else None
    return summary


def _reward(row: PassRow) -> metrics.Reward:
    return metrics.shaped_reward(row.calls, blocker_ids=row.blocker_ids)


def registry_ids(*, revision_ids) -> dict[int, list[str]]:
    return {
        pk: [b["id"] for b in snapshot.get("blockers", [])]
        for pk, snapshot in Revision.objects.filter(pk__in=revision_ids).values_list(
            "pk", "snapshot"
        )
    }


def ask_human_run_reward(*, ask_run) -> dict:
    """The shaped RL reward and Ask-F1 of one ask_human run (``POST /api/reward``)."""
    calls = [
        None if capped or error else key
        for key, capped, error in ask_run.calls.order_by("id").values_list(
            "blocker_key", "capped", "error"
        )
    ]
    ids = registry_ids(revision_ids=[ask_run.revision_id])[ask_run.revision_id]
    reward = metrics.shaped_reward(calls, blocker_ids=ids)
    score = metrics.ask_score(calls, blocker_count=len(ids))
    return {
        "run": ask_run.pk,
        "reward": reward.total,
        "steps": list(reward.steps),
        "terminal": reward.terminal,
        "discovered": list(reward.discovered),
        "ask_precision": score.precision,
        "ask_recall": score.recall,
        "ask_f1": score.f1,
    }


def support_records(*, study: SupportStudy) -> list[metrics.SupportRecord]:
    return [
        metrics.SupportRecord(score=s, correct=c, correct_with_support=w)
        for s, c, w in study.records.order_by("id").values_list(
            "score", "correct", "correct_with_support"
        )
    ]


def latest_studies(*, project) -> dict[tuple[str, str], SupportStudy]:
    """(model, method) -> its most recent finished study."""
    latest: dict[tuple[str, str], SupportStudy] = {}
    for study in project.support_studies.filter(status=EvaluationRun.Status.SUCCEEDED).order_by(
        "-created_at", "-id"
    ):
        latest.setdefault((study.model_name, study.method), study)
    return latest


def excluded_tries(
    *, project, domain: str | None = None, rows: list[PassRow]
) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """(model, mode) -> (reason, exception) of each try the release leaves out
    (``tries.py``) of the runs the leaderboard reads: per task and mode, the run whose passes
    ``rows`` hold, or, where no run has a pass, the latest run that tried."""
    chosen = {(r.model, r.task_id, r.mode): r.run_id for r in rows}
    queryset = ExcludedTry.objects.filter(
        run__project=project, run__status=EvaluationRun.Status.SUCCEEDED, run__reference=False
    )
    if domain:
        queryset = queryset.filter(task__domain=domain)
    out: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
    for run_id, model, task_id, mode, reason, exception in queryset.order_by(
        "-run__created_at", "-run_id", "id"
    ).values_list("run_id", "run__model_name", "task_id", "mode", "reason", "exception"):
        if chosen.setdefault((model, task_id, mode), run_id) == run_id:
            out[(model, mode)].append((reason, exception))
    return out


def leaderboard(
    *, project, domain: str | None = None, rows: list[PassRow] | None = None
) -> list[dict]:
    """One row per model and mode, with the model's AUDBC per support-seeking method and the
    tries the release leaves out (how many, and why)."""
    rows = project_passes(project=project, domain=domain) if rows is None else rows
    audbc: dict[str, dict[str, float | None]] = defaultdict(dict)
    for (model, method), study in latest_studies(project=project).items():
        audbc[model][method] = metrics.audbc(support_records(study=study))
    grouped = _group(rows, "model", "mode")
    excluded = excluded_tries(project=project, domain=domain, rows=rows)
    board = []
    for model, mode in sorted({*grouped, *excluded}, key=lambda k: (k[0], Mode.values.index(k[1]))):
        passes = grouped.get((model, mode))
        summary = mode_summary(rows=passes) if passes else {"tasks": 0, "passes": 0}
        tries = excluded.get((model, mode), [])
        board.append(
            {
                "model": model,
                "mode": mode,
                **summary,
                "tries_excluded": len(tries),
                "excluded_why": exclusions_text(tries),
                "audbc": audbc.get(model, {}),
            }
        )
    for model, by_method in sorted(audbc.items()):
        if not any(row["model"] == model for row in board):
            board.append({"model": model, "mode": "", "tasks": 0, "passes": 0, "audbc": by_method})
    return board


def per_task_rows(
    *, project, domain: str | None = None, rows: list[PassRow] | None = None
) -> list[dict]:
    """Per task and model: the release's pass@3 per mode (solved in one of the first 3
    passes; pass@n for a mode with n < 3 passes, whether any solved it) and the Ask-F1."""
    rows = project_passes(project=project, domain=domain) if rows is None else rows
    out = []
    for (task_id, model), passes in sorted(_group(rows, "task_id", "model").items()):
        by_mode = _group(passes, "mode")
        entry = {"task_id": task_id, "model": model}
        for mode in Mode.values:
            results = [r.resolved for r in sorted(by_mode.get((mode,), []), key=lambda r: r.index)]
            entry[mode] = metrics.pass_at_k(results, min(3, len(results))) if results else None
            entry[f"{mode}_passes"] = len(results)
        asked = by_mode.get((Mode.ASK_HUMAN,), [])
        if asked:
            score = metrics.ask_score_micro(
                metrics.ask_score(r.calls, blocker_count=r.blocker_count) for r in asked
            )
            entry.update(ask_precision=score.precision, ask_recall=score.recall, ask_f1=score.f1)
        out.append(entry)
    return out


def per_task_recall(
    *, project, model: str | None = None, rows: list[PassRow] | None = None
) -> list[float]:
    """Ask recall of each (model, task) over its ask_human passes, for the histogram."""
    # A task without blockers has no recall to measure.
    rows = project_passes(project=project) if rows is None else rows
    rows = [r for r in rows if r.mode == Mode.ASK_HUMAN and r.blocker_count]
    if model:
        rows = [r for r in rows if r.model == model]
    return [
        metrics.ask_score_micro(
            metrics.ask_score(r.calls, blocker_count=r.blocker_count) for r in passes
        ).recall
        for passes in _group(rows, "model", "task_id").values()
    ]


# --- task selection ----------------------------------------------------------------------


def selection_policy(*, project) -> SelectionPolicy:
    policy = (
        SelectionPolicy.objects.filter(project=project)
        .select_related("min_models_lowered_by")
        .first()
    )
    return policy or SelectionPolicy(project=project)  # the defaults, unsaved


def task_selection(*, task) -> dict:
    """keep / drop / undecided for one task, with the per-model evidence."""
    return task_selections(tasks=[task])[task.pk]


def task_selections(*, tasks: list) -> dict[int, dict]:
    """keep / drop / undecided for each task (of one or more projects), with the per-model
    evidence and the models that decided, in a fixed number of queries (``selection``)."""
    policies = {
        project_id: selection_policy(project=project)
        for project_id, project in {t.project_id: t.project for t in tasks}.items()
    }
    current = {
        pk: rev for pk, (rev, _n) in current_revisions(task_ids=(t.pk for t in tasks)).items()
    }
    passes = _group(
        [
            r
            for r in _latest_passes(TaskPass.objects.filter(task__in=[t.pk for t in tasks]))
            if r.revision_id == current.get(r.task_id) and r.mode in (Mode.BASELINE, Mode.FULL_INFO)
        ],
        "task_id",
    )
    return {
        task.pk: selection.decide(
            policies[task.project_id], current.get(task.pk), passes.get((task.pk,), [])
        )
        for task in tasks
    }


# --- failure labels ----------------------------------------------------------------------


def label_rows(*, project) -> list[dict]:
    return list(
        FailureLabel.objects.filter(task_pass__run__project=project)
        .order_by("id")
        .values(
            "task_pass_id",
            "labeller_id",
            "labeller__username",
            "llm_run_id",
            "llm_run__model_name",
            "dimension",
            "mode",
            "created_at",
        )
    )


def effective_labels(*, rows: list[dict]) -> dict[int, tuple[str, str, str]]:
    """pass id -> (dimension, mode, source): the people's majority label (the latest breaks
    a tie); without one, the latest LLM run's."""
    human: dict[int, list[dict]] = defaultdict(list)
    llm: dict[int, dict] = {}
    for row in rows:
        if row["labeller_id"]:
            human[row["task_pass_id"]].append(row)
        else:
            llm[row["task_pass_id"]] = row  # ordered by id: the latest run's wins
    chosen = {}
    for pass_id, labels in human.items():
        counts: dict[tuple, int] = defaultdict(int)
        latest: dict[tuple, int] = {}
        for n, row in enumerate(labels):
            key = (row["dimension"], row["mode"])
            counts[key] += 1
            latest[key] = n
        best = max(counts, key=lambda k: (counts[k], latest[k]))
        chosen[pass_id] = (*best, "human")
    for pass_id, row in llm.items():
        chosen.setdefault(pass_id, (row["dimension"], row["mode"], "llm"))
    return chosen


def failure_heatmap(*, project, domain: str | None = None) -> dict:
    """Per model: failed passes by dimension × mode (effective labels), with the axes."""

    entries = taxonomy(project)
    dims = [e for e in entries if e.axis == "dimension"]
    modes = [e for e in entries if e.axis == "mode"]
    # As the leaderboard: passes of finished, succeeded runs only.
    failed = TaskPass.objects.filter(
        run__project=project, run__status=EvaluationRun.Status.SUCCEEDED, resolved=False
    )
    if domain:
        failed = failed.filter(task__domain=domain)
    passes = list(failed.values_list("pk", "run__model_name"))
    labels = effective_labels(rows=label_rows(project=project))
    models: dict[str, dict] = {}
    for pass_id, model in passes:
        entry = models.setdefault(
            model,
            {"cells": defaultdict(int), "failed": 0, "labelled": 0, "human": 0},
        )
        entry["failed"] += 1
        label = labels.get(pass_id)
        if label:
            entry["labelled"] += 1
            entry["human"] += label[2] == "human"
            entry["cells"][(label[0], label[1])] += 1
    grids = []
    for model, entry in sorted(models.items()):
        peak = max(entry["cells"].values(), default=0)
        grids.append(
            {
                "model": model,
                "failed": entry["failed"],
                "labelled": entry["labelled"],
                "human": entry["human"],
                "rows": [
                    {
                        "dimension": d,
                        "cells": [
                            {
                                "mode": m,
                                "count": entry["cells"][(d.key, m.key)],
                                "share": entry["cells"][(d.key, m.key)] / entry["labelled"]
                                if entry["labelled"]
                                else 0,
                                "heat": entry["cells"][(d.key, m.key)] / peak if peak else 0,
                            }
                            for m in modes
                        ],
                    }
                    for d in dims
                ],
            }
        )
    return {"dimensions": dims, "modes": modes, "models": grids}


def failure_agreement(*, project) -> list[dict]:
    """Cohen's kappa between labellers: person–person, LLM run–person and LLM run–LLM run,
    on the combined label (dimension × mode) and per axis, over the passes both labelled."""

    by_rater: dict[tuple[str, object], dict[int, tuple[str, str]]] = defaultdict(dict)
    names: dict[tuple[str, object], str] = {}
    for row in label_rows(project=project):
        if row["labeller_id"]:
            rater = ("human", row["labeller_id"])
            names[rater] = row["labeller__username"]
        else:
            rater = ("llm", row["llm_run_id"])
            names[rater] = f"LLM run {row['llm_run_id']} ({row['llm_run__model_name']})"
        by_rater[rater][row["task_pass_id"]] = (row["dimension"], row["mode"])
    raters = sorted(by_rater, key=lambda r: (r[0], str(r[1])))
    out = []
    for i, a in enumerate(raters):
        for b in raters[i + 1 :]:
            shared = sorted(set(by_rater[a]) & set(by_rater[b]))
            if not shared:
                continue
            pairs = [(by_rater[a][p], by_rater[b][p]) for p in shared]
            kind = {"human": "person", "llm": "LLM"}
            out.append(
                {
                    "kind": f"{kind[a[0]]} – {kind[b[0]]}",
                    "first": names[a],
                    "second": names[b],
                    "passes": len(shared),
                    "kappa": cohen_kappa([(f"{x[0]}/{x[1]}", f"{y[0]}/{y[1]}") for x, y in pairs]),
                    "kappa_dimension": cohen_kappa([(x[0], y[0]) for x, y in pairs]),
                    "kappa_mode": cohen_kappa([(x[1], y[1]) for x, y in pairs]),
                }
            )
    order = {"person – person": 0, "LLM – person": 1, "person – LLM": 1, "LLM – LLM": 2}
    return sorted(out, key=lambda r: (order.get(r["kind"], 3), r["first"], r["second"]))


def ask_human_verdicts(*, task_pass) -> list[dict]:
    """The judge's verdict for each ask_human step of the pass, in order."""
    if not task_pass.ask_human_run_id:
        return []
    registry = {
        b["id"]: b.get("description", "")
        for b in Revision.objects.get(pk=task_pass.revision_id).snapshot.get("blockers", [])
    }
    return [
        {
            "blocker": call.blocker_key,
            "description": registry.get(call.blocker_key or "", ""),
            "duplicate": call.duplicate,
            "capped": call.capped,
            "error": call.error,
            "response": call.response,
        }
        for call in task_pass.ask_human_run.calls.order_by("id")
    ]


# --- the benchmark report: reference agents -------------------------------------------------


def reference_report(*, project) -> list[dict]:
    """Per task, each reference agent's latest figures (``evaluation.agents``) and what they
    flag: an oracle that does not score 1, a no-op that does not score 0, a task that answers
    the spammer, a registered trigger question the judge does not recognise."""
    rows = _latest_passes(TaskPass.objects.filter(run__project=project), reference=True)
    titles = dict(Task.objects.filter(pk__in={r.task_id for r in rows}).values_list("pk", "title"))
    report: dict[int, dict] = {}
    for (task_id, model), passes in sorted(_group(rows, "task_id", "model").items()):
        agent = model.removeprefix("reference: ")
        entry = report.setdefault(
            task_id,
            {"task_id": task_id, "title": titles.get(task_id, ""), "agents": {}, "flags": []},
        )
        rewards = {
            mode: sum(r.resolved for r in group) / len(group)
            for (mode,), group in _group(passes, "mode").items()
        }
        asked = [r for r in passes if r.mode == Mode.ASK_HUMAN]
        score = (
            metrics.ask_score_micro(
                metrics.ask_score(r.calls, blocker_count=r.blocker_count) for r in asked
            )
            if asked
            else None
        )
        resolutions = sum(1 for r in asked for call in r.calls if call)
        questions = sum(len(r.calls) for r in asked)
        entry["agents"][agent] = {
            "rewards": rewards,
            "passes": len(passes),
            # An agent that never asks (the oracle, the no-op) has no Ask-F1: not applicable,
            # not 0 — "Ask-F1 0.00, 0 resolved of 0 asked" read as a failure.
            "ask_f1": score.f1 if score and questions else None,
            "asks_nothing": bool(asked) and not questions,
            "resolutions": resolutions,
            "questions": questions,
        }
        if agent == "oracle" and any(value < 1 for value in rewards.values()):
            entry["flags"].append("the oracle does not score 1")
        if agent == "no-op" and any(value > 0 for value in rewards.values()):
            entry["flags"].append("the no-op scores above 0")
        if agent == "spammer" and resolutions:
            entry["flags"].append(f"it answers the spammer ({resolutions} resolution(s))")
        if agent == "asks-every-trigger" and score is not None and score.f1 < 1:
            entry["flags"].append(f"asking every trigger gives Ask-F1 {score.f1:.2f}, not 1")
    return [report[k] for k in sorted(report)]


def harbor_task_ids(
    *, project: Project, task_ids: list[int] = (), tag: str = "", waiting: bool = False
) -> list[int]:
    """The tasks a run covers: the ids given, else the tag's tasks, else (``waiting``) the
    tasks the pass-rate gate has not kept yet."""
    if task_ids:
        return [t.pk for t in project_tasks(project, list(task_ids), domain=None)]
    tasks = Task.objects.filter(project=project).select_related("project").order_by("pk")
    if tag:
        tasks = tasks.filter(tags__name=tag.strip())
        if not tasks.exists():
            raise DomainError(f"No task of the project has the tag {tag.strip()!r}.")
    tasks = list(tasks)
    if waiting:
        selections = task_selections(tasks=tasks)
        tasks = [t for t in tasks if selections[t.pk]["decision"] != "keep"]
    return [t.pk for t in tasks]
