from django.db import models

from .tasks import Task


class TaskSearchText(models.Model):
    """What the task list's search reads of a task, one row a task: the words of its title,
    source id, database or repository, specification (original and blocked), its blockers'
    ids, descriptions, resolutions and trigger questions, and what apps register
    (``search_sources``: review's comments and decisions), lowercased, each word once.

    Written by ``services.search.task_search_refresh`` whenever a revision is saved (and by
    the apps whose text it holds, on their writes); a search is then one filter of this
    column instead of a subquery per blocker, trigger question and comment. Kept in a table
    of its own so the task rows every list reads stay small.
    """

    task = models.OneToOneField(
        Task, on_delete=models.CASCADE, primary_key=True, related_name="search_text"
    )
    text = models.TextField(blank=True)

    def __str__(self) -> str:
        return f"search text of task {self.task_id}"
