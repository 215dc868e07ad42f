"""The task list's search words indexed for substring search: on SQLite a trigram FTS5 table
kept by triggers, on PostgreSQL a pg_trgm GIN index (``querysets.TaskQuerySet.search``)."""

from django.db import migrations

FTS = "hilbench_annotate_tasksearch_fts"
TABLE = "hilbench_annotate_tasksearchtext"

# SQLite: a trigram full-text index over the search words (FTS5, SQLite 3.34+), kept by
# triggers on the table it indexes (external content: the words are stored once); a word of
# three characters or more is then found by the index, not by reading every task's words.
# The names are the constants above; nothing comes from outside.
SQLITE_INDEX = [
    f"CREATE VIRTUAL TABLE {FTS} USING fts5(text, content='{TABLE}', content_rowid='task_id', "
    "tokenize='trigram')",
    f"CREATE TRIGGER {FTS}_ai AFTER INSERT ON {TABLE} BEGIN "  # noqa: S608
    f"INSERT INTO {FTS}(rowid, text) VALUES (new.task_id, new.text); END",
    f"CREATE TRIGGER {FTS}_ad AFTER DELETE ON {TABLE} BEGIN "  # noqa: S608
    f"INSERT INTO {FTS}({FTS}, rowid, text) VALUES ('delete', old.task_id, old.text); END",
    f"CREATE TRIGGER {FTS}_au AFTER UPDATE ON {TABLE} BEGIN "  # noqa: S608
    f"INSERT INTO {FTS}({FTS}, rowid, text) VALUES ('delete', old.task_id, old.text); "
    f"INSERT INTO {FTS}(rowid, text) VALUES (new.task_id, new.text); END",
    f"INSERT INTO {FTS}({FTS}) VALUES ('rebuild')",  # noqa: S608
]
SQLITE_DROP = [f"DROP TRIGGER IF EXISTS {FTS}_{t}" for t in ("ai", "ad", "au")] + [
    f"DROP TABLE IF EXISTS {FTS}"
]
# PostgreSQL: a trigram GIN index, which LIKE '%word%' uses; it needs the pg_trgm extension,
# which a database user without the right to create it goes without (a full scan then).
POSTGRES_INDEX = [
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    f"CREATE INDEX tasksearch_text_trgm ON {TABLE} USING gin (text gin_trgm_ops)",
]


def index_words(apps, schema_editor):
    from django.db import DatabaseError, transaction

    connection = schema_editor.connection
    if connection.vendor == "sqlite":
        for statement in SQLITE_INDEX:
            schema_editor.execute(statement)
    elif connection.vendor == "postgresql":
        try:
            with transaction.atomic(using=connection.alias):
                for statement in POSTGRES_INDEX:
                    schema_editor.execute(statement)
        except DatabaseError:
            pass


def drop_index(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor == "sqlite":
        for statement in SQLITE_DROP:
            schema_editor.execute(statement)
    elif connection.vendor == "postgresql":
        schema_editor.execute("DROP INDEX IF EXISTS tasksearch_text_trgm")


class Migration(migrations.Migration):
    dependencies = [
        ("hilbench_annotate", "0012_task_search_text"),
    ]

    operations = [migrations.RunPython(index_words, drop_index)]
