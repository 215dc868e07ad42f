from django.apps import apps
from django.db import connections, models
from django.db.models import Q
from django.db.models.expressions import RawSQL

from hilbench_annotate.search_sources import SEARCH_INDEX, search_terms
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
        # text, blockers, resolutions, trigger questions and comments), read through their
        # index (migration 0013); the phrase in the title, source id or resource as before.
        return self.filter(
            Q(title__icontains=text)
            | Q(source_id__icontains=text)
            | Q(sql_environment__db_id__icontains=text)
            | Q(swe_environment__repo_name__icontains=text)
            | Q(pk__in=self._with_words(search_terms(text)))
        )

    def _with_words(self, terms: list[str]):
        """The ids of the tasks whose search words hold every term, as one subquery (not
        one per row). SQLite: one MATCH of the trigram FTS5 index. Elsewhere: LIKE on the
        words' column, which PostgreSQL's trigram index serves."""
        words = apps.get_model("hilbench_annotate", "TaskSearchText")
        if not terms:
            return words.objects.none().values("task_id")
        # A term of three characters or more is found anywhere in a word; a two-character
        # one ("97", "cz") at a word's start or end, a one-character one as a whole word (the
        # words are kept space-separated, with a space before the first and after the last).
        # The same on every database: the trigram indexes find phrases of three characters.
        if connections[self.db].vendor != "sqlite":
            rows = words.objects.all()
            for term in terms:
                if len(term) >= 3:
                    rows = rows.filter(text__contains=term)
                elif len(term) == 2:
                    rows = rows.filter(Q(text__contains=f" {term}") | Q(text__contains=f"{term} "))
                else:
                    rows = rows.filter(text__contains=f" {term} ")
            return rows.values("task_id")
        phrases = []
        for term in terms:
            quoted = term.replace('"', '""')
            if len(term) >= 3:
                phrases.append(f'"{quoted}"')
            elif len(term) == 2:
                phrases.append(f'(" {quoted}" OR "{quoted} ")')
            else:
                phrases.append(f'" {quoted} "')
        # The index's name is a constant; the terms are one bound parameter.
        sql = f"SELECT rowid FROM {SEARCH_INDEX} WHERE {SEARCH_INDEX} MATCH %s"  # noqa: S608
        params = [" AND ".join(phrases)]
        return RawSQL(sql, params)  # noqa: S611 - bound parameters only

    def on_resource(self, name: str):
        """Tasks on a database (SQL db_id) or a repository (SWE owner/name)."""
        return self.filter(Q(sql_environment__db_id=name) | Q(swe_environment__repo_name=name))
