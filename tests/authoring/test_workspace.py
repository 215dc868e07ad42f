"""The workspace's save path, conflicts, lint gate and submission, through real requests."""

import html
import re

import pytest
from django.urls import reverse

from authoring.models import LintWaiver
from hilbench_annotate.models import Revision

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


GOOD_BLOCKERS = [
    {
        "id": "clean_finish_status",
        "type": "question",
        "subtype": "underspecified_concepts",
        "description": "The question asks for loans settled cleanly but never says which "
        "loan status means that.",
        "resolution": "Loans settled cleanly have loan.status = 'A'.",
        "questions": [
            "Which loan status value marks a loan settled cleanly?",
            "How is a cleanly settled loan identified in the loan table?",
            "What definition of a clean settlement should the count use?",
        ],
    },
    {
        "id": "loan_scope_branch",
        "type": "schema",
        "subtype": "confusing_table_or_table_definition",
        "description": "Loans can be reached through accounts of several branches; it is not "
        "said which branches count.",
        "resolution": "Count loans of every branch; no branch filter applies.",
        "questions": [
            "Should the loan count be restricted to particular branches?",
            "Which branches' loans are in scope for the count?",
            "Do loans from all branches count toward the total?",
        ],
    },
    {
        "id": "granted_period",
        "type": "question",
        "subtype": "timeframe_ambiguity",
        "description": "The question gives no period for when the loans were granted.",
        "resolution": "Use every loan regardless of its granted_date; there is no period limit.",
        "questions": [
            "Is there a date range for when the loans were granted?",
            "Which granting period should the count cover?",
            "Should loans be limited to a particular year of granting?",
        ],
    },
]


def form_data(
    task,
    *,
    question="How many loans were settled cleanly?",
    blockers=GOOD_BLOCKERS,
    version=None,
    **extra,
):
    data = {
        "expected_version": str(version if version is not None else task.version),
        "spec.question": question,
        "spec.evidence": "",
        "blocker": [str(i) for i in range(len(blockers))],
    }
    for i, b in enumerate(blockers):
        data.update(
            {
                f"blocker-{i}-key": b["id"],
                f"blocker-{i}-type": b["type"],
                f"blocker-{i}-subtype": b.get("subtype", ""),
                f"blocker-{i}-description": b["description"],
                f"blocker-{i}-resolution": b["resolution"],
                f"blocker-{i}-q": b["questions"],
            }
        )
    data.update(extra)
    return data


def text(response) -> str:
    return html.unescape(response.content.decode())


def textarea(response, name: str) -> str:
    match = re.search(
        rf'<textarea[^>]*name="{re.escape(name)}"[^>]*>(.*?)</textarea>',
        response.content.decode(),
        re.S,
    )
    assert match, f"no textarea {name}"
    # Django's template escaping; browsers drop one leading newline of a textarea.
    return html.unescape(match.group(1))


def save(client, task, data, **headers):
    return client.post(reverse("workspace-save", args=[task.pk]), data, **headers)


def test_workspace_page_renders_for_the_author_only(client, sql_task, author, reviewer):
    client.force_login(author)
    page = client.get(reverse("workspace", args=[sql_task.pk]))
    assert page.status_code == 200
    body = page.content.decode()
    assert (
        'name="spec.question"' in body and "Query console" in body and "Keyboard shortcuts" in body
    )
    client.force_login(reviewer)
    response = client.get(reverse("workspace", args=[sql_task.pk]))
    assert response.status_code == 302 and response.url == reverse(
        "task-detail", args=[sql_task.pk]
    )


def test_save_stores_spec_and_registry_as_one_revision_with_lint(client, sql_task, author):
    client.force_login(author)
    before = Revision.objects.filter(task=sql_task).count()

    response = save(client, sql_task, form_data(sql_task), **HTMX)

    assert response.status_code == 200
    sql_task.refresh_from_db()
    assert sql_task.version == 2
    assert sql_task.blocked_spec["question"] == "How many loans were settled cleanly?"
    assert [b.key for b in sql_task.blockers.order_by("position")] == [
        b["id"] for b in GOOD_BLOCKERS
    ]
    assert sql_task.blockers.get(key="granted_period").trigger_questions.count() == 3
    revision = Revision.objects.filter(task=sql_task).order_by("-number").first()
    assert Revision.objects.filter(task=sql_task).count() == before + 1
    assert revision.snapshot["blocked_spec"]["question"] == "How many loans were settled cleanly?"
    assert isinstance(revision.lint_findings, list)
    body = text(response)
    assert f"revision {revision.number}" in body
    assert 'id="expected-version"' in body and 'value="2"' in body  # out-of-band version update


def test_unchanged_save_makes_no_revision(client, sql_task, author):
    client.force_login(author)
    save(client, sql_task, form_data(sql_task), **HTMX)
    sql_task.refresh_from_db()
    count = Revision.objects.filter(task=sql_task).count()
    response = save(client, sql_task, form_data(sql_task), **HTMX)
    assert response.status_code == 200
    assert Revision.objects.filter(task=sql_task).count() == count


def test_second_editor_gets_conflict_view_and_both_texts_survive(client, sql_task, author, lead):
    """Two people open version 1; the lead saves first; the author's save is refused
    with a view of both versions, and the lead's text stays stored."""
    client.force_login(lead)
    first = save(
        client,
        sql_task,
        form_data(sql_task, question="Lead's wording of the loan question?", version=1),
        **HTMX,
    )
    assert first.status_code == 200

    client.force_login(author)
    second = save(
        client, sql_task, form_data(sql_task, question="Author's own wording?", version=1), **HTMX
    )

    assert second.status_code == 409
    body = text(second)
    assert re.search(r"Not saved: lead saved this task at \d\d:\d\d:\d\d", body)
    assert "Lead's" in body  # their saved text is shown
    assert "Author's" in body  # and the author's unsaved text too
    sql_task.refresh_from_db()
    assert sql_task.blocked_spec["question"] == "Lead's wording of the loan question?"

    # "Save mine over theirs" names the current version and wins; nothing was lost before.
    third = save(
        client,
        sql_task,
        form_data(sql_task, question="Author's own wording?", version=sql_task.version),
        **HTMX,
    )
    assert third.status_code == 200
    sql_task.refresh_from_db()
    assert sql_task.blocked_spec["question"] == "Author's own wording?"
    texts = [r.snapshot["blocked_spec"]["question"] for r in sql_task.revisions.order_by("number")]
    assert "Lead's wording of the loan question?" in texts and texts[-1] == "Author's own wording?"


def autosave(client, task, session="page-1", **fields):
    """The page's autosave: its session, ``autosave=1``, the task's current version."""
    task.refresh_from_db()
    data = form_data(task, session=session, autosave="1", **fields)
    response = save(client, task, data, **HTMX)
    assert response.status_code == 200, text(response)
    return response


def revisions_after(task, number):
    return list(Revision.objects.filter(task=task, number__gt=number).order_by("number"))


def test_autosaves_of_one_session_fold_into_one_revision_and_every_save_moves_the_version(
    client, sql_task, author
):
    client.force_login(author)
    start = sql_task.revisions.order_by("-number").first().number
    versions = []
    for question in ("How many loans?", "How many loans were settled?", "Loans settled?"):
        autosave(client, sql_task, question=question)
        versions.append(sql_task.version + 1)
    folded = revisions_after(sql_task, start)
    assert [r.number for r in folded] == [start + 1]
    assert folded[0].saves == 3 and folded[0].session == "page-1"
    assert folded[0].snapshot["blocked_spec"]["question"] == "Loans settled?"
    sql_task.refresh_from_db()
    assert sql_task.version == versions[-1] == folded[0].snapshot["version"]
    # The summary is against the revision before the session, not the last autosave.
    assert folded[0].summary.startswith("Edited the question")
    assert "added blocker clean_finish_status" in folded[0].summary
    # The form of the first autosave's version is refused: a folded save moved the version.
    stale = save(client, sql_task, form_data(sql_task, question="Old tab?", version=2), **HTMX)
    assert stale.status_code == 409
    assert "You saved this task in another tab or window at" in text(stale)


def test_an_explicit_save_folds_in_and_ends_the_session(client, sql_task, author):
    client.force_login(author)
    start = sql_task.revisions.order_by("-number").first().number
    autosave(client, sql_task, question="First words?")
    sql_task.refresh_from_db()
    # Ctrl+S / Save: no autosave flag.
    data = form_data(sql_task, question="Saved words?", session="page-1")
    assert save(client, sql_task, data, **HTMX).status_code == 200
    closed = revisions_after(sql_task, start)
    assert [(r.number, r.saves, r.session) for r in closed] == [(start + 1, 2, "")]
    autosave(client, sql_task, question="After the save?")
    assert [r.number for r in revisions_after(sql_task, start)] == [start + 1, start + 2]


def test_an_explicit_save_that_changed_nothing_still_ends_the_session(client, sql_task, author):
    client.force_login(author)
    start = sql_task.revisions.order_by("-number").first().number
    autosave(client, sql_task, question="Words?")
    sql_task.refresh_from_db()
    unchanged = form_data(sql_task, question="Words?", session="page-1")
    assert save(client, sql_task, unchanged, **HTMX).status_code == 200
    assert revisions_after(sql_task, start)[0].session == ""
    autosave(client, sql_task, question="More words?")
    assert len(revisions_after(sql_task, start)) == 2


def test_an_autosave_starts_a_new_revision_when_the_last_is_not_its_sessions_own(
    client, sql_task, author, lead, settings
):
    from django.utils import timezone

    client.force_login(author)
    start = sql_task.revisions.order_by("-number").first().number
    autosave(client, sql_task, question="One?")
    autosave(client, sql_task, session="page-2", question="Another page?")  # another tab
    assert len(revisions_after(sql_task, start)) == 2
    client.force_login(lead)
    autosave(client, sql_task, session="page-2", question="The lead's?")  # another person
    assert len(revisions_after(sql_task, start)) == 3
    client.force_login(author)
    autosave(client, sql_task, session="page-3", question="Mine again?")
    # The session's last save is older than the window: a new revision.
    settings.AUTOSAVE_SESSION_MINUTES = 5
    Revision.objects.filter(task=sql_task, number=start + 4).update(
        created_at=timezone.now() - timezone.timedelta(minutes=6)
    )
    autosave(client, sql_task, session="page-3", question="Mine, later?")
    assert [r.author.username for r in revisions_after(sql_task, start)] == [
        author.username, author.username, lead.username, author.username, author.username,
    ]  # fmt: skip


def test_a_revision_anything_references_is_never_replaced(client, sql_task, author):
    """A validation run names the session's revision: the next autosave starts a new one,
    and the run's revision keeps its content."""
    from validators.models import ValidationRun

    client.force_login(author)
    start = sql_task.revisions.order_by("-number").first().number
    autosave(client, sql_task, question="Checked words?")
    checked = revisions_after(sql_task, start)[0]
    ValidationRun.objects.create(
        task=sql_task, revision=checked, checks=["spec"], created_by=author
    )
    autosave(client, sql_task, question="Words after the check?")
    after = revisions_after(sql_task, start)
    assert [r.pk for r in after][:1] == [checked.pk] and len(after) == 2
    checked.refresh_from_db()
    assert checked.snapshot["blocked_spec"]["question"] == "Checked words?"
    assert after[1].summary == "Edited the question"


def test_an_export_ends_the_sessions_of_the_tasks_it_writes(client, sql_task, author, lead):
    from exchange.services.exports import bundle_export_create

    client.force_login(author)
    start = sql_task.revisions.order_by("-number").first().number
    autosave(client, sql_task, question="Exported words?")
    bundle_export_create(project=sql_task.project, actor=lead, selection={}, draft=True)
    autosave(client, sql_task, question="Words after the export?")
    assert len(revisions_after(sql_task, start)) == 2


def test_plain_post_conflict_renders_full_page(client, sql_task, author, lead):
    client.force_login(lead)
    save(client, sql_task, form_data(sql_task, question="First?", version=1))
    client.force_login(author)
    response = save(client, sql_task, form_data(sql_task, question="Second?", version=1))
    assert response.status_code == 409
    assert "<html" in text(response) and "Second?" in text(response)


def test_invalid_registry_is_refused_naming_the_blocker_and_nothing_changes(
    client, sql_task, author
):
    client.force_login(author)
    bad = [dict(GOOD_BLOCKERS[0]), dict(GOOD_BLOCKERS[1], id=GOOD_BLOCKERS[0]["id"])]
    response = save(client, sql_task, form_data(sql_task, blockers=bad), **HTMX)
    assert response.status_code == 400
    assert "Blocker 2: id 'clean_finish_status' is also used by blocker 1" in text(response)
    sql_task.refresh_from_db()
    assert sql_task.version == 1 and sql_task.blockers.count() == 0


def test_live_lint_reports_unsaved_problems_and_stores_nothing(client, sql_task, author):
    client.force_login(author)
    two = GOOD_BLOCKERS[:2]
    response = client.post(
        reverse("workspace-lint", args=[sql_task.pk]), form_data(sql_task, blockers=two), **HTMX
    )
    body = text(response)
    assert response.status_code == 200 and "blocker_count" in body
    response = client.post(
        reverse("workspace-lint", args=[sql_task.pk]), form_data(sql_task), **HTMX
    )
    assert "blocker_count" not in text(response)
    sql_task.refresh_from_db()
    assert sql_task.version == 1


def test_submit_blocked_by_lint_until_fixed_or_waived(client, sql_task, author):
    client.force_login(author)
    two = GOOD_BLOCKERS[:2]
    save(client, sql_task, form_data(sql_task, blockers=two), **HTMX)
    sql_task.refresh_from_db()

    refused = client.post(
        reverse("workspace-submit", args=[sql_task.pk]),
        {"expected_version": sql_task.version},
        **HTMX,
    )
    assert refused.status_code == 400
    assert "Submission is blocked" in text(refused)
    sql_task.refresh_from_db()
    assert sql_task.status == "draft"

    revision = sql_task.revisions.order_by("-number").first()
    fingerprint = next(
        f["fingerprint"] for f in revision.lint_findings if f["rule"] == "blocker_count"
    )
    short = client.post(
        reverse("workspace-waive", args=[sql_task.pk]), {"fingerprint": fingerprint, "reason": "ok"}
    )
    assert short.status_code == 302 and not LintWaiver.objects.exists()
    client.post(
        reverse("workspace-waive", args=[sql_task.pk]),
        {
            "fingerprint": fingerprint,
            "reason": "Pilot task: the third blocker is planted in the next round.",
        },
    )
    assert LintWaiver.objects.filter(task=sql_task, fingerprint=fingerprint).exists()

    sql_task.refresh_from_db()
    accepted = client.post(
        reverse("workspace-submit", args=[sql_task.pk]),
        {"expected_version": sql_task.version},
        **HTMX,
    )
    assert accepted.status_code == 200, text(accepted)
    sql_task.refresh_from_db()
    assert sql_task.status == "in_review"
    assert sql_task.events.filter(kind="status_changed").exists()
    # No more edits once in review.
    response = save(client, sql_task, form_data(sql_task, version=sql_task.version), **HTMX)
    assert response.status_code == 400 and "can be edited only" in text(response)


def test_sql_console_runs_selects_and_refuses_writes(client, sql_task, author):
    client.force_login(author)
    url = reverse("workspace-sql-query", args=[sql_task.pk])
    ok = client.post(
        url, {"console_sql": "SELECT COUNT(*) AS n FROM loan"}, **HTMX
    ).content.decode()
    assert '<th scope="col">n</th>' in ok
    refused = client.post(url, {"console_sql": "DELETE FROM loan"}, **HTMX).content.decode()
    assert "error" in refused and "DELETE" in refused.upper()
    still = client.post(url, {"console_sql": "SELECT COUNT(*) FROM loan"}, **HTMX).content.decode()
    assert still.count("<td>") == 1


def test_the_gold_sql_answers_in_its_own_card_saying_so(client, sql_task, author):
    """Issue 30, item 5: *Run gold SQL* answered in the console's place, under the console's
    query, as if the console's query had given it. The console answers in #query-result, the
    gold SQL in #gold-query-result (in its card), named as the gold SQL's result."""
    client.force_login(author)
    url = reverse("workspace-sql-query", args=[sql_task.pk])
    console = client.post(url, {"console_sql": "SELECT * FROM nosuchtable"}, **HTMX)
    assert 'id="query-result"' in text(console) and "nosuchtable" in text(console)
    assert "gold SQL" not in text(console)
    gold = client.post(url, {"env.gold_sql": "SELECT COUNT(*) AS n FROM loan"}, **HTMX)
    body = text(gold)
    assert 'id="gold-query-result"' in body and 'id="query-result"' not in body
    assert "Result of the gold SQL" in body and '<th scope="col">n</th>' in body
    failed = client.post(url, {"env.gold_sql": "SELECT * FROM nosuchtable"}, **HTMX)
    assert "Result of the gold SQL:" in text(failed) and "nosuchtable" in text(failed)
    # Formatting the gold SQL redraws its card with the (empty) place its result goes.
    formatted = client.post(
        reverse("workspace-sql-format", args=[sql_task.pk]),
        {"env.gold_sql": "select 1"},
        **HTMX,
    )
    assert 'id="gold-query-result"' in text(formatted)


def test_edit_script_runs_on_a_copy_for_the_console(client, sql_task, author):
    client.force_login(author)
    url = reverse("workspace-sql-query", args=[sql_task.pk])
    script = (
        "CREATE TABLE loan_code (code TEXT, meaning TEXT);"
        " INSERT INTO loan_code VALUES ('A', 'clean');"
    )
    body = client.post(
        url, {"console_sql": "SELECT meaning FROM loan_code", "env.edit_script": script}, **HTMX
    ).content.decode()
    assert "clean" in body
    original = client.post(
        url, {"console_sql": "SELECT meaning FROM loan_code"}, **HTMX
    ).content.decode()
    assert "no such table" in original


def test_uploaded_setup_patch_outside_the_repository_is_refused(client, swe_task, author):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client.force_login(author)
    url = reverse("workspace-setup-patch-upload", args=[swe_task.pk])
    escaping = (
        "diff --git a/../outside.txt b/../outside.txt\nnew file mode 100644\n--- /dev/null\n"
        "+++ b/../outside.txt\n@@ -0,0 +1 @@\n+owned\n"
    )
    absolute = "--- /dev/null\n+++ /etc/cron.d/owned\n@@ -0,0 +1 @@\n+* * * * * root true\n"
    for name, patch_text in (("escape.patch", escaping), ("absolute.patch", absolute)):
        response = client.post(
            url, {"patch_file": SimpleUploadedFile(name, patch_text.encode())}, **HTMX
        )
        assert response.status_code == 400, name
        assert "refused" in text(response)
    # Nor can it be slipped in through the save form.
    data = {
        "expected_version": swe_task.version,
        "spec.problem_statement": "x",
        "env.setup_patch": escaping,
    }
    response = save(client, swe_task, data, **HTMX)
    assert response.status_code == 400
    swe_task.refresh_from_db()
    assert swe_task.swe_environment.setup_patch == ""


def test_browser_file_edit_becomes_setup_patch_and_is_checked(client, swe_task, author):
    client.force_login(author)
    env = swe_task.swe_environment
    tree = client.get(reverse("workspace-repo", args=[swe_task.pk]), **HTMX).content.decode()
    assert "invoicing" in tree
    view = client.get(
        reverse("workspace-repo", args=[swe_task.pk]),
        {"path": "invoicing/money.py", "file": "1"},
        **HTMX,
    )
    content = textarea(view, "content")
    edited = content.replace('"""', '"""Money helpers (edited in the workspace).\n', 1)
    folded = client.post(
        reverse("workspace-repo-edit", args=[swe_task.pk]),
        {"path": "invoicing/money.py", "content": edited, "env.setup_patch": ""},
        **HTMX,
    )
    patch = textarea(folded, "env.setup_patch")
    assert "invoicing/money.py" in patch and "edited in the workspace" in patch
    data = {
        "expected_version": swe_task.version,
        "spec.problem_statement": swe_task.blocked_spec["problem_statement"],
        "spec.requirements": "",
        "spec.interface": swe_task.blocked_spec["interface"],
        "env.setup_patch": patch,
    }
    assert save(client, swe_task, data, **HTMX).status_code == 200
    env.refresh_from_db()
    assert env.setup_patch == patch
    findings = swe_task.revisions.order_by("-number").first().lint_findings
    assert not [f for f in findings if f["rule"] == "setup_patch"], findings


def test_preview_and_revision_diff_pages(client, sql_task, author):
    client.force_login(author)
    save(client, sql_task, form_data(sql_task), **HTMX)
    preview = client.get(reverse("workspace-preview", args=[sql_task.pk])).content.decode()
    assert "full_info/instruction.md" in preview and "loan.status = 'A'" in html.unescape(preview)
    history = client.get(
        reverse("workspace-revisions", args=[sql_task.pk]), {"a": 1, "b": 2}
    ).content.decode()
    assert "Revision 1 → 2" in history
    assert "<ins>" in history and "settled" in history


def test_a_refused_plain_save_shows_the_page_again_with_the_form_as_sent(client, sql_task, author):
    """Without htmx (no JavaScript) a refused save comes back whole: nothing typed is lost."""
    client.force_login(author)
    bad = [dict(GOOD_BLOCKERS[0]), dict(GOOD_BLOCKERS[1], id=GOOD_BLOCKERS[0]["id"])]
    response = save(
        client,
        sql_task,
        form_data(sql_task, question="My new <wording> of the loan question?", blockers=bad),
    )
    assert response.status_code == 400
    body = text(response)
    assert "Blocker 2: id 'clean_finish_status' is also used by blocker 1" in body
    assert '<li class="error">' in response.content.decode()
    assert textarea(response, "spec.question") == "My new <wording> of the loan question?"
    assert textarea(response, "blocker-1-resolution") == GOOD_BLOCKERS[1]["resolution"]
    assert GOOD_BLOCKERS[1]["questions"][2] in body
    sql_task.refresh_from_db()
    assert sql_task.version == 1 and sql_task.blockers.count() == 0


def test_a_refused_waiver_is_said_beside_the_finding_and_keeps_the_reason(client, sql_task, author):
    client.force_login(author)
    save(client, sql_task, form_data(sql_task, blockers=GOOD_BLOCKERS[:2]), **HTMX)
    sql_task.refresh_from_db()
    revision = sql_task.revisions.order_by("-number").first()
    fingerprint = next(
        f["fingerprint"] for f in revision.lint_findings if f["rule"] == "blocker_count"
    )
    response = client.post(
        reverse("workspace-waive", args=[sql_task.pk]),
        {
            **form_data(sql_task, blockers=GOOD_BLOCKERS[:2]),
            "fingerprint": fingerprint,
            "reason": "ok",
        },
        **HTMX,
    )
    assert response.status_code == 400
    body = response.content.decode()
    finding = body[body.index('data-rule="blocker_count"') :]
    finding = finding[: finding.index("</li>")]
    assert '<details class="waive" open>' in finding
    assert "Say why the finding does not apply" in finding
    assert 'value="ok"' in finding
    assert not LintWaiver.objects.exists()


def test_pages_name_a_task_state_by_its_revision_number_only(client, sql_task, author):
    """A status change moves the task's version (the form's lock), not its revision: the task
    page, the workspace and the review page all say "revision N" with the same N."""
    from review import services as review

    review.task_enter_review(task=sql_task, actor=author)
    review.review_decide(
        actor=author,
        task_id=sql_task.pk,
        outcome="request_changes",
        revision_number=1,
        summary="Plant the blockers first.",
    )
    sql_task.refresh_from_db()
    assert (sql_task.version, sql_task.revisions.count()) == (3, 1)
    client.force_login(author)
    pages = {
        "task page": client.get(reverse("task-detail", args=[sql_task.pk])),
        "workspace": client.get(reverse("workspace", args=[sql_task.pk])),
        "preview": client.get(reverse("workspace-preview", args=[sql_task.pk]), **HTMX),
    }
    for name, response in pages.items():
        # What people read: the text, not the form's hidden lock field.
        words = re.sub(r"<[^>]*>", " ", text(response).split("<main ")[-1]).lower()
        assert "revision 1" in words, name
        assert "version" not in words.replace("python version", ""), name
    saved = save(client, sql_task, form_data(sql_task), **HTMX)
    assert "Saved · revision 2" in text(saved)


# The red-team's list: a reviewer's htmx requests to these answered an AccessDenied traceback.
REFUSED_FRAGMENTS = [
    ("sql", "POST", "workspace-lint", {}),
    ("sql", "POST", "workspace-spec-diff", {"section": "question"}),
    ("sql", "GET", "workspace-blocker-form", {}),
    ("sql", "POST", "workspace-waive", {}),
    ("sql", "POST", "workspace-sql-format", {}),
    ("sql", "POST", "workspace-sql-golden", {}),
    ("swe", "POST", "workspace-repo-edit", {}),
    ("swe", "POST", "workspace-setup-patch-upload", {}),
]


@pytest.mark.parametrize(
    "domain, method, url_name, kwargs", REFUSED_FRAGMENTS, ids=[r[2] for r in REFUSED_FRAGMENTS]
)
def test_a_reviewers_htmx_request_to_the_workspace_is_a_403_fragment(
    client, request, reviewer, domain, method, url_name, kwargs
):
    """403 with a one-line fragment naming the reason (the workspace swaps 4xx fragments into
    the panel that asked), not a 500 and not a whole page inside the panel; nothing stored.
    The test client re-raises an exception no middleware handled, as the server would 500."""
    task = request.getfixturevalue(f"{domain}_task")
    before = (task.version, Revision.objects.count(), LintWaiver.objects.count())
    client.force_login(reviewer)
    url = reverse(url_name, kwargs={"task_id": task.pk, **kwargs})
    data = {
        "fingerprint": "x",
        "reason": "y",
        "env.gold_sql": "SELECT 1",
        "path": "a.py",
        "content": "x = 1\n",
        "spec.question": "How many?",
    }

    response = client.get(url, **HTMX) if method == "GET" else client.post(url, data, **HTMX)

    assert response.status_code == 403
    body = response.content.decode()
    assert body == (
        '<p class="error-report" role="alert">'
        "Only the task&#x27;s author or a project lead may change this task.</p>"
    )
    task.refresh_from_db()
    assert (task.version, Revision.objects.count(), LintWaiver.objects.count()) == before
