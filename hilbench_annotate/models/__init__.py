from .blockers import Blocker, TriggerQuestion
from .environments import Repository, SqlDatabase, SqlEnvironment, SweEnvironment
from .projects import ApiToken, Membership, Project
from .search import TaskSearchText
from .tasks import Revision, Tag, Task, TaskEvent

__all__ = [
    "ApiToken",
    "Blocker",
    "Membership",
    "Project",
    "Repository",
    "Revision",
    "SqlDatabase",
    "SqlEnvironment",
    "SweEnvironment",
    "Tag",
    "Task",
    "TaskEvent",
    "TaskSearchText",
    "TriggerQuestion",
]
