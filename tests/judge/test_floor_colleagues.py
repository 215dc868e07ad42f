"""The recall floor cannot be lifted by a colleague either (issue 43, items 4 and 6).

Each route the issue reported is replayed here and ends with the ``judge_recall`` gate red
or the question not counted, saying why ("not counted: …") on the judge-validation page and
in the check's message. The task starts as ``measured`` (conftest.py): 9 of 12 positives,
75%, written by three experts who never edited it, labelled by two others, every style.
"""

import pytest
from django.urls import reverse

from hilbench_annotate import services as core
from hilbench_annotate.errors import DomainError
from hilbench_annotate.vocabulary import Role
from judge.floor import STYLES
from judge.labels import gold_label, label_add
from judge.models import QuestionLabel, ValidationQuestion
from judge.validation import judge_recall, labelling_progress, question_add

from ..conftest import _member
from ..factories import MembershipFactory
from .conftest import HITS, SERVICING, TROUBLED, YEAR
from .test_floor import EASY
from .util import gate, write_and_settle

pytestmark = pytest.mark.django_db

TERSE, TASK_WORDS, PARAPHRASE = (style.value for style in STYLES)


@pytest.fixture
def colleague(project):
    """Another author of the project, who never touched the task."""
    return _member(project, "colleague", Role.AUTHOR)


def _rules(report) -> list[str]:
    return sorted(item["rule"] for item in report.excluded)


# --- route 1: another author writes 16 easy held-out questions, labelled honestly ----------


def test_sixteen_easy_questions_by_another_author_keep_the_gate_red(
    measured, colleague, reviewer, auditor, author, judge
):
    """75% → 89% (25 of 28) and green before. Now the colleague's questions count only up to
    as many as all other writers' on each blocker, and the easy ones — all naming the task's
    words — only up to as many as the other styles together: 81%, red."""
    write_and_settle(measured, [colleague], [reviewer, auditor], EASY, styles=[TASK_WORDS])
    report = judge_recall(task=measured, judge=judge)
    everything = report.correct + sum(1 for e in report.excluded if e["rule"].endswith("_cap"))
    assert (everything, report.positives + len(report.excluded)) == (25, 28)  # what it read
    assert report.recall == pytest.approx(13 / 16) and not report.passes
    assert _rules(report) == ["style_cap"] * 8 + ["writer_cap"] * 4
    outcome, message, green = gate(measured, author)
    assert outcome == "failed" and not green
    assert "Judge recall 81% on 16 held-out questions" in message
    assert "the floor is 85%" in message
    assert "4 beyond half of a blocker's questions by one writer" in message
    assert "8 beyond half of the task's questions in one style" in message


def test_easy_questions_of_one_writer_alone_meet_no_rule_of_the_floor(
    task, colleague, reviewer, auditor, author, settings
):
    """The same sixteen questions where no one else wrote any: one writer, one style — the
    floor needs two writers, at most half of a blocker's questions by one of them, and every
    style. Nothing counts, and the gate says each reason."""
    settings.JUDGE_BACKEND = "embedded"
    write_and_settle(task, [colleague], [reviewer, auditor], EASY, styles=[TASK_WORDS])
    progress = labelling_progress(task)
    assert progress["settled"] == 0 and progress["excluded"] == len(EASY)
    assert all(
        why.startswith("one writer may write at most half of a blocker's counted questions")
        for why in progress["not_counted"].values()
    )
    outcome, message, green = gate(task, author)
    assert outcome == "failed" and not green
    assert message.startswith("No counted held-out question targets a blocker")
    assert "its counted questions come from 0 writers; the floor needs at least two" in message
    assert "no counted question in the style" in message and "paraphrase" in message
    assert "16 beyond half of a blocker's questions by one writer" in message


# --- route 2: a lead adds three triggers, then writes nine held-out questions near them -----

TRIGGERS = [
    (TROUBLED, "Which loan status letters mark a loan as troubled?"),
    (SERVICING, "Which k_symbol code do loan servicing payments carry?"),
    (YEAR, "Which calendar dates open and close the review year?"),
]
NEAR = [  # each just under the copy check's closeness (0.85) to the triggers
    (TROUBLED, "Which status letters of a loan make it troubled?"),
    (TROUBLED, "Which status letters flag troubled loans?"),
    (TROUBLED, "If a loan is troubled, which status letter does it have?"),
    (SERVICING, "Which code in k_symbol do servicing payments of loans carry?"),
    (SERVICING, "Which k_symbol code is carried by loan servicing rows?"),
    (SERVICING, "Which k_symbol code goes with servicing payments on loans?"),
    (YEAR, "What are the opening and closing dates of the review year?"),
    (YEAR, "Which calendar dates does the review year run between?"),
    (YEAR, "Between which calendar dates does the review year run?"),
]


def test_a_lead_who_added_triggers_writes_no_counted_question(
    client, measured, lead, reviewer, auditor, author, judge
):
    for gold, text in TRIGGERS:
        measured.refresh_from_db()
        core.trigger_question_create(
            blocker=measured.blockers.get(key=gold),
            actor=lead,
            expected_version=measured.version,
            text=text,
        )
    write_and_settle(measured, [lead], [reviewer, auditor], NEAR)
    report = judge_recall(task=measured, judge=judge)
    assert _rules(report) == ["editor"] * len(NEAR)
    assert all("its writer made revision" in e["why"] for e in report.excluded)
    assert report.recall == pytest.approx(9 / 12) and not report.passes
    outcome, message, green = gate(measured, author)
    assert outcome == "failed" and not green
    assert "9 held-out questions do not count: 9 written by someone who edited the task" in (
        message
    )
    # The page says it on each of them, and warns the lead before they write another.
    client.force_login(reviewer)
    page = client.get(reverse("judge-questions", args=[measured.pk])).content.decode()
    # On each question's row (the stored measurement's card, shown since 199c4eb, lists them
    # again).
    rows = page.count('not-counted">not counted: its writer made revision')
    assert rows == len(NEAR)
    client.force_login(lead)
    page = client.get(reverse("judge-questions", args=[measured.pk])).content.decode()
    assert "Your questions will not count toward the floor: you made revision" in page


def test_an_edit_after_writing_takes_the_writers_questions_out_too(
    measured, writers, reviewer, auditor, author, judge
):
    """Any revision, before or after: a writer who edits the registry once their questions
    are settled (to tune it to them) loses them all, and a lint waiver counts as an edit."""
    first, second, third = writers
    measured.refresh_from_db()
    # Only the task's author or a lead edits its registry (the service checks): the first
    # writer also leads the project.
    MembershipFactory(project=measured.project, user=first, role=Role.LEAD)
    core.trigger_question_create(
        blocker=measured.blockers.get(key=TROUBLED),
        actor=first,
        expected_version=measured.version,
        text="Which loan status letters mark a loan as troubled?",
    )
    core.task_event(
        task=measured,
        actor=second,
        kind="lint_waived",
        fingerprint="trigger_count:blockers",
        reason="Reviewed: one question per status code.",
    )
    report = judge_recall(task=measured, judge=judge)
    written = ValidationQuestion.objects.filter(task=measured, created_by__in=[first, second])
    editors = [e for e in report.excluded if e["rule"] == "editor"]
    assert {e["question"] for e in editors} == set(written.values_list("pk", flat=True))
    # The third writer is now alone on every blocker: beyond half of each, none counts.
    assert {e["rule"] for e in report.excluded} == {"editor", "writer_cap"}
    whys = {e["why"].split(":")[0] for e in editors}
    assert whys == {
        f"its writer made revision {measured.revisions.order_by('-number').first().number} "
        "of the task",
        "its writer waived a lint finding of the task",
    }
    assert report.writers == 0 and report.recall is None and not report.passes
    outcome, message, _ = gate(measured, author)
    assert outcome == "failed"
    assert "from 0 writers; the floor needs at least two writers who never edited" in message


# --- route 3: the writer labels their own question, one other labels it --------------------


def test_a_writers_own_label_settles_nothing(
    client, measured, colleague, reviewer, auditor, author, judge
):
    question = question_add(
        task=measured, actor=colleague, text=EASY[0][1], style=TERSE
    )  # the judge matches it
    with pytest.raises(DomainError, match="You wrote this question"):
        label_add(question=question, labeller=colleague, blocker_key=TROUBLED)
    # A label its writer gave before the rule, and one other's: still one independent label.
    for text_gold in EASY[1:4]:
        older = question_add(task=measured, actor=colleague, text=text_gold[1], style=TERSE)
        QuestionLabel.objects.create(question=older, labeller=colleague, blocker_key=TROUBLED)
        label_add(question=older, labeller=reviewer, blocker_key=TROUBLED)
        assert gold_label(older) == ("single", None)
    label_add(question=question, labeller=reviewer, blocker_key=TROUBLED)
    report = judge_recall(task=measured, judge=judge)
    assert _rules(report) == ["writer_label"] * 3 and report.unsettled == 4
    assert report.recall == pytest.approx(9 / 12)
    outcome, message, green = gate(measured, author)
    assert outcome == "failed" and not green
    assert "3 labelled by their own writer" in message
    client.force_login(auditor)
    page = client.get(reverse("judge-questions", args=[measured.pk])).content.decode()
    assert page.count('not-counted">not counted: its writer labelled it') == 3
    # The writer is offered no label buttons on their own question.
    client.force_login(colleague)
    response = client.get(reverse("judge-questions", args=[measured.pk]))
    rows = {row["question"].pk: row for row in response.context["held_out"]}
    assert rows[question.pk]["action"] is None and rows[question.pk]["written"]
    # A second person other than the writer settles it; then it counts.
    label_add(question=older, labeller=auditor, blocker_key=TROUBLED)
    assert gold_label(older) == ("agreed", TROUBLED)


# --- route 4: two authors write and settle each other's questions, no reviewer -------------


def test_two_colleagues_alone_cannot_lift_the_floor(task, project, author, reviewer, settings):
    """Each question needs two labellers other than its writer: with two people, each
    question has one at most. A third person is the least the floor needs."""
    settings.JUDGE_BACKEND = "embedded"
    alice = _member(project, "alice", Role.AUTHOR)
    bob = _member(project, "bob", Role.AUTHOR)
    questions = HITS + [(TROUBLED, EASY[0][1]), (SERVICING, EASY[5][1]), (YEAR, EASY[10][1])]
    written = []
    for index, (gold, text) in enumerate(questions):
        writer, other = (alice, bob) if index % 2 else (bob, alice)
        question = question_add(
            task=task, actor=writer, text=text, style=STYLES[index % len(STYLES)]
        )
        label_add(question=question, labeller=other, blocker_key=gold)
        for second in (writer, author):  # the writer, the task's author: both refused
            with pytest.raises(DomainError):
                label_add(question=question, labeller=second, blocker_key=gold)
        written.append((question, gold))
    assert {gold_label(q)[0] for q, _ in written} == {"single"}
    outcome, message, green = gate(task, author)
    assert outcome == "failed" and not green
    assert message.startswith("No counted held-out question targets a blocker")
    assert "come from 0 writers" in message

    # With a third person the same questions settle, and — judged right, from two writers,
    # in every style — they pass.
    for question, gold in written:
        label_add(question=question, labeller=reviewer, blocker_key=gold)
    outcome, message, green = gate(task, author)
    assert (outcome, green) == ("passed", True), message


# --- item 6: styles -------------------------------------------------------------------------


def test_the_floor_needs_every_style_and_says_which_is_missing(
    task, writers, reviewer, auditor, author, judge, settings
):
    settings.JUDGE_BACKEND = "embedded"
    questions = HITS + [(TROUBLED, EASY[0][1]), (SERVICING, EASY[5][1]), (YEAR, EASY[10][1])]
    write_and_settle(task, writers, [reviewer, auditor], questions, styles=[TASK_WORDS, PARAPHRASE])
    report = judge_recall(task=task, judge=judge)
    assert report.recall == 1.0 and not report.passes and not report.excluded
    assert report.shortfall == [
        "the task: no counted question in the style “terse, as an agent would ask (not naming "
        "the task's words)”; the floor needs every style among its counted questions"
    ]
    outcome, message, green = gate(task, author)
    assert outcome == "failed" and not green
    assert "Judge recall 100% on 12 held-out questions" in message
    assert "but the floor is not met" in message and "no counted question in the style" in message
    assert message.endswith("By style: the task's words 6/6, paraphrase 6/6.")


def test_questions_written_before_styles_count_but_supply_none(
    task, writers, reviewer, auditor, author, judge, settings
):
    """The migration leaves older questions' style empty: "not recorded". They count as one
    more group under the style cap — at most half of the counted questions — and give the
    task no style: a task measured on older questions alone counts none of them, and needs
    fresh questions in each style, as many as the older ones, before all of those count."""
    settings.JUDGE_BACKEND = "embedded"
    questions = HITS + [(TROUBLED, EASY[0][1]), (SERVICING, EASY[5][1]), (YEAR, EASY[10][1])]
    write_and_settle(task, writers, [reviewer, auditor], questions, styles=[""])
    report = judge_recall(task=task, judge=judge)
    assert report.positives == 0 and _rules(report) == ["style_cap"] * 12
    assert "12 have no style recorded against 0 in other styles" in report.excluded[0]["why"]
    assert "no counted question in the style" in report.shortfall[-1]
    outcome, message, _ = gate(task, author)
    assert outcome == "failed" and "12 beyond half of the task's questions in one style" in message

    # Twelve fresh questions, four of each style, by the same writers: now every question
    # counts, and the report shows the older ones apart.
    unused = [item for index, item in enumerate(EASY) if index not in (0, 5, 10)]
    fresh = [item for item in unused if item[0] != YEAR] + [i for i in unused if i[0] == YEAR][:4]
    write_and_settle(task, writers, [reviewer, auditor], fresh)
    report = judge_recall(task=task, judge=judge)
    assert not report.excluded and report.positives == 24
    assert [row["name"] for row in report.styles] == [
        *(style.label for style in STYLES),
        "style not recorded",
    ]
    assert [row["positives"] for row in report.styles] == [4, 4, 4, 12]


def test_the_labelling_page_asks_for_varied_styles_and_the_report_shows_recall_by_style(
    client, measured, writers, reviewer, lead, judge
):
    client.force_login(reviewer)
    page = client.get(reverse("judge-questions", args=[measured.pk]))
    html = page.content.decode()
    assert "Write them in varied styles" in html and 'name="style"' in html
    assert 'id="style-counts"' in html
    # The style the task has fewest questions of is chosen; one more of it, and another is.
    have = {row["value"]: row["have"] for row in page.context["styles"]}
    suggested = page.context["suggested_style"]
    assert have[suggested] == min(have.values())
    assert f'value="{suggested}" required checked' in html
    for text in ("Which rows are the bad ones?", "Which rows are the wrong ones?"):
        question_add(task=measured, actor=writers[0], text=text, style=suggested)
    page = client.get(reverse("judge-questions", args=[measured.pk]))
    assert page.context["suggested_style"] != suggested

    client.force_login(lead)
    report = client.get(reverse("judge-report", args=[measured.project_id]))
    html = report.content.decode()
    assert "Recall by question style" in html and 'id="by-style"' in html
    styles = {row["name"]: row["tally"] for row in report.context["report"].styles}
    assert sum(t.positives for t in styles.values()) == 12
    assert sum(t.correct for t in styles.values()) == 9
