"""Task databases on disk: the limits of every query."""

from __future__ import annotations

from django.conf import settings

from hilbench_annotate.toolkit.sqlconsole import QueryLimits


def query_limits() -> QueryLimits:
    """The limits of every query on a task database, from the settings (read at each query,
    so a test's or an operator's change applies at once)."""
    return QueryLimits(
        value_bytes=settings.SQL_VALUE_BYTES,
        memory_bytes=settings.SQL_MEMORY_MB * 1024 * 1024,
        cell_bytes=settings.SQL_CONSOLE_CELL_BYTES,
        result_bytes=settings.SQL_CONSOLE_RESULT_BYTES,
        exact_result_bytes=settings.SQL_EXACT_RESULT_BYTES,
    )
