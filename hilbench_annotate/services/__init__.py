"""Every write to the core domain goes through a function here (``<entity>_<action>``)."""

from .blockers import (
    blocker_create,
    blocker_delete,
    blocker_update,
    trigger_question_create,
    trigger_question_delete,
    trigger_question_update,
)
from .bulk import bulk_connection_release, task_create_many, task_statistics_refresh
from .bulk_actions import BulkReport, task_bulk_apply
from .edits import TaskChanges, task_edit, task_touch_environment, task_update
from .revisions import revisions_close
from .search import task_search_refresh
from .tasks import (
    event_record,
    revision_create,
    task_create,
    task_event,
    task_events,
    task_snapshot,
    task_snapshots,
    task_tag_add_many,
    task_tag_remove_many,
    task_tags_set,
)

__all__ = [
    "BulkReport",
    "TaskChanges",
    "blocker_create",
    "blocker_delete",
    "blocker_update",
    "event_record",
    "revision_create",
    "revisions_close",
    "task_create",
    "task_create_many",
    "task_statistics_refresh",
    "bulk_connection_release",
    "task_edit",
    "task_event",
    "task_snapshot",
    "task_bulk_apply",
    "task_events",
    "task_search_refresh",
    "task_snapshots",
    "task_tag_add_many",
    "task_tag_remove_many",
    "task_tags_set",
    "task_touch_environment",
    "task_update",
    "trigger_question_create",
    "trigger_question_delete",
    "trigger_question_update",
]
