"""Which held-out questions count toward a task's judge recall, and how.

The recall floor must not move without fresh evidence. A settled held-out question counts
when someone other than the task's author wrote it (the author's own questions measure
nothing: whoever wrote the registry can always write questions it answers) — and it counts
honestly only for the registry it was written against. A question is *compromised* when:

* it was retired: its wording became a trigger question (an accepted suggestion);
* the judge matches it now only through registry text added after it was written: asked
  against the registry of the revision current when the question was written, it was not
  matched, and it is matched now — its wording, or a paraphrase of it at any closeness the
  judge itself matches, was copied into a trigger question or a description.

A compromised question counts as a miss until a fresh question replaces it: a settled,
uncompromised question by someone other than the author, targeting the same blocker, written
after the compromise (the retirement, or the first revision through which the judge matched
it). Each fresh question replaces one compromised question.
"""

from __future__ import annotations

from dataclasses import dataclass

from hilbench_annotate.models import Revision, Task

from .models import ValidationQuestion
from .services import judge_cached, registry_from_snapshot, registry_hash, task_context


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

    def __init__(self, task: Task, judge, upto_version: int | None = None):
        """``upto_version``: only the revisions up to the one of that task version (a
        validation run's revision): nothing written after it counts."""
        self.task, self.judge = task, judge
        self.revisions = [
            revision
            for revision in Revision.objects.filter(task=task)
            .order_by("number")
            .only("number", "created_at", "snapshot")
            if upto_version is None or revision.snapshot.get("version", 0) <= upto_version
        ]

    def predicted(self, revision: Revision, question: str) -> str | None:
        return judge_cached(
            judge=self.judge,
            registry=registry_from_snapshot(revision.snapshot),
            question=question,
            domain=self.task.domain,
            context=task_context(revision.snapshot),
        ).blocker_id

    def matched_since(self, question: ValidationQuestion, gold: str):
        """None when the judge matched ``question`` already against the revision current
        when it was written; otherwise when it first did (the created_at of the first later
        revision whose registry made the judge match it)."""
        earlier = [r for r in self.revisions if r.created_at <= question.created_at]
        later = [r for r in self.revisions if r.created_at > question.created_at]
        if earlier and self.predicted(earlier[-1], question.text) == gold:
            return None
        seen = {_registry_key(earlier[-1])} if earlier else set()
        for revision in later:
            key = _registry_key(revision)
            if key in seen:
                continue
            seen.add(key)
            if self.predicted(revision, question.text) == gold:
                return revision.created_at
        return later[-1].created_at if later else question.created_at


def _registry_key(revision: Revision) -> str:
    return registry_hash(registry_from_snapshot(revision.snapshot), task_context(revision.snapshot))


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
