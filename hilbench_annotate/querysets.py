from django.apps import apps
from django.db import models
from django.db.models import Q

from hilbench_annotate.search_sources import search_terms
from hilbench_annotate.vocabulary import READER_ROLES


class ProjectQuerySet(models.QuerySet):
    def visible_to(self, user):
        if not user.is_authenticated:
            return self.none()
        if user.is_superuser:
            return self
        return self.filter(memberships__user=user, memberships__role__in=READER_ROLES).distinct()

    def with_role(self, user, *roles):
        if user.is_superuser:
            return self
        return self.filter(memberships__user=user, memberships__role__in=roles).distinct()


class TaskQuerySet(models.QuerySet):
    def visible_to(self, user):
        if not user.is_authenticated:
            return self.none()
        if user.is_superuser:
            return self
        # The membership model by name: models.py imports this module.
        membership = apps.get_model("hilbench_annotate", "Membership")
        readable = membership.objects.filter(user=user, role__in=READER_ROLES).values("project_id")
        return self.filter(project_id__in=readable)

    def for_list(self):
        """What a task list row shows, in a fixed number of queries."""
        related = self.select_related("project", "author", "sql_environment", "swe_environment")
        return related.prefetch_related("tags").defer(
            "original_spec",
            "blocked_spec",
            "source_metadata",
            "sql_environment__descriptions",
            "sql_environment__business_info",
            "sql_environment__edit_script",
            "sql_environment__original_sql",
            "sql_environment__gold_sql",
            "sql_environment__golden_output",
            "swe_environment__setup_patch",
            "swe_environment__gold_patch",
            "swe_environment__test_patch",
            "swe_environment__fail_to_pass",
            "swe_environment__pass_to_pass",
            "swe_environment__test_command",
        )

    def search(self, text: str):
        text = text.strip()
        if not text:
            return self
        # Every word of the search in the task's search words (``TaskSearchText``: its blocked
        # text, blockers, resolutions, trigger questions and comments), kept lowercased so
        # the filter is a plain LIKE on one column of a one-to-one join, never a subquery
        # per row; the phrase in the title, source id or resource as before.
        words = Q()
        for term in search_terms(text):
            words &= Q(search_text__text__contains=term)
        return self.filter(
            Q(title__icontains=text)
            | Q(source_id__icontains=text)
            | Q(sql_environment__db_id__icontains=text)
            | Q(swe_environment__repo_name__icontains=text)
            | words
        )

    def on_resource(self, name: str):
        """Tasks on a database (SQL db_id) or a repository (SWE owner/name)."""
        return self.filter(Q(sql_environment__db_id=name) | Q(swe_environment__repo_name=name))
