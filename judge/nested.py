"""Choosing the judge's settings on training data only, and measuring it honestly: nested
leave-one-group-out cross-validation.

The judge has a few numbers besides its weights: the pooled precision its thresholds aim at
and each domain's floor (``thresholds.choose_thresholds``). Choosing them on the figures they
are then reported with flatters the figures. Here every choice is made inside the training
data:

* ``choose_setting(tasks)``: each database or repository of ``tasks`` is left out in turn; a
  model is fitted on the others, and for each setting of ``GRID`` its thresholds are chosen
  on out-of-fold logits of those others and applied to the group left out. The setting kept
  answers the most of the left-out groups' questions right while their pooled precision and
  each domain's hold ``MUST`` (if none does, the most precise).
* ``cross_validate_nested(tasks)``: each database or repository is left out in turn (the
  outer loop), the setting chosen by ``choose_setting`` on the other groups only, the judge
  fitted on them with it and judged on the group left out — with the shipped decision code
  (rules, multi-topic check, threshold). Beside the pooled out-of-fold figures, the in-fold
  ones (each outer judge on its own training tasks): the gap says how much the training data
  flatters.

The shipped model (``make judge-weights``) is ``train`` on every task with the setting
``choose_setting`` picks on every task. Nothing in this module looks at a figure it reports.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import spam
from .embedded import EmbeddedJudge
from .measures import Outcome, counts, recall_distribution
from .thresholds import Scored, choose_thresholds
from .training import (
    GENERIC_TEST,
    TRAIN_NEGATIVES,
    CalibrationTask,
    Featurizer,
    _Refusals,
    examples,
    fit,
    group_folds,
    judge_outcomes,
    measuring_examples,
    out_of_fold,
    score,
    train,
)

# What a setting must hold on the groups its model was not fitted on: the targets themselves
# (the acceptance's), fixed before anything was measured.
MUST = {"all": 0.97, "sql": 0.95, "swe": 0.95}


@dataclass(frozen=True)
class Setting:
    target: float
    sql_floor: float
    swe_floor: float

    @property
    def floors(self) -> dict[str, float]:
        return {"sql": self.sql_floor, "swe": self.swe_floor}

    def as_json(self) -> dict:
        return {"target": self.target, "floors": self.floors}


GRID = tuple(
    Setting(target, sql, swe)
    for target in (0.97, 0.975, 0.98)
    for sql in (0.95, 0.96)
    for swe in (0.95, 0.96, 0.97)
)


def _applied(scored: list[Scored], thresholds: dict[str, float]) -> list[Outcome]:
    return [
        Outcome(
            s.domain,
            s.task,
            s.label,
            s.best if s.best is not None and s.logit >= thresholds.get(s.domain, 0.0) else None,
        )
        for s in scored
    ]


def _holds(figures: dict) -> bool:
    return all(figures[d]["precision"] >= MUST[d] for d in MUST if figures[d]["predicted"])


def choose_setting(
    tasks: list[CalibrationTask], featurizer: Featurizer, *, seed: int = 0
) -> tuple[Setting, dict]:
    """The setting of ``GRID`` chosen by leaving each group of ``tasks`` out in turn (module
    docstring), and the inner figures of every setting."""
    outcomes: dict[Setting, list[Outcome]] = {setting: [] for setting in GRID}
    for _domain, _group, fit_on, left_out in group_folds(tasks):
        items = examples(fit_on, TRAIN_NEGATIVES, seed)
        model = fit(items, featurizer.matrix(items))
        oof = out_of_fold(fit_on, featurizer, seed)
        held = measuring_examples(left_out, TRAIN_NEGATIVES, seed + 3, negatives_from=tasks)
        scored = score(model, held, featurizer.matrix(held), featurizer.refused(held))
        for setting in GRID:
            thresholds = choose_thresholds(oof, setting.target, setting.floors)
            outcomes[setting].extend(_applied(scored, thresholds))
    figures = {setting: counts(found) for setting, found in outcomes.items()}
    holding = [s for s in GRID if _holds(figures[s])]
    if holding:
        chosen = max(holding, key=lambda s: (figures[s]["all"]["correct"], s.target))
    else:
        chosen = max(GRID, key=lambda s: (figures[s]["all"]["precision"], s.target))
    table = {
        f"{s.target}/{s.sql_floor}/{s.swe_floor}": {
            d: {k: figures[s][d][k] for k in ("precision", "recall")} for d in ("all", "sql", "swe")
        }
        for s in GRID
    }
    return chosen, table


def cross_validate_nested(
    tasks: list[CalibrationTask], featurizer: Featurizer, *, seed: int = 0, report=print
) -> dict:
    """Nested leave-one-group-out (module docstring): pooled out-of-fold figures, in-fold
    figures, per group, the spam and vague harvests and joined messages on the left-out
    groups."""
    outcomes: list[Outcome] = []
    in_fold: list[Outcome] = []
    groups: dict[str, dict] = {}
    refusals = _Refusals(seed)
    harvest: dict[str, list[int]] = {form: [0, 0] for form in spam.FORMS}
    for domain, group, fit_on, test_on in group_folds(tasks):
        setting, _ = choose_setting(fit_on, featurizer, seed=seed)
        model = train(fit_on, featurizer, seed=seed, target=setting.target,
                      floors=setting.floors, small=False)  # fmt: skip
        judge = EmbeddedJudge(model.as_json(), embed=featurizer.embed_cached)
        test = measuring_examples(test_on, GENERIC_TEST, seed + 7, negatives_from=tasks)
        mine = judge_outcomes(judge, test)
        outcomes.extend(mine)
        seen = measuring_examples(fit_on, GENERIC_TEST, seed + 7)
        in_fold.extend(_applied(_scored(model, seen, featurizer), model.thresholds))
        refusals.add(judge, test_on)
        for form, figures in spam.harvest(judge, test_on, seed=seed).items():
            harvest[form][0] += figures["tasks_answering"]
            harvest[form][1] += figures["tasks"]
        figures = counts(mine)[domain]
        groups[group] = {
            "domain": domain,
            "tasks": len(test_on),
            **figures,
            "setting": setting.as_json(),
            "thresholds": model.thresholds,
        }
        report(
            f"{group:<24} {domain} {len(test_on):>2} tasks P {figures['precision']:.3f} "
            f"R {figures['recall']:.3f} ({figures['correct']}/{figures['positives']}) "
            f"setting {setting.target}/{setting.sql_floor}/{setting.swe_floor}"
        )
    result = counts(outcomes)
    result["recall_distribution"] = recall_distribution(result.pop("task_recall"))
    fitted = counts(in_fold)
    fitted.pop("task_recall")
    result["in_fold"] = fitted
    result["groups"] = groups
    result["spam_tasks_answering"] = {
        form: {"answering": a, "tasks": n, "share": round(a / n, 4) if n else 0.0}
        for form, (a, n) in harvest.items()
    }
    return {**result, **refusals.figures()}


def _scored(model, items, featurizer: Featurizer) -> list[Scored]:
    return score(model, items, featurizer.matrix(items), featurizer.refused(items))
