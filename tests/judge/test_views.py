"""The judge validation pages: labelling, candidates, measuring, accepting, the report."""

import pytest
from django.urls import include, path, reverse

from exchange.management.commands.seed_demo import DEMO_BLOCKERS
from hilbench_annotate.models import Task
from judge import views
from judge.embedded import EmbeddedJudge
from judge.labels import label_add
from judge.models import QuestionLabel, ValidationQuestion
from judge.validation import NEGATIVES, question_add

from ..factories import TaskFactory
from .test_recall_loop import FRESH
from .util import settle_held_out

urlpatterns = [path("", include("hilbench_annotate.urls")), path("", include("judge.urls"))]

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.judge.test_views")]

TROUBLED, SERVICING, YEAR = (b["key"] for b in DEMO_BLOCKERS)


@pytest.fixture(scope="module", autouse=True)
def _model_loaded():
    """Load the model once; the views then make judges that share it."""
    EmbeddedJudge()


@pytest.fixture(autouse=True)
def _judge(settings):
    settings.JUDGE_BACKEND = "embedded"


def _messages(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def _as(client, user):
    client.force_login(user)
    return client


def test_two_labellers_independently_then_the_third_adjudicates(
    client, task, author, reviewer, auditor, lead
):
    page = reverse("judge-questions", args=[task.pk])
    response = _as(client, author).post(
        reverse("judge-question-add", args=[task.pk]),
        {"text": "Which loans are the troubled ones here?", "style": "task_words"},
        follow=True,
    )
    question = ValidationQuestion.objects.get(task=task)
    assert question.split == "held_out" and question.source == "author"
    assert question.style == "task_words"
    assert "two labels by people other than you" in " ".join(_messages(response))
    label_url = reverse("judge-label", args=[task.pk, question.pk])

    # The author cannot label their own task's questions.
    response = client.post(label_url, {"blocker_key": TROUBLED}, follow=True)
    assert any("author does not label" in m for m in _messages(response))
    assert not question.labels.exists()

    # The first labeller picks a blocker.
    _as(client, reviewer).post(label_url, {"blocker_key": TROUBLED})
    seen_by_other = f"reviewer: <code>{TROUBLED}</code>"
    assert seen_by_other in client.get(page).content.decode()  # their own label, once given

    # The second labeller does not see it before labelling.
    response = _as(client, auditor).get(page)
    html = response.content.decode()
    (row,) = response.context["held_out"]
    assert row["state"] == "single" and row["labels"] == [] and row["action"] == "label"
    assert seen_by_other not in html and "1 hidden until you label" in html
    # …and disagrees: "none (irrelevant)".
    client.post(label_url, {"blocker_key": views.NONE_VALUE})
    html = client.get(page).content.decode()
    assert seen_by_other in html and "auditor: none" in html

    # The third person sees the dispute and settles it.
    response = _as(client, lead).get(page)
    (row,) = response.context["held_out"]
    assert row["state"] == "disputed" and row["action"] == "adjudicate"
    assert "Adjudicate" in response.content.decode()
    response = client.post(label_url, {"blocker_key": TROUBLED}, follow=True)
    assert any(m.startswith("Adjudicated") for m in _messages(response))
    (row,) = response.context["held_out"]
    assert (row["state"], row["gold"]) == ("adjudicated", TROUBLED)
    assert question.labels.get(labeller=lead).role == QuestionLabel.Role.ADJUDICATOR

    # Settled: nobody labels it further; the labellers had no adjudicate form.
    response = _as(client, reviewer).post(label_url, {"blocker_key": YEAR}, follow=True)
    assert any("already labelled" in m for m in _messages(response))


def test_a_labeller_does_not_see_the_other_label_before_labelling(
    client, task, author, reviewer, auditor
):
    question = question_add(task=task, actor=author, text="Which status marks a troubled loan?")
    label_add(question=question, labeller=reviewer, blocker_key=SERVICING)
    html = _as(client, auditor).get(reverse("judge-questions", args=[task.pk])).content.decode()
    # The reviewer's (odd) choice, as a label, appears nowhere on the auditor's page.
    assert f"reviewer: <code>{SERVICING}</code>" not in html
    assert "reviewer:" not in html
    # The author (who never labels) may see it.
    html = _as(client, author).get(reverse("judge-questions", args=[task.pk])).content.decode()
    assert f"reviewer: <code>{SERVICING}</code>" in html


def test_generate_without_an_endpoint_adds_only_negatives_and_says_why(
    client, task, author, reviewer, settings
):
    settings.JUDGE_LLM_BASE_URL = ""
    url = reverse("judge-generate", args=[task.pk])
    response = _as(client, author).post(url, follow=True)
    generated = ValidationQuestion.objects.filter(task=task)
    assert set(generated.values_list("text", flat=True)) == set(NEGATIVES)
    assert set(generated.values_list("source", flat=True)) == {"template"}
    shown = " ".join(_messages(response))
    assert "No LLM endpoint is configured" in shown and "Added 6 candidate questions" in shown
    # Deterministic: a second run adds nothing.
    client.post(url)
    assert generated.count() == len(NEGATIVES)


def test_reviewers_add_questions_during_review_and_copies_are_refused(client, task, reviewer):
    Task.objects.filter(pk=task.pk).update(status="in_review")
    add = reverse("judge-question-add", args=[task.pk])
    # The writer chooses the question's style.
    response = _as(client, reviewer).post(
        add, {"text": "Which contracts are the bad ones?"}, follow=True
    )
    assert any("Choose the question's style" in m for m in _messages(response))
    assert not ValidationQuestion.objects.filter(task=task).exists()
    response = client.post(add, {"text": "Which contracts are the bad ones?", "style": "terse"})
    assert response.status_code == 302
    question = ValidationQuestion.objects.get(task=task)
    assert question.source == "reviewer"
    trigger = DEMO_BLOCKERS[0]["trigger_questions"][0]
    response = client.post(
        add, {"text": f"Could you clarify: {trigger}", "style": "terse"}, follow=True
    )
    assert any("Too close to the trigger question" in m for m in _messages(response))
    assert ValidationQuestion.objects.filter(task=task).count() == 1


def test_labelling_with_htmx_swaps_the_row_and_the_progress_without_a_reload(
    client, task, author, reviewer
):
    question = question_add(task=task, actor=author, text="Which contracts are the bad ones?")
    url = reverse("judge-label", args=[task.pk, question.pk])
    response = _as(client, reviewer).post(url, {"blocker_key": TROUBLED}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    html = response.content.decode()
    assert "<html" not in html
    assert html.lstrip().startswith('<p id="label-notice"') and "Labelled:" in html
    assert f'<tr id="q-{question.pk}" hx-swap-oob="true"' in html
    assert 'id="label-progress"' in html and 'hx-swap-oob="true"' in html
    assert "data-to-label" not in html  # labelled: no longer awaiting the reviewer
    # A refusal comes back the same way, as a notice.
    again = client.post(url, {"blocker_key": TROUBLED}, HTTP_HX_REQUEST="true")
    assert "already labelled" in again.content.decode()


def test_adding_a_question_with_htmx_appends_its_row(client, task, reviewer):
    add = reverse("judge-question-add", args=[task.pk])
    response = _as(client, reviewer).post(
        add,
        {"text": "Which contracts are the bad ones?", "style": "paraphrase"},
        HTTP_HX_REQUEST="true",
    )
    html = response.content.decode()
    question = ValidationQuestion.objects.get(task=task)
    # The answer goes into the form's status line (the form stays: the next question may be
    # typed already), with the row, the count and the progress swapped out of band.
    assert 'id="add-question"' not in html and 'data-queued="added"' in html
    assert "Added: “Which contracts are the bad ones?”" in html
    assert 'hx-swap-oob="beforeend:#held-out-rows"' in html and f'id="q-{question.pk}"' in html
    assert '<span id="held-out-count" hx-swap-oob="true">1</span>' in html
    refused = client.post(
        add, {"text": "short", "style": "terse"}, HTTP_HX_REQUEST="true"
    ).content.decode()
    assert 'data-queued="refused"' in refused and "“short” was not added" in refused
    assert "at least a short sentence" in refused and "held-out-rows" not in refused


def test_measure_then_accept_suggestions_retires_them(client, labelled, author, reviewer):
    task = labelled
    measure = reverse("judge-measure", args=[task.pk])
    response = _as(client, reviewer).post(measure)
    report = response.context["measured"]
    assert report.recall < 0.80 and report.precision == 1.0
    html = response.content.decode()
    assert f"{round(report.recall * 100)}%" in html and "below the floor" in html
    assert "Suggested trigger questions" in html
    assert "Accept selected" not in html  # a reviewer may not accept

    response = _as(client, author).post(measure)
    suggestions = {s["text"]: s for s in response.context["suggestions"]}
    assert len(suggestions) == len(report.misses) >= 2
    assert 'name="accept"' in response.content.decode()
    chosen = list(suggestions.values())[:2]
    accept = reverse("judge-accept", args=[task.pk])
    data = {"accept": [str(s["question"]) for s in chosen]}
    data.update({f"text-{s['question']}": s["text"] for s in suggestions.values()})

    # Not an editor: refused.
    assert _as(client, reviewer).post(accept, data).status_code == 403
    # Not editable (in review): the domain error is shown and nothing changes.
    Task.objects.filter(pk=task.pk).update(status="in_review")
    response = _as(client, author).post(accept, data, follow=True)
    assert any("can be edited only" in m for m in _messages(response))
    assert not task.validation_questions.filter(split="retired").exists()
    Task.objects.filter(pk=task.pk).update(status="draft")

    response = client.post(accept, data, follow=True)
    assert any(m.startswith("Added 2 trigger questions") for m in _messages(response))
    retired = set(task.validation_questions.filter(split="retired").values_list("text", flat=True))
    assert retired == {s["text"] for s in chosen}
    assert len(response.context["retired"]) == 2

    # The retired questions still count as misses, and the page says why, until fresh
    # questions by others replace them.
    response = client.post(measure)
    measured = response.context["measured"]
    assert not measured.passes and measured.recall <= report.recall
    html = response.content.decode()
    assert "2 held-out questions were retired or copied into the registry" in html
    settle_held_out(
        task,
        [(s["blocker"], FRESH[s["blocker"]][n]) for n, s in enumerate(chosen)],
    )
    assert not client.post(measure).context["measured"].compromised


def test_measure_with_htmx_swaps_only_its_card_with_the_busy_indicator(
    client, labelled, author, reviewer, project
):
    task = labelled
    page = _as(client, reviewer).get(reverse("judge-questions", args=[task.pk])).content.decode()
    # The button is disabled and the indicator shown from the click (htmx), until the card
    # comes back; without JavaScript the same form posts and the page reloads.
    assert 'hx-indicator="#measuring"' in page and 'hx-disabled-elt="find button"' in page
    assert 'id="measuring" class="htmx-indicator' in page

    response = client.post(reverse("judge-measure", args=[task.pk]), HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200 and "<html" not in html
    assert html.lstrip().startswith('<section class="card" id="measure"')
    assert 'id="measured"' in html and "below the floor" in html
    assert "Labelling progress" not in html  # the rest of the page is not sent again

    untouched = TaskFactory(project=project, author=author)
    refused = client.post(reverse("judge-measure", args=[untouched.pk]), HTTP_HX_REQUEST="true")
    text = refused.content.decode()
    assert 'role="alert"' in text and "no saved revision to measure" in text
    assert 'id="measured"' not in text


def test_report_shows_per_domain_numbers_and_kappa(client, labelled, reviewer):
    from judge.services import get_judge
    from judge.validation import judge_recall

    response = _as(client, reviewer).get(reverse("judge-report", args=[labelled.project_id]))
    assert response.status_code == 200
    html = response.content.decode()
    report = response.context["report"]
    task_report = judge_recall(task=labelled, judge=get_judge(project=labelled.project))
    assert report.overall.recall == pytest.approx(task_report.recall)
    assert report.overall.precision == 1.0
    assert report.by_domain["Text-to-SQL"].recall == pytest.approx(task_report.recall)
    assert "Domain: Text-to-SQL" in html and "Blocker type: question" in html
    # The schema blocker's questions are all matched; the misses are question-type ones.
    assert report.by_type["schema"].recall == pytest.approx(
        task_report.per_blocker[SERVICING]["correct"]
        / task_report.per_blocker[SERVICING]["held_out"]
    )
    assert report.by_type["question"].recall < 1.0
    assert sum(b["tasks"] for b in report.histogram) == 1
    (pair,) = report.agreement
    assert pair["labellers"] == ("reviewer", "auditor")
    assert "reviewer &amp; auditor" in html and f"{pair['kappa']:.2f}" in html
    assert "97%" in html and "91%" in html and "<svg" in html


def test_outsiders_get_404_and_anonymous_users_log_in(client, task, outsider):
    urls = [
        reverse("judge-questions", args=[task.pk]),
        reverse("judge-report", args=[task.project_id]),
    ]
    for url in urls:
        response = client.get(url)
        assert response.status_code == 302 and "/login/" in response["Location"]
    _as(client, outsider)
    for url in urls:
        assert client.get(url).status_code == 404
    assert client.post(reverse("judge-measure", args=[task.pk])).status_code == 404
    assert client.post(reverse("judge-generate", args=[task.pk])).status_code == 404


def test_a_labeller_changes_and_withdraws_their_label_with_htmx(
    client, task, author, reviewer, auditor
):
    """Issue 30, item 3: the row of one's own unsettled label keeps its buttons; a change
    and a withdrawal swap the row in place, and a stale or doubled one is a notice."""
    question = question_add(task=task, actor=author, text="Which contracts are the bad ones?")
    label_add(question=question, labeller=auditor, blocker_key=TROUBLED)
    label_add(question=question, labeller=reviewer, blocker_key=YEAR)
    page = reverse("judge-questions", args=[task.pk])
    change = reverse("judge-label-change", args=[task.pk, question.pk])
    withdraw = reverse("judge-label-withdraw", args=[task.pk, question.pk])
    html = _as(client, reviewer).get(page).content.decode()
    assert f'action="{change}"' in html and f'action="{withdraw}"' in html
    assert 'aria-pressed="true" data-key="3"' in html  # YEAR, the third blocker, is theirs
    assert "Backspace" in html

    response = client.post(change, {"blocker_key": TROUBLED}, HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200 and "<html" not in html
    assert f"is now {TROUBLED}" in html and f'<tr id="q-{question.pk}" hx-swap-oob="true"' in html
    assert "agreed" in html and f'action="{change}"' not in html  # settled: final
    # The form of a page loaded before is stale now: refused in words, not a 500.
    stale = client.post(withdraw, {}, HTTP_HX_REQUEST="true")
    assert stale.status_code == 200 and "settled (agreed)" in stale.content.decode()
    assert question.labels.get(labeller=reviewer).blocker_key == TROUBLED

    other = question_add(task=task, actor=author, text="Is the weather relevant to the loans?")
    label_add(question=other, labeller=reviewer, blocker_key=None)
    withdraw = reverse("judge-label-withdraw", args=[task.pk, other.pk])
    response = client.post(withdraw, {}, follow=True)
    assert any("Withdrew your label" in m for m in _messages(response))
    assert not other.labels.exists()
    again = client.post(withdraw, {}, follow=True)  # a double submission
    assert again.status_code == 200
    assert any("withdrawn already" in m for m in _messages(again))
    row = views._row(reviewer, task, other, labeller=True)
    assert row["action"] == "label" and not row["change"]


def test_only_the_labeller_changes_a_label(client, task, author, reviewer, auditor, outsider):
    question = question_add(task=task, actor=author, text="Which contracts are the bad ones?")
    label_add(question=question, labeller=reviewer, blocker_key=YEAR)
    change = reverse("judge-label-change", args=[task.pk, question.pk])
    withdraw = reverse("judge-label-withdraw", args=[task.pk, question.pk])
    # Another labeller has no label here to change; the author never labels; an outsider
    # does not see the task.
    response = _as(client, auditor).post(change, {"blocker_key": TROUBLED}, follow=True)
    assert any("no label on this question" in m for m in _messages(response))
    assert _as(client, author).post(withdraw).status_code == 403
    assert _as(client, outsider).post(withdraw).status_code == 404
    assert (
        _as(client, reviewer)
        .post(reverse("judge-label-withdraw", args=[task.pk, 10**6]))
        .status_code
        == 404
    )
    assert question.labels.get().blocker_key == YEAR
    # The auditor, who has not labelled yet, is offered no change controls for it.
    assert (
        f'action="{change}"'
        not in _as(client, auditor).get(reverse("judge-questions", args=[task.pk])).content.decode()
    )


def test_the_report_reads_as_many_queries_with_forty_more_tasks_without_questions(
    client, labelled, reviewer
):
    """Issue 46, item 3: the report walked every task of the project with two queries each
    before skipping those with no held-out question (20.7 s at 10,000 tasks). It now reads the
    project's questions once and walks only the tasks they belong to."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    url = reverse("judge-report", args=[labelled.project_id])
    _as(client, reviewer).get(url)  # warm the judge's caches
    with CaptureQueriesContext(connection) as before:
        assert client.get(url).status_code == 200
    TaskFactory.create_batch(40, project=labelled.project, author=labelled.author)
    with CaptureQueriesContext(connection) as after:
        response = client.get(url)
    assert response.status_code == 200
    assert len(after) == len(before), (len(before), len(after))
    assert [row.task for row in response.context["report"].tasks] == [labelled]


def test_the_report_reads_as_many_queries_for_six_measured_tasks_as_for_two(
    client, project, author, writers, reviewer, auditor, monkeypatch
):
    """Issue 46: each measured task cost the report queries of its own — its revision,
    questions, editors, registry history and blockers, and one per verdict (210 on the
    benchmark's 20 tasks). They are read for all the measured tasks at once now (a fixed
    number per ``judge.recall.RECALL_CHUNK`` tasks), however many questions each has."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from hilbench_annotate import services as core
    from judge import services

    from .conftest import HITS, NEGATIVES
    from .util import write_and_settle

    monkeypatch.setattr(services, "CALIBRATION_TTL_S", 0.0)  # read by every request alike
    url = reverse("judge-report", args=[project.pk])
    _as(client, reviewer)

    def add_measured_tasks(n: int) -> None:
        for index in range(n):
            task = TaskFactory(project=project, author=author)
            for blocker in DEMO_BLOCKERS:
                core.blocker_create(
                    task=task, actor=author, expected_version=task.version, **blocker
                )
            questions = HITS[: 2 + index] + NEGATIVES[: index % 2 + 1]
            write_and_settle(task, writers, [reviewer, auditor], questions)

    def queries(measured: int) -> int:
        assert client.get(url).status_code == 200  # the judge's verdicts of new questions kept
        with CaptureQueriesContext(connection) as read:
            response = client.get(url)
        rows = response.context["report"].tasks
        assert len(rows) == measured and all(row.report for row in rows)
        return len(read)

    add_measured_tasks(2)
    two = queries(2)
    add_measured_tasks(4)
    assert queries(6) == two
