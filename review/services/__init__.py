"""Every state change of the review workflow goes through a function here.

``pipeline``: a project's layers and policy; ``transitions``: the one function that moves a
task, and submission; ``assignments``: taking, assigning and releasing; ``decisions``: what a
reviewer decides; ``withdrawals``: taking back a decision made by mistake; ``threads``:
comments and notifications. Reads are in ``review.selectors``.
"""

from .assignments import review_assign, review_release, review_take_next
from .decisions import review_decide
from .pipeline import pipeline_ensure, pipeline_layer, pipeline_update
from .threads import comment_add, comment_set_resolved, notifications_mark_read, notify
from .transitions import task_enter_review, task_submit, task_transition
from .withdrawals import review_withdraw

__all__ = [
    "comment_add",
    "comment_set_resolved",
    "notifications_mark_read",
    "notify",
    "pipeline_ensure",
    "pipeline_layer",
    "pipeline_update",
    "review_assign",
    "review_decide",
    "review_release",
    "review_take_next",
    "review_withdraw",
    "task_enter_review",
    "task_submit",
    "task_transition",
]
