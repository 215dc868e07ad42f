"""Review's words in the task list's search: comments, decision summaries and the
reviewers' per-blocker notes (``hilbench_annotate.search_sources``)."""

from collections import defaultdict

from hilbench_annotate.search_sources import register_search_source
from review.models import Comment, ReviewDecision


def review_texts(task_ids: list[int]) -> dict[int, list[str]]:
    """Two queries for any number of tasks."""
    texts: dict[int, list[str]] = defaultdict(list)
    for task_id, body in Comment.objects.filter(task_id__in=task_ids).values_list(
        "task_id", "body"
    ):
        texts[task_id].append(body)
    for task_id, summary, reason, notes in ReviewDecision.objects.filter(
        task_id__in=task_ids
    ).values_list("task_id", "summary", "reject_reason", "blocker_comments"):
        texts[task_id] += [summary, reason]
        if isinstance(notes, dict):
            texts[task_id] += [v for v in notes.values() if isinstance(v, str)]
    return texts


def register() -> None:
    register_search_source("review", review_texts)
