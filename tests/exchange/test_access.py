"""Who reaches an import or export job is decided in one place, ``exchange/access.py``, which
the pages, the API and the selectors read (as ``review/access.py`` is for review objects)."""

import ast
from pathlib import Path

import pytest
from django.http import Http404

from exchange import access, api, selectors, views
from exchange.models import ExportJob, ImportJob

ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.fixture
def jobs(project, author, lead):
    return {
        "import": ImportJob.objects.create(
            project=project, kind="bird", created_by=author, upload_dir="x"
        ),
        "export": ExportJob.objects.create(project=project, created_by=lead),
    }


@pytest.mark.django_db
@pytest.mark.parametrize(
    "who,kind,reached",
    [
        ("author", "import", True),
        ("reviewer", "import", True),  # every reader of the project reads its imports
        ("outsider", "import", False),
        ("lead", "export", True),
        ("author", "export", False),  # exports are the leads'
        ("reviewer", "export", False),
        ("outsider", "export", False),
    ],
)
def test_a_job_is_reached_only_by_whom_it_concerns(request, jobs, who, kind, reached):
    user = request.getfixturevalue(who)
    helper = {"import": access.access_import_job, "export": access.access_export_job}[kind]
    if reached:
        assert helper(user, jobs[kind].pk) == jobs[kind]
    else:
        with pytest.raises(Http404):
            helper(user, jobs[kind].pk)
    # A job that does not exist gets the same answer as one the user may not read.
    with pytest.raises(Http404):
        helper(user, 10**9)


@pytest.mark.django_db
def test_the_job_lists_show_only_the_jobs_their_reader_may_reach(jobs, author, lead, outsider):
    assert list(selectors.import_jobs_recent(user=author)) == [jobs["import"]]
    assert list(selectors.import_jobs_recent(user=outsider)) == []
    assert list(selectors.export_jobs_recent(user=lead)) == [jobs["export"]]
    assert list(selectors.export_jobs_recent(user=author)) == []


def access_helpers_defined(source: str) -> list[str]:
    return [
        node.name
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef) and node.name.startswith("access_")
    ]


@pytest.mark.parametrize(
    "source,found",
    [
        ("def access_export_job(user, job_id):\n    pass", ["access_export_job"]),
        ("from exchange.access import access_export_job", []),
        ("def export_list(request):\n    access_export_job(request.user, 1)", []),
    ],
)
def test_the_helper_rule_finds_definitions_not_uses(source, found):
    assert access_helpers_defined(source) == found


def test_views_and_api_use_the_helpers_of_exchange_access():
    for module in ("views.py", "views_data.py", "api.py", "api_data.py"):
        source = (ROOT / "exchange" / module).read_text(encoding="utf-8")
        assert access_helpers_defined(source) == [], module
    assert views.access_export_job is api.access_export_job is access.access_export_job
    assert views.access_import_job is api.access_import_job is access.access_import_job
