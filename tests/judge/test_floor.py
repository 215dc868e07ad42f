"""The recall floor cannot be moved without fresh evidence (issue 25, item 3).

Each test replays one way an author (or a lead) lifted a task over the floor without honest
work, and ends with the judge_recall gate red or the action refused. The demo's blocked task
is measured on held-out questions written by ``writers`` (three other domain experts, as the
floor's rules ask: ``judge.floor``), each blocker with three that the judge matches and one
it misses: 9 of 12 positives, 75% (the ``measured`` fixture, conftest.py). The routes a
colleague took (issue 43) are in ``test_floor_colleagues.py``.
"""

import pytest

from authoring.services import lint_waive
from hilbench_annotate import services as core
from hilbench_annotate.errors import DomainError
from judge.models import JudgeCalibration
from judge.validation import (
    closest_trigger,
    expansion_suggestions,
    judge_recall,
    question_add,
    suggestions_accept,
)

from .conftest import MISSES, SERVICING, TROUBLED, YEAR
from .util import gate as _gate
from .util import write_and_settle

pytestmark = pytest.mark.django_db


def _without_compromised(report) -> float:
    """The recall as main measured it: compromised questions left out instead of missed."""
    left = report.positives - len(report.compromised)
    return (report.correct) / left


def test_retiring_one_miss_per_blocker_keeps_the_gate_red(measured, author, judge):
    """Attempt 1: accept one suggestion per blocker, write no fresh question. The misses
    used to leave the count: 9 of 9, 100% and green."""
    report = judge_recall(task=measured, judge=judge)
    measured.refresh_from_db()
    suggestions_accept(task=measured, actor=author, accepted=expansion_suggestions(report))
    gamed = judge_recall(task=measured, judge=judge)
    assert _without_compromised(gamed) == 1.0  # what it used to read
    assert gamed.recall == pytest.approx(9 / 12) and not gamed.passes
    assert {c["text"] for c in gamed.compromised} == {text for _, text in MISSES}
    outcome, message, green = _gate(measured, author)
    assert outcome == "failed" and not green
    assert "3 held-out questions were retired or copied into the registry" in message


def test_copying_the_misses_into_trigger_questions_keeps_the_gate_red(measured, author, judge):
    """Attempt 1, by hand: the misses typed in as trigger questions."""
    for gold, text in MISSES:
        measured.refresh_from_db()
        core.trigger_question_create(
            blocker=measured.blockers.get(key=gold),
            actor=author,
            expected_version=measured.version,
            text=text,
        )
    gamed = judge_recall(task=measured, judge=judge)
    assert _without_compromised(gamed) == 1.0
    assert gamed.recall == pytest.approx(9 / 12) and len(gamed.compromised) == 3
    assert _gate(measured, author)[0] == "failed"


PARAPHRASES = {
    "Do delinquent contracts fall under the problem category?": (
        "Should delinquent contracts be put in the problem category?"
    ),
    "Which fee rows belong to the upkeep of credit lines?": (
        "Which rows of fees are for the upkeep of the credit lines?"
    ),
    "Which twelve-month window is the audit cycle?": (
        "Over which twelve months does the audit cycle run?"
    ),
}


def test_paraphrasing_the_misses_under_the_closeness_limit_keeps_the_gate_red(
    measured, author, judge, settings
):
    """Attempt 2: the misses reworded just enough to pass the copy check (closeness under
    0.85), so main counted them as fresh hits (92%). The judge matches them only through
    the new trigger questions, which were written after them."""
    for gold, text in MISSES:
        paraphrase = PARAPHRASES[text]
        assert closest_trigger(text, [paraphrase])[0] < settings.JUDGE_HELD_OUT_MAX_SIMILARITY
        measured.refresh_from_db()
        core.trigger_question_create(
            blocker=measured.blockers.get(key=gold),
            actor=author,
            expected_version=measured.version,
            text=paraphrase,
        )
    gamed = judge_recall(task=measured, judge=judge)
    now_matched = {c["text"] for c in gamed.compromised}
    assert now_matched, "the paraphrases should make the judge match the misses"
    assert _without_compromised(gamed) > gamed.recall
    assert gamed.recall <= 9 / 12 and not gamed.passes
    assert _gate(measured, author)[0] == "failed"


def test_pasting_the_misses_into_descriptions_keeps_the_gate_red(measured, author, judge):
    """Attempt 3: the misses pasted verbatim into the blockers' descriptions, which the copy
    check ignored (100%)."""
    for gold, text in MISSES:
        measured.refresh_from_db()
        blocker = measured.blockers.get(key=gold)
        core.blocker_update(
            blocker=blocker,
            actor=author,
            expected_version=measured.version,
            description=f"{blocker.description} {text}",
        )
    gamed = judge_recall(task=measured, judge=judge)
    assert {c["text"] for c in gamed.compromised} == {text for _, text in MISSES}
    assert _without_compromised(gamed) == 1.0
    assert gamed.recall == pytest.approx(9 / 12) and not gamed.passes
    assert _gate(measured, author)[0] == "failed"


def test_a_fresh_question_by_someone_else_replaces_a_compromised_one(
    measured, author, writers, reviewer, auditor, judge
):
    """What does lift the task: fresh questions, written by others after the change."""
    report = judge_recall(task=measured, judge=judge)
    measured.refresh_from_db()
    suggestions_accept(task=measured, actor=author, accepted=expansion_suggestions(report))
    write_and_settle(measured, writers, [reviewer, auditor], [
        (TROUBLED, "Which loan status codes should be treated as troubled?"),
        (SERVICING, "Which k_symbol value do loan servicing payments carry?"),
        (YEAR, "Which calendar year should the payments fall in?"),
    ])  # fmt: skip
    fresh = judge_recall(task=measured, judge=judge)
    assert not fresh.compromised and fresh.recall == 1.0 and fresh.passes
    assert _gate(measured, author)[:3:2] == ("passed", True)


EASY = [
    (TROUBLED, "Which loan status values mark a loan as troubled?"),
    (TROUBLED, "How do I know that a loan is troubled?"),
    (TROUBLED, "Which loans should be called troubled here?"),
    (TROUBLED, "What defines a troubled loan for this question?"),
    (TROUBLED, "Which status tells me a loan is troubled?"),
    (SERVICING, "Which rows of transaction_log are loan servicing ones?"),
    (SERVICING, "How are loan servicing transactions recognised?"),
    (SERVICING, "Which k_symbol value stands for loan servicing?"),
    (SERVICING, "What code do loan servicing payments have?"),
    (SERVICING, "Where is a loan servicing payment flagged?"),
    (YEAR, "Which dates bound the review year?"),
    (YEAR, "What year is meant by the review year?"),
    (YEAR, "On which day does the review year begin?"),
    (YEAR, "Which calendar year should payments fall in?"),
    (YEAR, "Which year should the review year be?"),
    (YEAR, "What are the first and last days of the review year?"),
]


def test_the_authors_own_easy_questions_do_not_count(measured, author, reviewer, auditor, judge):
    """Attempt 4: the task's author writes 16 easy held-out questions, honestly labelled by
    others: main read 86% and green. The author's questions measure nothing."""
    write_and_settle(measured, [author], [reviewer, auditor], EASY)
    gamed = judge_recall(task=measured, judge=judge)
    assert [e["rule"] for e in gamed.excluded] == ["editor"] * len(EASY)
    assert gamed.recall == pytest.approx(9 / 12)
    outcome, message, green = _gate(measured, author)
    assert outcome == "failed" and not green
    assert "16 held-out questions do not count: 16 written by someone who edited the task" in (
        message
    )


def test_the_author_does_not_see_others_questions_before_they_are_labelled(
    client, task, author, writer, reviewer
):
    sealed = question_add(task=task, actor=writer, text="Which loan states count as troubled?")
    own = question_add(task=task, actor=author, text="Which code marks loan servicing rows?")
    url = f"/tasks/{task.pk}/judge/"
    client.force_login(author)
    page = client.get(url).content.decode()
    assert sealed.text not in page and own.text in page
    assert "Hidden from the task's author until it is labelled" in page
    client.force_login(reviewer)
    assert sealed.text in client.get(url).content.decode()


def test_calibrating_on_three_negatives_is_refused(
    client, measured, writers, reviewer, auditor, lead, harness, monkeypatch
):
    """Attempt 5: a lead calibrates on the project's own questions, three of them negatives:
    the threshold fell from -0.48 to -5.79 and "What values should I use?" got a resolution
    through /api/ask_human. A calibration needs its negatives; and the question is vague."""
    from hilbench_annotate.services.tokens import api_token_create
    from judge import validation

    monkeypatch.setattr(validation, "CALIBRATION_MIN_POSITIVES", 5)
    write_and_settle(
        measured, writers, [reviewer, auditor], [(None, "Who founded the bank's head office?")]
    )
    with pytest.raises(DomainError, match="needs at least 20 settled negative"):
        validation.judge_calibrate(project=measured.project, actor=lead)
    client.force_login(lead)
    client.post(f"/projects/{measured.project_id}/judge-calibrate/")
    # A worker runs the queued calibration (here, the service its task calls).
    validation.judge_calibrate_execute(job_id=measured.project.calibration_jobs.get().pk)
    response = client.get(f"/projects/{measured.project_id}/judge-report/")
    assert response.status_code == 200 and "needs at least 20 settled negative" in (
        response.content.decode()
    )
    assert not JudgeCalibration.objects.exists()

    token = api_token_create(user=harness, name="agent")[1]
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    run = client.post(
        "/api/ask_human/runs", {"task": measured.pk}, content_type="application/json", **headers
    ).json()["run"]
    answer = client.post(
        "/api/ask_human",
        {"run": run, "question": "What values should I use?"},
        content_type="application/json",
        **headers,
    ).json()
    assert answer["response"] == "irrelevant question"


def test_a_calibration_never_answers_a_fixed_negative_the_shipped_judge_does_not(
    measured, writers, reviewer, auditor, lead, monkeypatch
):
    """With negatives enough to be allowed, the threshold still stays above every generic,
    off-task and vague question the shipped judge turns away."""
    from judge import validation
    from judge.services import get_judge, registry_from_snapshot, task_context

    monkeypatch.setattr(validation, "CALIBRATION_MIN_POSITIVES", 5)
    monkeypatch.setattr(validation, "CALIBRATION_MIN_NEGATIVES", 2)
    write_and_settle(measured, writers, [reviewer, auditor], [
        (None, "Which loans did the bank write off in 1995?"),
        (None, "How are the district names spelled in the data?"),
        (None, "Which client has the largest account balance?"),
        (None, "How many loans does the bank hold in total?"),
    ])  # fmt: skip
    calibration = validation.judge_calibrate(project=measured.project, actor=lead)
    shipped = get_judge("embedded")
    calibrated = get_judge(project=measured.project)
    assert calibrated.version == calibration.version
    snapshot = measured.revisions.order_by("-number").first().snapshot
    registry, context = registry_from_snapshot(snapshot), task_context(snapshot)
    for question in validation.FIXED_NEGATIVES:
        before = shipped.judge(question, registry, domain="sql", context=context).blocker_id
        after = calibrated.judge(question, registry, domain="sql", context=context).blocker_id
        assert after is None or after == before, question


def test_templated_trigger_questions_cannot_be_waived_by_the_author(measured, author, lead):
    """Attempt 6: 80 templated near-duplicate trigger questions reached 90%; lint flagged the
    count, and the author waived it. Judge-critical findings are a reviewer's to waive."""
    from authoring.lint_cache import snapshot_findings
    from authoring.services import open_findings
    from hilbench_annotate.gates import gate_results as gates
    from hilbench_annotate.services.tasks import task_snapshots

    blocker = measured.blockers.get(key=TROUBLED)
    for n in range(80):
        measured.refresh_from_db()
        core.trigger_question_create(
            blocker=blocker,
            actor=author,
            expected_version=measured.version,
            text=f"Which loan status values count as a troubled loan in case {n}?",
        )
    measured.refresh_from_db()
    findings = snapshot_findings([measured], task_snapshots([measured]))[measured.pk]
    count = next(f for f in findings if f["rule"] == "trigger_count")
    with pytest.raises(DomainError, match="other than the task's author must waive it"):
        lint_waive(
            task=measured,
            actor=author,
            fingerprint=count["fingerprint"],
            reason="We want many phrasings for recall.",
        )
    assert count in open_findings(measured, findings)
    assert gates(measured, ["lint_clean"])[0][1] is False
    # A lead who is not the author may waive it, with a reason on record.
    lint_waive(
        task=measured,
        actor=lead,
        fingerprint=count["fingerprint"],
        reason="Reviewed: the blocker is a list of codes, one question per code.",
    )
