"""The review API end to end: real database, real services, one APIClient switching users."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from hilbench_annotate.models import Task
from hilbench_annotate.services import revision_create
from hilbench_annotate.vocabulary import Role
from review.models import (
    DEFAULT_REJECT_REASONS,
    Comment,
    Notification,
    ReviewAssignment,
    ReviewDecision,
    ReviewLayer,
)
from review.services import pipeline_ensure

from ..factories import (
    BlockerFactory,
    MembershipFactory,
    TaskFactory,
    TriggerQuestionFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

# Three blockers whose lint is clean (only warnings): distinct, well-formed trigger questions
# and descriptions that do not overlap. ``authoring.checks.draft_findings`` has no errors.
CLEAN_BLOCKERS = [
    (
        "clean_finish_status",
        "question",
        "underspecified_concepts",
        "The question asks for loans settled cleanly but never says which loan status means that.",
        "Loans settled cleanly have loan.status = 'A'.",
        [
            "Which loan status value marks a loan settled cleanly?",
            "How is a cleanly settled loan identified in the loan table?",
            "What definition of a clean settlement should the count use?",
        ],
    ),
    (
        "loan_scope_branch",
        "schema",
        "confusing_table_or_table_definition",
        "Loans can be reached through accounts of several branches; it is not said which "
        "branches count.",
        "Count loans of every branch; no branch filter applies.",
        [
            "Should the loan count be restricted to particular branches?",
            "Which branches' loans are in scope for the count?",
            "Do loans from all branches count toward the total?",
        ],
    ),
    (
        "granted_period",
        "question",
        "timeframe_ambiguity",
        "The question gives no period for when the loans were granted.",
        "Use every loan regardless of its granted_date; there is no period limit.",
        [
            "Is there a date range for when the loans were granted?",
            "Which granting period should the count cover?",
            "Should loans be limited to a particular year of granting?",
        ],
    ),
]
QUESTION = "How many loans were settled cleanly?"
# Held-out questions the judge matches: the judge-validation layer and the final sign-off
# need them settled (three per blocker, ten in all) and the judge's recall at the floor.
CLEAN_HELD_OUT = [
    (
        "clean_finish_status",
        "Which status code stands for a loan that was repaid without problems?",
    ),
    ("clean_finish_status", "What counts as a clean settlement of a loan here?"),
    ("clean_finish_status", "How do I know from the data that a loan was settled cleanly?"),
    ("loan_scope_branch", "Are loans of every branch included, or only some?"),
    ("loan_scope_branch", "Do I need to filter the loans by branch?"),
    ("loan_scope_branch", "Which branches should the loans come from?"),
    ("granted_period", "Over which time span were the loans granted?"),
    ("granted_period", "Is the count limited to loans granted in some years?"),
    ("granted_period", "Should I filter loans by their granted_date?"),
    (None, "What is the capital of France?"),
    (None, "Which Python version does this container run?"),
]


def clean_task(project, author, **fields) -> Task:
    """A draft SQL task that passes lint, with revision 1 (what reviewers judge)."""
    task = TaskFactory(
        project=project,
        author=author,
        blocked_spec={"question": QUESTION, "evidence": ""},
        **fields,
    )
    for i, (key, type_, subtype, description, resolution, questions) in enumerate(CLEAN_BLOCKERS):
        blocker = BlockerFactory(
            task=task,
            key=key,
            position=i,
            type=type_,
            subtype=subtype,
            description=description,
            resolution=resolution,
        )
        for j, text in enumerate(questions):
            TriggerQuestionFactory(blocker=blocker, position=j, text=text)
    Task.objects.filter(pk=task.pk).update(blocker_count=len(CLEAN_BLOCKERS))
    revision_create(task=task, actor=author, reason="created")
    return task


def _member(project, username, *roles):
    user = UserFactory(username=username)
    for role in roles:
        MembershipFactory(project=project, user=user, role=role)
    return user


READER_ROLES = (Role.AUTHOR, Role.REVIEWER, Role.AUDITOR, Role.LEAD)


@pytest.fixture
def author(project):
    """The task's author holds every role, so what stops them reviewing is independence."""
    return _member(project, "author", *READER_ROLES)


@pytest.fixture
def peer(project):
    """The peer reviewer (layer 2) also holds every role, for the same reason."""
    return _member(project, "peer", *READER_ROLES)


@pytest.fixture
def auditor2(project):
    return _member(project, "auditor2", Role.AUDITOR)


@pytest.fixture
def task(project, author):
    return clean_task(project, author, title="Loans settled cleanly")


@pytest.fixture
def layers(project) -> list[ReviewLayer]:
    return pipeline_ensure(project)


def place(task, layer: int) -> Task:
    """Put the task in review at ``layer`` directly (the walk test goes there by the API)."""
    Task.objects.filter(pk=task.pk).update(
        status="in_review", review_layer=layer, layer_entered_at=timezone.now()
    )
    task.refresh_from_db()
    return task


# --- calls, as one user at a time ------------------------------------------------------------


def as_user(api, user):
    api.force_authenticate(user)
    return api


def take(api, user, project, layer):
    return as_user(api, user).post(
        reverse("api-review-take-next"), {"project": project.pk, "layer": layer}, format="json"
    )


def answers(layer: ReviewLayer | dict, passed: bool = True) -> list[dict]:
    items = layer["checklist"] if isinstance(layer, dict) else layer.checklist
    return [{"item": item, "passed": passed, "note": "checked"} for item in items]


def run_structural_checks(task, *, judge: bool = True):
    """The structural checks and (``judge``) the judge's recall on the current revision,
    started by the task's author (who may change it)."""
    from validators.registry import groups_for
    from validators.services import validation_run_execute, validation_run_start

    checks = groups_for(task.domain) + (["judge_recall"] if judge else [])
    run = validation_run_start(task=task, actor=task.author, checks=checks)
    validation_run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == "passed", list(run.results.values_list("check_name", "message"))
    # …and on the pass-rate selection of model runs.
    from tests.evaluation.util import keep_by_pass_rate

    keep_by_pass_rate(task)


def decide(api, user, task, outcome, revision, **payload):
    payload = {"outcome": outcome, "revision": revision, **payload}
    return as_user(api, user).post(
        reverse("api-task-decisions", args=[task.pk]), payload, format="json"
    )


def assign(api, lead, task, username):
    return as_user(api, lead).post(
        reverse("api-task-assign", args=[task.pk]), {"reviewer": username}, format="json"
    )


def state(task) -> tuple[str, int | None]:
    task.refresh_from_db()
    return task.status, task.review_layer


def notifications(api, user, **params) -> list[dict]:
    response = as_user(api, user).get(reverse("api-notification-list"), params)
    assert response.status_code == 200, response.content
    return response.json()["results"]


# --- the whole pipeline -----------------------------------------------------------------------


def test_a_task_walks_all_six_layers_with_six_people_and_one_round_of_changes(
    api, project, task, author, peer, auditor, auditor2, reviewer, lead
):
    pipeline = as_user(api, author).get(reverse("api-pipeline", args=[project.pk])).json()
    layer = {row["position"]: row for row in pipeline["layers"]}
    assert [row["role"] for row in pipeline["layers"]] == [
        "author",
        "author",
        "auditor",
        "auditor",
        "reviewer",
        "lead",
    ]

    def refused(user, position, reason):
        """``user`` may not act at ``position``: not offered, decision and assignment refused."""
        assert take(api, user, project, position).status_code == 204
        response = decide(api, user, task, "approve", current, checklist=answers(layer[position]))
        assert response.status_code == 403, response.content
        assert reason in response.json()["detail"]
        response = assign(api, lead, task, user.username)
        assert response.status_code == 400, response.content
        assert reason in response.json()["detail"]
        assert state(task) == ("in_review", position)
        assert not task.assignments.filter(status="active").exists()

    def approve(user, position):
        response = take(api, user, project, position)
        assert response.status_code == 200, response.content
        assert (response.json()["task"], response.json()["layer"]) == (task.pk, position)
        response = decide(api, user, task, "approve", current, checklist=answers(layer[position]))
        assert response.status_code == 201, response.content

    authored = "Nobody reviews a task they authored."
    peer_acted = "You already acted on this task at layer 2"

    response = as_user(api, author).post(
        reverse("api-task-submit", args=[task.pk]), {"expected_version": 1}, format="json"
    )
    assert response.status_code == 200, response.content
    assert (response.json()["status"], response.json()["review_layer"]) == ("in_review", 1)
    current = 1

    # Layer 1 is the author's own check, without taking the task.
    response = decide(api, author, task, "approve", current, checklist=answers(layer[1]))
    assert response.status_code == 201, response.content
    assert state(task) == ("in_review", 2)

    refused(author, 2, authored)
    approve(peer, 2)
    assert state(task) == ("in_review", 3)

    refused(author, 3, authored)
    refused(peer, 3, peer_acted)
    response = take(api, auditor, project, 3)
    assert response.status_code == 200, response.content
    response = decide(
        api,
        auditor,
        task,
        "request_changes",
        current,
        summary="Name the status column in the first resolution.",
        blocker_comments={"clean_finish_status": "Say loan.status, not just status."},
    )
    assert response.status_code == 201, response.content
    assert state(task) == ("changes_requested", 3)
    assert [n["kind"] for n in notifications(api, author, unread=1)] == ["changes_requested"]

    # The author edits (a new revision) and resubmits: the task goes back to layer 3.
    task.refresh_from_db()
    response = as_user(api, author).patch(
        reverse("api-task-detail", args=[task.pk]),
        {
            "expected_version": task.version,
            "blocked_spec": {"question": "How many loans were settled cleanly in all?"},
        },
        format="json",
    )
    assert response.status_code == 200, response.content
    response = as_user(api, author).post(
        reverse("api-task-submit", args=[task.pk]),
        {"expected_version": response.json()["version"]},
        format="json",
    )
    assert response.status_code == 200, response.content
    assert state(task) == ("in_review", 3)
    assert [n["kind"] for n in notifications(api, auditor, unread=1)] == ["resubmitted"]

    response = take(api, auditor, project, 3)
    assert response.status_code == 200, response.content
    stale = decide(api, auditor, task, "approve", 1, checklist=answers(layer[3]))
    assert stale.status_code == 400
    assert "You judged revision 1, but the task is at revision 2" in stale.json()["detail"]
    current = 2
    response = decide(api, auditor, task, "approve", current, checklist=answers(layer[3]))
    assert response.status_code == 201, response.content
    assert state(task) == ("in_review", 4)

    refused(author, 4, authored)
    refused(peer, 4, peer_acted)
    refused(auditor, 4, "You already acted on this task at layer 3")
    approve(auditor2, 4)

    # The judge-validation layer is gated on settled held-out questions.
    from tests.judge.util import settle_held_out

    settle_held_out(task, CLEAN_HELD_OUT)
    refused(author, 5, authored)
    refused(peer, 5, peer_acted)
    approve(reviewer, 5)

    refused(author, 6, authored)
    refused(peer, 6, peer_acted)
    # Final sign-off is gated on the structural checks, the judge's recall and the pass-rate
    # selection.
    run_structural_checks(task)
    approve(lead, 6)
    assert state(task) == ("approved", None)

    history = as_user(api, reviewer).get(reverse("api-task-decisions", args=[task.pk]))
    assert history.status_code == 200
    assert [(d["layer"], d["reviewer"], d["outcome"], d["revision"]) for d in history.json()][
        ::-1
    ] == [
        (1, "author", "approve", 1),
        (2, "peer", "approve", 1),
        (3, "auditor", "request_changes", 1),
        (3, "auditor", "approve", 2),
        (4, "auditor2", "approve", 2),
        (5, "reviewer", "approve", 2),
        (6, "lead", "approve", 2),
    ]
    [changes] = [d for d in history.json() if d["outcome"] == "request_changes"]
    assert changes["layer_name"] == "Registry audit"
    assert changes["blocker_comments"] == {
        "clean_finish_status": "Say loan.status, not just status."
    }
    assert len({d["reviewer"] for d in history.json()}) == 6


# --- decisions --------------------------------------------------------------------------------


def test_approving_with_an_unanswered_checklist_item_is_400(api, task, author, layers):
    place(task, 1)
    checklist = answers(layers[0])

    response = decide(api, author, task, "approve", 1, checklist=checklist[:-1])

    assert response.status_code == 400
    assert "Answer every checklist item" in response.json()["detail"]
    assert layers[0].checklist[-1] in response.json()["detail"]
    # An item named but not answered (passed: null) is unanswered too.
    checklist[0]["passed"] = None
    response = decide(api, author, task, "approve", 1, checklist=checklist)
    assert response.status_code == 400
    assert layers[0].checklist[0] in response.json()["detail"]
    assert state(task) == ("in_review", 1)
    assert not ReviewDecision.objects.exists()


def test_approving_with_a_failed_checklist_item_is_400(api, task, author, layers):
    place(task, 1)

    response = decide(api, author, task, "approve", 1, checklist=answers(layers[0], passed=False))

    assert response.status_code == 400
    assert "request changes instead" in response.json()["detail"]
    assert state(task) == ("in_review", 1)


def test_approving_while_the_lint_gate_is_red_is_400(api, task, author, layers):
    place(task, 1)
    task.blockers.first().trigger_questions.all().delete()  # too few questions: a lint error
    revision_create(task=task, actor=author, reason="questions removed")  # the state judged

    response = decide(api, author, task, "approve", 2, checklist=answers(layers[0]))

    assert response.status_code == 400
    assert "Gates are not green: lint_clean" in response.json()["detail"]
    assert state(task) == ("in_review", 1)


def test_a_final_sign_off_below_the_judge_recall_floor_is_refused_with_the_reason(
    api, task, lead, layers
):
    from tests.judge.util import settle_held_out
    from validators.services import validation_run_inline

    # Ten settled questions, three per blocker, but the judge finds only some of them:
    # one blocker's questions are labelled as another's.
    mislabelled = [
        ("granted_period" if gold == "clean_finish_status" else gold, text)
        for gold, text in CLEAN_HELD_OUT
    ]
    settle_held_out(task, mislabelled)
    run_structural_checks(task, judge=False)
    judged = validation_run_inline(task=task, actor=lead, checks=["judge_recall"])
    assert judged.status == "failed"
    place(task, 6)
    take(api, lead, task.project, 6)
    response = decide(api, lead, task, "approve", 1, checklist=answers(layers[5]))
    assert response.status_code == 400
    detail = response.json()["detail"]
    assert "Gates are not green: judge_recall" in detail and "the floor is 85%" in detail
    assert state(task) == ("in_review", 6)

    # Labelled right, the same questions pass; the sign-off goes through.
    task.validation_questions.all().delete()
    settle_held_out(task, CLEAN_HELD_OUT)
    assert validation_run_inline(task=task, actor=lead, checks=["judge_recall"]).status == "passed"
    response = decide(api, lead, task, "approve", 1, checklist=answers(layers[5]))
    assert response.status_code == 201, response.content
    assert state(task) == ("approved", None)


def test_reject_needs_a_reason_from_the_projects_list(api, project, task, author, auditor):
    place(task, 3)
    assert take(api, auditor, project, 3).status_code == 200

    for reason in ("", "I just do not like it"):
        response = decide(api, auditor, task, "reject", 1, reject_reason=reason)
        assert response.status_code == 400, reason
        assert "Rejecting needs a reason from the list" in response.json()["detail"]
        assert state(task) == ("in_review", 3)

    response = decide(api, auditor, task, "reject", 1, reject_reason=DEFAULT_REJECT_REASONS[4])

    assert response.status_code == 201, response.content
    assert response.json()["reject_reason"] == "Duplicate of another task"
    assert state(task) == ("rejected", None)
    [note] = notifications(api, author)
    assert note["kind"] == "rejected"
    assert "Duplicate of another task" in note["text"]


def test_request_changes_must_say_what_to_change(api, project, task, auditor):
    place(task, 3)
    take(api, auditor, project, 3)

    response = decide(api, auditor, task, "request_changes", 1, summary="  ")

    assert response.status_code == 400
    assert "Say what to change" in response.json()["detail"]
    assert state(task) == ("in_review", 3)


def test_deciding_without_holding_the_task_is_400(api, project, task, auditor, auditor2):
    place(task, 3)
    take(api, auditor, project, 3)

    response = decide(api, auditor2, task, "reject", 1, reject_reason=DEFAULT_REJECT_REASONS[0])

    assert response.status_code == 400
    assert "Take the task first" in response.json()["detail"]
    assert state(task) == ("in_review", 3)


def test_a_decision_with_a_malformed_body_is_400(api, project, task, auditor):
    place(task, 3)

    response = decide(api, auditor, task, "publish", 1)

    assert response.status_code == 400
    assert "outcome" in response.json()


def test_decisions_are_readable_by_members_and_invisible_to_outsiders(
    api, task, reviewer, outsider, harness
):
    assert as_user(api, reviewer).get(reverse("api-task-decisions", args=[task.pk])).json() == []
    for stranger in (outsider, harness):
        url = reverse("api-task-decisions", args=[task.pk])
        assert as_user(api, stranger).get(url).status_code == 404
        response = decide(api, stranger, task, "approve", 1)
        assert response.status_code == 404


# --- queue, take-next, assign, release --------------------------------------------------------


def test_take_next_gives_the_oldest_eligible_task_and_keeps_giving_it(
    api, project, author, auditor
):
    older = place(clean_task(project, author), 3)
    newer = place(clean_task(project, author), 3)
    Task.objects.filter(pk=older.pk).update(layer_entered_at=timezone.now().replace(year=2020))

    response = take(api, auditor, project, 3)

    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["task"], body["layer"], body["reviewer"], body["status"]) == (
        older.pk,
        3,
        "auditor",
        "active",
    )
    assert parse_datetime(body["expires_at"]) > timezone.now() + timedelta(minutes=59)
    assert take(api, auditor, project, 3).json()["id"] == body["id"]
    assert ReviewAssignment.objects.get(pk=body["id"]).task_id == older.pk
    assert newer.assignments.count() == 0


def test_take_next_on_an_empty_queue_is_204(api, project, auditor):
    response = take(api, auditor, project, 3)

    assert response.status_code == 204
    assert not response.content


def test_take_next_refuses_a_layer_of_another_role_unknown_layers_and_projects(
    api, project, task, reviewer, outsider
):
    place(task, 3)

    response = take(api, reviewer, project, 3)
    assert response.status_code == 403
    assert "needs the auditor role" in response.json()["detail"]
    response = take(api, reviewer, project, 7)
    assert response.status_code == 400
    assert "has no layer 7" in response.json()["detail"]
    assert take(api, outsider, project, 3).status_code == 404
    assert not ReviewAssignment.objects.exists()


def test_queue_counts_eligible_tasks_and_lists_my_assignments_per_layer(
    api, project, author, peer, auditor
):
    at_three = [place(clean_task(project, author), 3) for _ in range(3)]
    place(clean_task(project, peer), 4)
    held = take(api, auditor, project, 3).json()

    rows = as_user(api, auditor).get(reverse("api-review-queue")).json()

    assert [(r["layer"], r["role"], r["eligible"]) for r in rows] == [
        (3, "auditor", 2),
        (4, "auditor", 1),
    ]
    assert [a["task"] for a in rows[0]["assignments"]] == [held["task"]]
    assert held["task"] in {t.pk for t in at_three}
    assert rows[1]["assignments"] == []
    # The author may not take their own tasks: nothing to do at layers 3 and 4 but the peer's.
    mine = as_user(api, author).get(reverse("api-review-queue"), {"project": project.pk})
    assert {r["layer"]: r["eligible"] for r in mine.json()} == {1: 0, 2: 0, 3: 0, 4: 1, 5: 0, 6: 0}
    only = as_user(api, author).get(reverse("api-review-queue"), {"layer": 4}).json()
    assert [(r["layer"], r["eligible"]) for r in only] == [(4, 1)]
    assert as_user(api, author).get(reverse("api-review-queue"), {"layer": "x"}).status_code == 400


def test_a_lead_assigns_a_member_who_is_notified(api, project, task, lead, auditor, auditor2):
    place(task, 3)
    taken = take(api, auditor, project, 3).json()

    response = assign(api, lead, task, "auditor2")

    assert response.status_code == 201, response.content
    assert (response.json()["reviewer"], response.json()["assigned_by"]) == ("auditor2", "lead")
    assert ReviewAssignment.objects.get(pk=taken["id"]).status == "released"
    assert [n["kind"] for n in notifications(api, auditor2)] == ["assigned"]
    assert decide(api, auditor2, task, "request_changes", 1, summary="Fix it").status_code == 201


def test_assigning_is_for_leads_and_project_members_only(
    api, project, task, lead, auditor, outsider
):
    place(task, 3)

    response = assign(api, auditor, task, "auditor")
    assert response.status_code == 403
    assert "lead" in response.json()["detail"]
    response = assign(api, lead, task, "outsider")
    assert response.status_code == 400
    assert "outsider is not a member" in str(response.json())
    response = assign(api, lead, task, "nobody")
    assert response.status_code == 400
    assert not ReviewAssignment.objects.exists()


def test_the_assign_page_and_api_give_the_same_answer(
    api, client, project, task, lead, auditor, outsider
):
    """One service behind both: a non-member and an unknown name are refused with the same
    message on the page (a message, no 404) and in the API (400), a non-lead with a 403."""
    from django.contrib.messages import get_messages

    place(task, 3)
    client.force_login(lead)
    for name in ("outsider", "nobody"):
        response = assign(api, lead, task, name)
        expected = f"{name} is not a member of {project.name}."
        assert (response.status_code, response.json()) == (400, {"detail": expected})
        page = client.post(reverse("review-assign", args=[task.pk]), {"reviewer": name})
        assert page.status_code == 302
        assert [str(m) for m in get_messages(page.wsgi_request)][-1] == expected
    client.force_login(auditor)
    page = client.post(reverse("review-assign", args=[task.pk]), {"reviewer": "auditor"})
    assert page.status_code == 403 == assign(api, auditor, task, "auditor").status_code
    assert not ReviewAssignment.objects.exists()


def test_release_gives_the_task_back_to_the_queue(api, project, task, auditor, auditor2, lead):
    place(task, 3)
    taken = take(api, auditor, project, 3).json()
    url = reverse("api-assignment-release", args=[taken["id"]])
    assert take(api, auditor2, project, 3).status_code == 204

    response = as_user(api, auditor2).post(url)
    assert response.status_code == 403  # not their assignment, and not a lead
    response = as_user(api, auditor).post(url)

    assert response.status_code == 200, response.content
    assert response.json()["status"] == "released"
    again = take(api, auditor2, project, 3)
    assert again.status_code == 200
    assert again.json()["task"] == task.pk
    response = as_user(api, lead).post(reverse("api-assignment-release", args=[again.json()["id"]]))
    assert response.status_code == 200
    assert ReviewAssignment.objects.filter(status="active").count() == 0


def test_release_of_an_invisible_assignment_is_404(api, project, task, auditor, outsider):
    place(task, 3)
    taken = take(api, auditor, project, 3).json()

    response = as_user(api, outsider).post(reverse("api-assignment-release", args=[taken["id"]]))

    assert response.status_code == 404
    assert (
        as_user(api, auditor).post(reverse("api-assignment-release", args=[999])).status_code == 404
    )


# --- submit -----------------------------------------------------------------------------------


def test_submit_is_for_the_tasks_editor_with_the_current_version(
    api, task, auditor, outsider, author
):
    url = reverse("api-task-submit", args=[task.pk])

    assert as_user(api, auditor).post(url, {"expected_version": 1}).status_code == 403
    assert as_user(api, outsider).post(url, {"expected_version": 1}).status_code == 404
    stale = as_user(api, author).post(url, {"expected_version": 7}, format="json")
    assert stale.status_code == 409
    assert stale.json()["current_version"] == 1
    assert state(task) == ("draft", None)


def test_submit_is_blocked_by_lint_errors(api, project, author):
    task = TaskFactory(project=project, author=author)  # no blockers at all

    response = as_user(api, author).post(
        reverse("api-task-submit", args=[task.pk]), {"expected_version": 1}, format="json"
    )

    assert response.status_code == 400
    assert "Submission is blocked by" in response.json()["detail"]
    assert state(task) == ("draft", None)


def test_submitting_a_task_already_in_review_is_400(api, task, author):
    place(task, 2)
    task.refresh_from_db()

    response = as_user(api, author).post(
        reverse("api-task-submit", args=[task.pk]), {"expected_version": task.version}
    )

    assert response.status_code == 400
    assert "cannot submit a task that is in_review" in response.json()["detail"]


# --- pipeline ---------------------------------------------------------------------------------


def test_members_read_the_default_pipeline(api, project, reviewer, outsider):
    response = as_user(api, reviewer).get(reverse("api-pipeline", args=[project.pk]))

    assert response.status_code == 200
    body = response.json()
    assert [layer["name"] for layer in body["layers"]] == [
        "Author self-check",
        "Peer review",
        "Registry audit",
        "Environment audit",
        "Judge-validation labelling",
        "Final sign-off",
    ]
    assert body["layers"][0]["self_check"] is True
    assert body["layers"][2]["gates"] == ["lint_clean"]
    assert body["lock_minutes"] == 60
    assert body["reject_reasons"] == DEFAULT_REJECT_REASONS
    url = reverse("api-pipeline", args=[project.pk])
    assert as_user(api, outsider).get(url).status_code == 404


PIPELINE = {
    "layers": [
        {"name": "Self-check", "role": "author", "self_check": True, "checklist": ["Lint read"]},
        {"name": "Audit", "role": "auditor", "checklist": ["Exact", " "], "gates": ["lint_clean"]},
    ],
    "lock_minutes": 15,
    "reject_reasons": ["Broken", ""],
}


def test_a_lead_replaces_the_pipeline(api, project, lead):
    response = as_user(api, lead).put(
        reverse("api-pipeline", args=[project.pk]), PIPELINE, format="json"
    )

    assert response.status_code == 200, response.content
    body = response.json()
    assert [(x["position"], x["name"], x["role"], x["self_check"]) for x in body["layers"]] == [
        (1, "Self-check", "author", True),
        (2, "Audit", "auditor", False),
    ]
    assert body["layers"][1]["checklist"] == ["Exact"]
    assert (body["lock_minutes"], body["reject_reasons"]) == (15, ["Broken"])
    assert ReviewLayer.objects.filter(project=project).count() == 2


def test_only_leads_replace_the_pipeline_and_bad_pipelines_are_400(
    api, project, reviewer, auditor, lead
):
    url = reverse("api-pipeline", args=[project.pk])
    for user in (reviewer, auditor):
        response = as_user(api, user).put(url, PIPELINE, format="json")
        assert response.status_code == 403, user
        assert "lead" in response.json()["detail"]

    empty = as_user(api, lead).put(url, {**PIPELINE, "layers": []}, format="json")
    assert empty.status_code == 400
    assert "between 1 and 10 layers" in empty.json()["detail"]
    no_reason = as_user(api, lead).put(url, {**PIPELINE, "reject_reasons": [" "]}, format="json")
    assert no_reason.status_code == 400
    harness_layer = {**PIPELINE, "layers": [{"name": "Bot", "role": "harness"}]}
    response = as_user(api, lead).put(url, harness_layer, format="json")
    assert response.status_code == 400
    assert "role must be author, reviewer, auditor or lead" in response.json()["detail"]
    assert len(as_user(api, lead).get(url).json()["layers"]) == 6


def test_the_pipeline_cannot_lose_a_layer_a_task_waits_at(api, project, task, lead):
    place(task, 4)

    response = as_user(api, lead).put(
        reverse("api-pipeline", args=[project.pk]), PIPELINE, format="json"
    )

    assert response.status_code == 400
    assert "1 task(s) wait at a layer beyond the new last one" in response.json()["detail"]


# --- threads and notifications --------------------------------------------------------------


def test_comments_replies_resolve_and_notifications(api, task, author, auditor, reviewer):
    url = reverse("api-task-comments", args=[task.pk])

    first = as_user(api, auditor).post(
        url, {"body": "Is 'A' the only clean status?", "blocker_key": "clean_finish_status"}
    )
    assert first.status_code == 201, first.content
    root = first.json()
    assert (root["author"], root["blocker_key"], root["parent"]) == (
        "auditor",
        "clean_finish_status",
        None,
    )
    reply = as_user(api, author).post(
        url, {"body": "Yes, only 'A'.", "parent": root["id"]}, format="json"
    )
    assert reply.status_code == 201, reply.content
    # A reply to a reply joins the same thread, on the same blocker.
    nested = as_user(api, reviewer).post(
        url, {"body": "Agreed.", "parent": reply.json()["id"]}, format="json"
    )
    assert nested.json()["parent"] == root["id"]
    assert nested.json()["blocker_key"] == "clean_finish_status"

    assert [n["kind"] for n in notifications(api, auditor)] == ["reply", "reply"]
    assert [n["kind"] for n in notifications(api, author)] == ["reply"]
    assert notifications(api, reviewer) == []

    thread = as_user(api, reviewer).get(url).json()
    assert [(c["author"], c["parent"]) for c in thread] == [
        ("auditor", None),
        ("author", root["id"]),
        ("reviewer", root["id"]),
    ]

    resolve = reverse("api-comment-resolve", args=[nested.json()["id"]])
    response = as_user(api, author).post(resolve, {"resolved": True}, format="json")
    assert response.status_code == 200, response.content
    assert (response.json()["id"], response.json()["resolved"]) == (root["id"], True)
    assert Comment.objects.get(pk=root["id"]).resolved is True
    response = as_user(api, reviewer).post(resolve, {"resolved": False}, format="json")
    assert response.json()["resolved"] is False
    assert Comment.objects.get(pk=root["id"]).resolved is False


def test_bad_comments_are_400_and_strangers_get_404(api, project, task, author, auditor, outsider):
    url = reverse("api-task-comments", args=[task.pk])
    other = clean_task(project, author)
    elsewhere = Comment.objects.create(task=other, author=author, body="On another task")

    assert as_user(api, auditor).post(url, {"body": "  "}).status_code == 400
    response = as_user(api, auditor).post(url, {"body": "Hm", "blocker_key": "nope"})
    assert response.status_code == 400
    assert "no blocker 'nope'" in response.json()["detail"]
    response = as_user(api, auditor).post(url, {"body": "Re", "parent": elsewhere.pk})
    assert response.status_code == 400
    assert "belongs to another task" in response.json()["detail"]
    assert as_user(api, auditor).post(url, {"body": "Re", "parent": 999}).status_code == 400

    assert as_user(api, outsider).get(url).status_code == 404
    assert as_user(api, outsider).post(url, {"body": "Hello"}).status_code == 404
    resolve = reverse("api-comment-resolve", args=[elsewhere.pk])
    assert as_user(api, outsider).post(resolve, {"resolved": True}).status_code == 404
    assert Comment.objects.count() == 1


def test_unread_notifications_and_marking_them_read(api, task, author, auditor):
    first = Notification.objects.create(user=author, task=task, kind="assigned", text="one")
    second = Notification.objects.create(user=author, task=task, kind="reply", text="two")
    theirs = Notification.objects.create(user=auditor, task=task, kind="reply", text="three")
    url = reverse("api-notifications-read")

    response = as_user(api, author).post(url, {"ids": [first.pk, theirs.pk]}, format="json")

    assert response.json() == {"marked": 1}
    assert [n["id"] for n in notifications(api, author, unread=1)] == [second.pk]
    assert [n["id"] for n in notifications(api, author)] == [second.pk, first.pk]
    assert as_user(api, author).post(url, {}, format="json").json() == {"marked": 1}
    assert notifications(api, author, unread=1) == []
    assert [n["id"] for n in notifications(api, auditor, unread=1)] == [theirs.pk]


# --- authentication ---------------------------------------------------------------------------

ENDPOINTS = [
    ("get", "api-pipeline", 1),
    ("put", "api-pipeline", 1),
    ("post", "api-task-submit", 1),
    ("get", "api-review-queue", None),
    ("post", "api-review-take-next", None),
    ("post", "api-task-assign", 1),
    ("post", "api-assignment-release", 1),
    ("get", "api-task-decisions", 1),
    ("post", "api-task-decisions", 1),
    ("get", "api-task-comments", 1),
    ("post", "api-task-comments", 1),
    ("post", "api-comment-resolve", 1),
    ("get", "api-notification-list", None),
    ("post", "api-notifications-read", None),
]


@pytest.mark.parametrize(("method", "name", "arg"), ENDPOINTS)
def test_every_review_endpoint_needs_authentication(api, method, name, arg):
    url = reverse(name, args=[arg] if arg else [])

    response = getattr(api, method)(url, {}, format="json")

    assert response.status_code in (401, 403)
    assert "credentials were not provided" in response.json()["detail"]


# --- bugs found in the services (these tests fail until the services are fixed) -------------


def test_shrinking_the_pipeline_does_not_strand_a_task_waiting_for_changes(
    api, project, task, author, auditor, lead
):
    """BUG (review/services.py, pipeline_update): only tasks *in review* beyond the new last
    layer stop a shrink; a task sent back for changes keeps ``review_layer`` and returns there
    on resubmission, where ``task_enter_review`` fails on the missing layer — for ever."""
    place(task, 3)
    take(api, auditor, project, 3)
    response = decide(api, auditor, task, "request_changes", 1, summary="Name the column.")
    assert response.status_code == 201, response.content

    shrink = as_user(api, lead).put(
        reverse("api-pipeline", args=[project.pk]), PIPELINE, format="json"
    )
    task.refresh_from_db()
    resubmit = as_user(api, author).post(
        reverse("api-task-submit", args=[task.pk]),
        {"expected_version": task.version},
        format="json",
    )

    assert shrink.status_code == 400 or resubmit.status_code == 200, (
        f"pipeline shrink: {shrink.status_code}; resubmission: {resubmit.json()}"
    )


@pytest.mark.parametrize("status", ["in_review", "approved"])
def test_a_task_under_review_or_approved_cannot_be_edited_through_the_api(
    api, task, author, status
):
    """BUG (hilbench_annotate/services/tasks.py, task_update; likewise blocker_* and
    trigger_question_* in services/blockers.py): unlike ``authoring.services.workspace_save``
    they never check ``workflow.EDITABLE``, so ``PATCH /api/tasks/{id}/`` changes a task
    that reviewers are judging, or one that was already approved, without any review."""
    Task.objects.filter(pk=task.pk).update(status=status, review_layer=None)
    revisions = task.revisions.count()

    response = as_user(api, author).patch(
        reverse("api-task-detail", args=[task.pk]),
        {"expected_version": 1, "blocked_spec": {"question": "Something else entirely?"}},
        format="json",
    )

    assert response.status_code == 400, f"{status} task edited: {response.status_code}"
    assert task.revisions.count() == revisions


def test_releasing_a_decided_assignment_is_refused(api, project, task, auditor):
    """BUG (review/services.py, review_release): it never checks the assignment is active, so
    "releasing" one that was decided answers 200 and logs a ``review_released`` event for a
    release that did not happen."""
    place(task, 3)
    taken = take(api, auditor, project, 3).json()
    decide(api, auditor, task, "request_changes", 1, summary="Name the column.")

    response = as_user(api, auditor).post(reverse("api-assignment-release", args=[taken["id"]]))

    assert response.status_code == 400, response.json()
    assert not task.events.filter(kind="review_released").exists()
