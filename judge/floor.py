"""Which held-out questions count toward a task's judge recall, and how.

The recall floor must not move without fresh evidence, nor by the hand of one person or
two. A settled held-out question counts only when (issue 43; each rule, where it leaves a
question out, says so on the judge-validation page and in the judge report: "not counted:
…"):

* **its writer never edited the task** — is not its author, made no revision of it (every
  edit of its text, environment or registry is one, ``edits.task_edit``: a trigger question,
  a description, an accepted suggestion) and waived no lint finding of it. Whoever wrote the
  registry can always write questions it answers;
* **two people other than its writer labelled it** (agreeing, or a third — not its writer
  either — adjudicated): a writer's own label does not count (``labels.gold_of``), so two
  colleagues alone settle nothing;
* **no single writer's questions make more than half of a blocker's counted questions**: a
  writer's questions beyond as many as all other writers' together are not counted, the
  newest first;
* **no single style makes more than half of the task's counted questions** (positives), by
  the same rule: honest, easy questions in one style cannot outweigh the others.

A task's counted questions must moreover come from **at least two writers** and hold **every
style** (terse, as an agent would ask; naming the task's words; paraphrase), or the floor is
not met (``floor_shortfall``). A question written before styles were asked has none
recorded: it still counts, as its own group under the style cap, but supplies no style.

It counts honestly, too, only for the registry it was written against. A question is
*compromised* when:

* it was retired: its wording became a trigger question (an accepted suggestion);
* the judge matches it now only through registry text added after it was written: asked
  against the registry of the revision current when the question was written, it was not
  matched, and it is matched now — its wording, or a paraphrase of it at any closeness the
  judge itself matches, was copied into a trigger question or a description.

A compromised question counts as a miss until a fresh question replaces it: a settled,
uncompromised, counted question targeting the same blocker, written after the compromise
(the retirement, or the first revision through which the judge matched it). Each fresh
question replaces one compromised question.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from django.conf import settings

from hilbench_annotate.models import Revision, Task, TaskEvent

from .labels import SETTLED, gold_label
from .models import ValidationQuestion
from .services import Verdicts, registry_from_snapshot, registry_hash, task_context

STYLES = tuple(ValidationQuestion.Style)
# Events whose actor changed what the registry's lint lets stand: they edited the task.
LINT_EVENTS = ("lint_waived", "lint_waiver_withdrawn")


@dataclass
class Judged:
    """One settled held-out (or retired) question, judged."""

    question: ValidationQuestion
    gold: str | None
    predicted: str | None
    compromised: str = ""  # why it is compromised, or ""
    since: object = None  # when it was compromised (a datetime)

    def item(self) -> dict:
        return {
            "question": self.question.pk,
            "text": self.question.text,
            "gold": self.gold,
            "predicted": self.predicted,
            **({"compromised": self.compromised} if self.compromised else {}),
        }


class RegistryHistory:
    """A task's revisions in order, for judging a question against the registry as it stood
    when the question was written (and when it first matched)."""

    def __init__(
        self,
        task: Task,
        judge,
        upto_version: int | None = None,
        *,
        revisions: list[Revision] | None = None,
        verdicts: Verdicts | None = None,
    ):
        """``upto_version``: only the revisions up to the one of that task version (a
        validation run's revision): nothing written after it counts. ``revisions``: the
        task's, in number order, when the caller read them (else read here); ``verdicts``:
        where the judge's verdicts come from (``services.Verdicts``; else one at a time)."""
        self.task, self.judge = task, judge
        self.verdicts = verdicts or Verdicts(judge)
        if revisions is None:
            revisions = (
                Revision.objects.filter(task=task)
                .order_by("number")
                .only("number", "created_at", "snapshot")
            )
        self.revisions = [
            revision
            for revision in revisions
            if upto_version is None or revision.snapshot.get("version", 0) <= upto_version
        ]
        self._inputs: dict[int, tuple] = {}

    def inputs(self, revision: Revision) -> tuple[list, str, str]:
        """(registry, task text, ``registry_hash`` of both) of ``revision``, parsed once."""
        known = self._inputs.get(revision.number)
        if known is None:
            registry = registry_from_snapshot(revision.snapshot)
            context = task_context(revision.snapshot)
            known = self._inputs[revision.number] = (
                registry,
                context,
                registry_hash(registry, context),
            )
        return known

    def predicted(self, revision: Revision, question: str) -> str | None:
        registry, context, digest = self.inputs(revision)
        return self.verdicts.get(
            registry=registry,
            question=question,
            domain=self.task.domain,
            context=context,
            digest=digest,
        ).blocker_id

    def matched_since(self, question: ValidationQuestion, gold: str):
        """None when the judge matched ``question`` already against the revision current
        when it was written; otherwise when it first did (the created_at of the first later
        revision whose registry made the judge match it)."""
        earlier = [r for r in self.revisions if r.created_at <= question.created_at]
        later = [r for r in self.revisions if r.created_at > question.created_at]
        if earlier and self.predicted(earlier[-1], question.text) == gold:
            return None
        seen = {self.inputs(earlier[-1])[2]} if earlier else set()
        for revision in later:
            key = self.inputs(revision)[2]
            if key in seen:
                continue
            seen.add(key)
            if self.predicted(revision, question.text) == gold:
                return revision.created_at
        return later[-1].created_at if later else question.created_at


def compromise(judged: list[Judged], history: RegistryHistory) -> None:
    """Mark the compromised questions of ``judged`` (a retired one, or one matched only
    through later registry text), with when."""
    for item in judged:
        question = item.question
        if question.split == ValidationQuestion.Split.RETIRED:
            item.compromised = "retired: its wording became a trigger question"
            item.since = question.retired_at or question.created_at
            continue
        if item.gold is None or item.predicted != item.gold:
            continue
        since = history.matched_since(question, item.gold)
        if since is not None:
            item.compromised = (
                "matched only through registry text added after it was written (a trigger "
                "question or description that copies or paraphrases it)"
            )
            item.since = since


def replace(judged: list[Judged]) -> tuple[list[Judged], list[Judged]]:
    """(the questions the recall counts, the compromised ones still counted as misses): each
    compromised question is dropped once a fresh question replaces it (module docstring)."""
    fresh = sorted((j for j in judged if not j.compromised), key=lambda j: j.question.created_at)
    used: set[int] = set()
    open_misses = []
    for item in sorted((j for j in judged if j.compromised), key=lambda j: j.since):
        replacement = next(
            (
                f
                for f in fresh
                if f.gold == item.gold
                and f.question.pk not in used
                and f.question.created_at > item.since
            ),
            None,
        )
        if replacement is None:
            open_misses.append(item)
        else:
            used.add(replacement.question.pk)
    return fresh + open_misses, open_misses


# --- who writes counted questions, and which settled ones count (module docstring) ---------


def task_editors_many(tasks: list[Task]) -> dict[int, dict[int, str]]:
    """Per task, each person who edited it and how, in words: its author, whoever made one of
    its revisions, whoever waived (or withdrew a waiver of) one of its lint findings. Two
    queries for any number of tasks."""
    editors: dict[int, dict[int, str]] = {task.pk: {} for task in tasks}
    for task in tasks:
        if task.author_id is not None:
            editors[task.pk][task.author_id] = "authored the task"
    for task_id, user_id, number in (
        Revision.objects.filter(task_id__in=list(editors), author__isnull=False)
        .order_by("task_id", "number")
        .values_list("task_id", "author_id", "number")
    ):
        editors[task_id].setdefault(user_id, f"made revision {number} of the task")
    for task_id, user_id in TaskEvent.objects.filter(
        task_id__in=list(editors), kind__in=LINT_EVENTS, actor__isnull=False
    ).values_list("task_id", "actor_id"):
        editors[task_id].setdefault(user_id, "waived a lint finding of the task")
    return editors


def task_editors(task: Task) -> dict[int, str]:
    return task_editors_many([task])[task.pk]


def writer_refusal(question: ValidationQuestion, editors: dict[int, str]) -> tuple[str, str]:
    """(rule, why) ``question`` cannot count whoever labels it — its writer — or ("", "")."""
    if question.created_by_id is None:
        return "writer_unknown", "its writer is not recorded, so the writer rules cannot hold"
    how = editors.get(question.created_by_id)
    if how:
        return "editor", (
            f"its writer {how}: whoever edited the task's text or registry writes no "
            "counted question"
        )
    return "", ""


def style_name(style: str, *, short: bool = False) -> str:
    """The style in words (``short``: as a table cell shows it)."""
    if not style:
        return "style not recorded"
    return SHORT_NAMES[style] if short else ValidationQuestion.Style(style).label


SHORT_NAMES = {"terse": "terse", "task_words": "the task's words", "paraphrase": "paraphrase"}


@dataclass
class Standing:
    """One validation question's gold label and whether it counts (``why``: "" when it
    does, else why not — the words after "not counted: ")."""

    question: ValidationQuestion
    state: str
    gold: str | None
    why: str = ""
    rule: str = ""  # editor, writer_label, writer_cap, style_cap

    @property
    def counted(self) -> bool:
        return self.state in SETTLED and not self.why

    def item(self) -> dict:
        """As the report and the check's details keep it; an unsettled question without its
        text (the task's author may read those, and must not read it before it is labelled)."""
        return {
            "question": self.question.pk,
            "text": self.question.text if self.state in SETTLED else "",
            "rule": self.rule,
            "why": self.why,
        }


def standings(questions, editors: dict[int, str]) -> list[Standing]:
    """Each of ``questions`` (one task's, labels prefetched) with its gold label and whether
    it counts: the writer rule, the labels rule, then the two caps on the settled held-out
    ones (retired questions are not capped: they count as misses, ``compromise``)."""
    out = []
    for question in questions:
        state, gold = gold_label(question)
        standing = Standing(question, state, gold)
        rule, why = writer_refusal(question, editors)
        if why:
            standing.rule, standing.why = rule, why
        elif state not in SETTLED and any(
            label.labeller_id == question.created_by_id for label in question.labels.all()
        ):
            standing.why, standing.rule = (
                "its writer labelled it, and a writer's own label does not count: it needs "
                "two labels by people other than its writer",
                "writer_label",
            )
        out.append(standing)
    _caps(
        [
            s
            for s in out
            if s.counted
            and s.gold is not None
            and s.question.split == ValidationQuestion.Split.HELD_OUT
        ]
    )
    return out


def _cap_one(items: list[Standing], key, say) -> bool:
    """Leave out the newest of the one group (by ``key``) holding more than half of
    ``items``, beyond as many as the others hold together; ``say(n, others, kept)``: why.
    True if any was left out."""
    counts = Counter(key(item) for item in items)
    if not counts:
        return False
    group, n = max(counts.items(), key=lambda pair: pair[1])
    others = len(items) - n
    if n <= others:
        return False
    mine = [item for item in items if key(item) == group]
    for item in mine[others:]:
        item.why = say(item, n, others)
    return True


def _caps(candidates: list[Standing]) -> None:
    """The writer cap per blocker and the style cap over the task, until neither leaves out
    another question (each only leaves out, so this ends). Oldest first: the newest are
    left out."""

    def writer_cap(item, n, others):
        item.rule = "writer_cap"
        return (
            f"one writer may write at most half of a blocker's counted questions; its writer "
            f"has {n} settled on {item.gold} against {others} by all others together, so only "
            f"the oldest {others} count"
        )

    def style_cap(item, n, others):
        item.rule = "style_cap"
        style = item.question.style
        these = f"are “{style_name(style)}”" if style else "have no style recorded"
        return (
            f"one style may make at most half of the task's counted questions; {n} {these} "
            f"against {others} in other styles, so only the oldest {others} of them count"
        )

    order = sorted(candidates, key=lambda s: (s.question.created_at, s.question.pk))
    while True:
        kept = [s for s in order if not s.why]
        by_blocker: dict[str, list[Standing]] = {}
        for item in kept:
            by_blocker.setdefault(item.gold, []).append(item)
        capped = any(
            _cap_one(items, lambda s: s.question.created_by_id, writer_cap)
            for items in by_blocker.values()
        )
        if not capped:
            kept = [s for s in kept if not s.why]
            capped = _cap_one(kept, lambda s: s.question.style, style_cap)
        if not capped:
            return


def floor_shortfall(
    keys: list[str], per_blocker: dict[str, int], counted: int, writers: set, styles: set
) -> list[str]:
    """What a task's counted held-out questions lack for its recall to meet the floor:
    enough per blocker (``per_blocker``: counted positives targeting each of ``keys``) and in
    all (``counted``), two writers or more, and every style among the counted positives."""
    needed = settings.JUDGE_MIN_HELD_OUT_PER_BLOCKER
    out = [
        f"{key}: {per_blocker.get(key, 0)} of the {needed} counted held-out questions it needs"
        for key in keys
        if per_blocker.get(key, 0) < needed
    ]
    if counted < settings.JUDGE_MIN_HELD_OUT_PER_TASK:
        out.append(
            f"the task: {counted} of the {settings.JUDGE_MIN_HELD_OUT_PER_TASK} counted "
            "held-out questions it needs"
        )
    writers = {w for w in writers if w is not None}
    if len(writers) < 2:
        out.append(
            f"the task: its counted questions come from {len(writers)} writer"
            f"{'' if len(writers) == 1 else 's'}; the floor needs at least two writers who "
            "never edited the task"
        )
    missing = [style for style in STYLES if style not in styles]
    if missing:
        out.append(
            "the task: no counted question in the style "
            + " or ".join(f"“{style.label}”" for style in missing)
            + "; the floor needs every style among its counted questions"
        )
    return out


def not_counted_note(excluded: list[dict]) -> str:
    """The questions left out, by rule, in one sentence (or "")."""
    if not excluded:
        return ""
    words = {
        "editor": "written by someone who edited the task",
        "writer_unknown": "whose writer is not recorded",
        "writer_label": "labelled by their own writer (not settled without two others)",
        "writer_cap": "beyond half of a blocker's questions by one writer",
        "style_cap": "beyond half of the task's questions in one style",
    }
    rules = Counter(item["rule"] for item in excluded)
    parts = [f"{n} {words[rule]}" for rule, n in rules.items() if rule in words]
    n = len(excluded)
    return (
        f"{n} held-out question{'s' if n != 1 else ''} "
        f"do{'es' if n == 1 else ''} not count: " + "; ".join(parts) + "."
    )
