"""Rewrite the task list's search words of every task (``TaskSearchText``), with every
registered source (review's comments and decisions), 500 tasks a transaction.

    python manage.py search_text_rebuild

Saves keep them true as they happen; this is for tasks written before the search read
blockers and comments (the migration that made the table read no comments) and for rows
written around the services (a bulk load by SQL).
"""

from django.core.management.base import BaseCommand
from django.db import transaction

from hilbench_annotate.models import Task
from hilbench_annotate.services import task_search_refresh
from hilbench_annotate.services.search import SEARCH_REFRESH_CHUNK
from hilbench_annotate.toolkit.iteration import batched


class Command(BaseCommand):
    help = "Rewrite the search words of every task (blocked text, blockers, comments)."

    def handle(self, *args, **options):
        ids = Task.objects.order_by("pk").values_list("pk", flat=True).iterator()
        done = 0
        for chunk in batched(ids, SEARCH_REFRESH_CHUNK):
            with transaction.atomic():
                done += task_search_refresh(task_ids=chunk)
        self.stdout.write(f"Search words rewritten for {done} tasks.")
