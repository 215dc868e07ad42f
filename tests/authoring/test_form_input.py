"""The workspace's forms are read by the input schemas of their actions
(``authoring/serializers.py``, through ``authoring/forms.py:form_typed`` and ``form_input``):
waiving a finding (``WaiveIn``), restoring a revision (``RestoreIn``), a save beside its draft
(``WorkspaceSaveIn``), a section's diff (``SpecTextIn``), the SQL console (``ConsoleIn``), the
Gold SQL card (``GoldSqlIn``), a file edited in the browser (``RepoEditIn``) and an uploaded
setup patch (``SetupPatchIn``). A malformed form is refused with the schema's words naming the
field — a 400 (never a 500), or for a redirecting form a message — and nothing is saved. None of
these actions has an API yet; the save's version is read as the API reads a task edit's."""

import pytest
from django.contrib.messages import get_messages
from django.core.files.uploadedfile import SimpleUploadedFile
from django.http import QueryDict
from django.urls import reverse
from django.utils.html import escape

from authoring import checks
from authoring.forms import SAVE, SQL, form_typed
from authoring.models import LintWaiver
from authoring.serializers import WorkspaceSaveIn
from hilbench_annotate.forminput import form_input
from hilbench_annotate.models import Revision, TaskEvent
from hilbench_annotate.services import task_snapshot
from tests.review.test_api import clean_task

from ..factories import TaskFactory
from .test_workspace import textarea

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}
NUL = "SELECT\x00 1"
NULS_REFUSED = "Null characters are not allowed."


def _stored(task) -> tuple:
    """What a refused form must leave as it was."""
    task.refresh_from_db()
    return (
        task.version,
        Revision.objects.filter(task=task).count(),
        LintWaiver.objects.filter(task=task).count(),
        TaskEvent.objects.filter(task=task).count(),
    )


def _said(response) -> str:
    return " ".join(str(m) for m in get_messages(response.wsgi_request))


def _post(client, user, name, task, data, **headers):
    client.force_login(user)
    return client.post(reverse(name, args=[task.pk]), data, **headers)


@pytest.fixture
def task(project, author):
    """A draft SQL task that passes lint, with revision 1."""
    return clean_task(project, author, title="Loans settled cleanly")


# --- reading the form ----------------------------------------------------------------------


def test_the_form_is_renamed_to_the_schemas_names_and_unsent_fields_stay_out():
    post = QueryDict(mutable=True)
    post.update({"env.gold_sql": "SELECT 1", "console_sql": "", "other": "ignored"})
    typed = form_typed(post, SQL)
    assert dict(typed.lists()) == {"gold_sql": ["SELECT 1"], "console_sql": [""]}


def test_a_save_reads_as_the_view_read_it_before():
    post = QueryDict("expected_version=3&session=page-1&autosave=1&blocker=0&blocker=2&x=y")
    assert form_input(WorkspaceSaveIn, form_typed(post, SAVE)) == {
        "expected_version": 3,
        "session": "page-1",
        "autosave": True,
        "blocker": ["0", "2"],
    }
    # An explicit save: the page's script sends an empty flag.
    explicit = form_input(
        WorkspaceSaveIn, form_typed(QueryDict("expected_version=3&autosave="), SAVE)
    )
    assert explicit == {"expected_version": 3, "session": "", "autosave": False, "blocker": []}


# --- a save --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields,said",
    [
        ({"expected_version": "x"}, "Expected version: A valid integer is required."),
        ({"expected_version": ""}, "Expected version: A valid integer is required."),
        (
            {"expected_version": str(2**31)},
            "Expected version: Ensure this value is less than or equal to 2147483647.",
        ),
        ({"autosave": "maybe"}, "Autosave: Must be a valid boolean."),
        ({"session": "s" * 65}, "Session: Ensure this field has no more than 64 characters."),
    ],
)
def test_a_malformed_save_is_refused_naming_the_field(client, author, task, fields, said):
    before = _stored(task)
    data = {"expected_version": str(task.version), "spec.question": "How many loans?", **fields}
    response = _post(client, author, "workspace-save", task, data, **HTMX)
    assert response.status_code == 400
    assert said in response.content.decode()
    assert _stored(task) == before


def test_a_refused_save_without_htmx_shows_the_form_again_in_its_session(client, author, task):
    before = _stored(task)
    data = {"expected_version": "x", "spec.question": "My words?", "session": "page-7"}
    response = _post(client, author, "workspace-save", task, data)
    assert response.status_code == 400
    assert _said(response) == "Expected version: A valid integer is required."
    assert response.context["session_key"] == "page-7"
    assert _stored(task) == before


def test_the_saves_version_is_refused_in_the_words_of_the_apis_task_edit(client, api, author, task):
    """The same malformed version: the workspace's save and ``PATCH /api/tasks/<id>/``."""
    data = {"expected_version": "x", "spec.question": "How many loans?"}
    page = _post(client, author, "workspace-save", task, data, **HTMX)
    api.force_authenticate(author)
    body = api.patch(
        reverse("api-task-detail", args=[task.pk]), {"expected_version": "x"}, format="json"
    )
    assert page.status_code == body.status_code == 400
    words = body.json()["expected_version"][0]
    assert f"Expected version: {words}" in page.content.decode()


# --- waiving a finding ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "data,said",
    [
        ({"reason": "Checked by hand."}, "Fingerprint: This field is required."),
        (
            {"fingerprint": "", "reason": "Checked by hand."},
            "Fingerprint: This field may not be blank.",
        ),
        (
            {"fingerprint": "f" * 301, "reason": "Checked by hand."},
            "Fingerprint: Ensure this field has no more than 300 characters.",
        ),
        (
            {"fingerprint": "blocker_count", "withdraw": "maybe"},
            "Withdraw: Must be a valid boolean.",
        ),
    ],
)
def test_a_malformed_waiver_is_refused_naming_the_field(client, author, task, data, said):
    before = _stored(task)
    response = _post(client, author, "workspace-waive", task, data)
    assert response.status_code == 302
    assert _said(response) == said
    assert _stored(task) == before
    # By htmx: the lint panel again, with a 400 and the words (no finding to say them
    # beside, above the findings), nothing stored.
    panel = _post(client, author, "workspace-waive", task, data, **HTMX)
    assert panel.status_code == 400
    body = panel.content.decode()
    assert escape(said) in body[: body.index('<ul class="findings">')]
    assert _stored(task) == before


def test_a_malformed_waiver_reason_is_said_beside_its_finding(client, author, project):
    task = TaskFactory(project=project, author=author)  # no blockers: a blocker_count finding
    findings = checks.as_dicts(checks.draft_findings(task, task_snapshot(task)))
    fingerprint = next(f["fingerprint"] for f in findings if f["rule"] == "blocker_count")
    before = _stored(task)
    response = _post(
        client,
        author,
        "workspace-waive",
        task,
        {"fingerprint": fingerprint, "reason": "Checked\x00 by hand."},
        **HTMX,
    )
    assert response.status_code == 400
    body = response.content.decode()
    finding = body[body.index('data-rule="blocker_count"') :]
    assert f"Reason: {NULS_REFUSED}" in finding[: finding.index("</li>")]
    assert _stored(task) == before


# --- restoring a revision ------------------------------------------------------------------


@pytest.mark.parametrize(
    "data,said",
    [
        (
            {"number": "x", "expected_version": "-1"},
            "Not restored. Revision: A valid integer is required. "
            "Expected version: Ensure this value is greater than or equal to 1.",
        ),
        ({"expected_version": "1"}, "Not restored. Revision: This field is required."),
        (
            {"number": str(2**31), "expected_version": "1"},
            "Not restored. Revision: Ensure this value is less than or equal to 2147483647.",
        ),
    ],
)
def test_a_malformed_restore_is_refused_naming_the_field(client, author, task, data, said):
    before = _stored(task)
    response = _post(client, author, "workspace-revision-restore", task, data)
    # A plain form that answers with the history, where the message is said.
    assert response.status_code == 302
    assert _said(response) == said
    assert _stored(task) == before


# --- the fragments -------------------------------------------------------------------------


def test_a_malformed_section_is_refused_where_its_diff_would_be(client, author, task):
    before = _stored(task)
    client.force_login(author)
    url = reverse("workspace-spec-diff", args=[task.pk, "question"])
    response = client.post(url, {"spec.question": "How\x00 many?"}, **HTMX)
    assert response.status_code == 400
    body = response.content.decode()
    assert 'id="diff-question"' in body and f"Blocked text: {NULS_REFUSED}" in body
    assert _stored(task) == before


@pytest.mark.parametrize(
    "name,data,said,where",
    [
        ("workspace-sql-query", {"console_sql": NUL}, "Query", 'id="query-result"'),
        ("workspace-sql-query", {"env.gold_sql": NUL}, "Gold SQL", 'id="gold-query-result"'),
        (
            "workspace-sql-query",
            {"console_sql": "SELECT 1", "env.edit_script": NUL},
            "Database-edit script",
            'id="query-result"',
        ),
        ("workspace-sql-format", {"env.gold_sql": NUL}, "Gold SQL", 'id="gold-sql"'),
        (
            "workspace-sql-format",
            {"env.gold_sql": "SELECT 1", "env.golden_output": "a\x00"},
            "Golden output",
            'id="gold-sql"',
        ),
        (
            "workspace-sql-golden",
            {"env.gold_sql": "SELECT 1", "env.edit_script": NUL},
            "Database-edit script",
            'id="gold-sql"',
        ),
    ],
)
def test_a_malformed_sql_form_is_refused_in_its_fragment(
    client, author, task, name, data, said, where
):
    before = _stored(task)
    response = _post(client, author, name, task, data, **HTMX)
    assert response.status_code == 400
    body = response.content.decode()
    assert where in body and f"{said}: {NULS_REFUSED}" in body
    assert _stored(task) == before


def test_a_refused_gold_sql_card_keeps_what_was_typed(client, author, task):
    data = {"env.gold_sql": "SELECT 2", "env.golden_output": "n\n2\n", "env.edit_script": NUL}
    response = _post(client, author, "workspace-sql-golden", task, data, **HTMX)
    assert response.status_code == 400
    assert textarea(response, "env.gold_sql") == "SELECT 2"
    assert textarea(response, "env.golden_output") == "n\n2\n"


@pytest.mark.parametrize(
    "data,said",
    [
        ({"content": "x = 1\n"}, "Path: This field is required."),
        ({"path": "", "content": "x = 1\n"}, "Path: This field may not be blank."),
        ({"path": "a.py", "content": "x\x00"}, f"Content: {NULS_REFUSED}"),
        ({"path": "a.py", "env.setup_patch": "\x00"}, f"Setup patch: {NULS_REFUSED}"),
    ],
)
def test_a_malformed_file_edit_is_refused_in_the_setup_patch_card(
    client, author, swe_task, data, said
):
    before = _stored(swe_task)
    response = _post(client, author, "workspace-repo-edit", swe_task, data, **HTMX)
    assert response.status_code == 400
    body = response.content.decode()
    assert 'id="setup-patch"' in body and said in body
    assert _stored(swe_task) == before


def test_an_upload_beside_a_malformed_setup_patch_is_refused(client, author, swe_task):
    before = _stored(swe_task)
    upload = SimpleUploadedFile("setup.patch", b"")
    data = {"patch_file": upload, "env.setup_patch": "typed\x00"}
    response = _post(client, author, "workspace-setup-patch-upload", swe_task, data, **HTMX)
    assert response.status_code == 400
    assert f"Setup patch: {NULS_REFUSED}" in response.content.decode()
    assert _stored(swe_task) == before
