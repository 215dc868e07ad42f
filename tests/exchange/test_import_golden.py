"""A SQL task gets its golden output at import, from its gold SQL's result (the workspace's
"Fill from the gold SQL's result", done for the user), and an export says per task what its
oracle and no-op scored (issue 44, item 9)."""

import json
from io import StringIO

import pytest
from django.core.management import call_command

from exchange.bundles import layout
from exchange.importers import import_bird
from hilbench_annotate.databases import gold_sql_output
from hilbench_annotate.models import Task

from ..conftest import FIXTURES, shared_path
from .bundle_helpers import members

pytestmark = pytest.mark.django_db


def _few_spider_questions(tmp_path, count: int = 3):
    """The first question of ``count`` Spider databases (../shared), as a BIRD-format file."""
    spider = shared_path("data", "spider-bird")
    chosen = {}
    for record in json.loads((spider / "dev.json").read_text()):
        chosen.setdefault(record["db_id"], record)
    questions = tmp_path / "few.json"
    questions.write_text(json.dumps(list(chosen.values())[:count]))
    return questions, spider / "dev_databases"


@pytest.mark.shared_data
def test_spider_questions_imported_fresh_export_as_a_draft_with_oracle_1(project, lead, tmp_path):
    questions, databases = _few_spider_questions(tmp_path)
    call_command("import_bird", questions=questions, databases=databases, project=project.slug)
    tasks = list(Task.objects.filter(project=project).select_related("sql_environment__database"))
    assert len(tasks) == 3
    for task in tasks:
        env = task.sql_environment
        assert env.golden_output.strip(), task.source_id
        assert env.golden_output == gold_sql_output(env.database.path, env.gold_sql)
        assert task.revisions.count() == 1  # filled at import, not by a later edit

    out, bundle = StringIO(), tmp_path / "draft.tar.gz"
    call_command("export_bundle", project=project.slug, out=str(bundle), draft=True, stdout=out)
    printed = out.getvalue()
    manifest = json.loads(members(bundle)[layout.MANIFEST])
    assert len(manifest["tasks"]) == 3
    for entry in manifest["tasks"]:
        folder = entry["folder"]
        assert entry["oracle"] == "oracle 1, no-op 0", entry
        assert entry["validated"] is False  # a draft task, never approved
        line = next(x for x in printed.splitlines() if x.strip().startswith(f"{folder} "))
        assert "oracle 1, no-op 0" in line and "not validated: status is draft" in line
    assert "3 task(s) written" in printed and "draft bundle" in printed


def test_a_gold_sql_that_fails_leaves_the_golden_output_empty_and_says_why(project, tmp_path):
    databases = FIXTURES / "bird" / "dev_databases"
    questions = tmp_path / "q.json"
    questions.write_text(
        json.dumps(
            [
                {
                    "question_id": 1,
                    "db_id": "library",
                    "question": "How many loans?",
                    "SQL": "SELECT COUNT(*) FROM loan",
                    "evidence": "",
                },
                {
                    "question_id": 2,
                    "db_id": "library",
                    "question": "How many ghosts?",
                    "SQL": "SELECT COUNT(*) FROM no_such_table",
                    "evidence": "",
                },
            ]
        )  # fmt: skip
    )
    report = import_bird(project=project, questions=questions, databases=databases)
    good = Task.objects.get(project=project, source_id="library/1").sql_environment
    bad = Task.objects.get(project=project, source_id="library/2")
    assert good.golden_output.splitlines()[0] == "COUNT(*)"
    assert bad.sql_environment.golden_output == ""
    assert "no such table" in bad.import_notes and "golden_output.csv" in bad.import_notes
    assert any("1 task(s) without a golden output" in note for note in report.notes)
