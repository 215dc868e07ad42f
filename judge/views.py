"""Judge validation screens: a task's held-out questions (add, generate, label, adjudicate),
measuring the judge with the recall floor loop, and the project's judge report."""

from collections import Counter

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from hilbench_annotate.access import (
    access_project,
    access_task,
    can_edit_task,
    not_found,
    require_role,
)
from hilbench_annotate.errors import AccessDenied, DomainError
from hilbench_annotate.forminput import form_input
from hilbench_annotate.models import Task
from hilbench_annotate.vocabulary import Role
from validators.services import validation_run_inline

from . import floor
from .access import may_label
from .base import JudgeError
from .forms import question_typed, suggestions_typed
from .labels import gold_label, label_add, label_change, label_withdraw
from .models import QuestionLabel, ValidationQuestion
from .report import project_judge_report
from .selectors import (
    blocker_keys,
    calibration_job_last,
    has_revision,
    held_out_count,
    held_out_questions,
    held_out_styles,
    measurement_last,
    measurement_of,
    question_labels,
    question_with_labels,
    task_question,
    task_questions,
)
from .serializers import NONE_VALUE, HeldOutQuestionIn, QuestionLabelIn, SuggestionsAcceptIn
from .services import get_judge
from .validation import (
    candidates_generate,
    expansion_suggestions,
    judge_calibrate_start,
    judge_recall,
    labelling_progress,
    question_add,
    suggestions_accept,
)


def _row(user, task: Task, question: ValidationQuestion, labeller: bool, why: str = "") -> dict:
    """One question as the page shows it. Others' labels are shown only once the user labelled
    it, when it is settled, when it awaits adjudication, or to the task's author (who never
    labels). ``change``: the user's own label may still be changed or withdrawn (while the
    question is not settled: ``judge.labels``). Its writer does not label it. ``why``: why the
    floor does not count it (``judge.floor``), or ""."""
    state, gold = gold_label(question)
    labels = question_labels(question=question)
    mine = next((label for label in labels if label.labeller_id == user.pk), None)
    settled = state in ("agreed", "adjudicated")
    reveal = mine is not None or settled or state == "disputed" or task.author_id == user.pk
    action = None
    held_out = question.split == ValidationQuestion.Split.HELD_OUT
    written = question.created_by_id == user.pk
    if held_out and labeller and mine is None and not written:
        if state in ("unlabelled", "single"):
            action = "label"
        elif state == "disputed":
            action = "adjudicate"
    change = (
        held_out
        and labeller
        and mine is not None
        and mine.role == QuestionLabel.Role.LABELLER
        and not settled
    )
    # Held-out questions others wrote stay sealed from the task's author until labelled: an
    # author who read them could write the registry to match them (judge.floor).
    sealed = (
        task.author_id == user.pk
        and question.created_by_id != user.pk
        and not settled
        and question.split == ValidationQuestion.Split.HELD_OUT
    )
    return {
        "question": question,
        "sealed": sealed,
        "state": state,
        "gold": gold,
        "settled": settled,
        "mine": mine,
        "labels": labels if reveal else [],
        "hidden": 0 if reveal else len(labels),
        "action": action,
        "change": change,
        "written": written,
        "why": why,
        "style": floor.style_name(question.style, short=True),
    }


def _question_rows(user, task: Task, not_counted: dict) -> tuple[list[dict], list[dict]]:
    """(held-out rows, retired rows); ``not_counted``: why the floor leaves a question out,
    by its id (``labelling_progress``)."""
    labeller = may_label(user, task)
    held_out, retired = [], []
    for question in task_questions(task=task):
        row = _row(user, task, question, labeller, not_counted.get(question.pk, ""))
        (held_out if question.split == ValidationQuestion.Split.HELD_OUT else retired).append(row)
    return held_out, retired


def _awaiting(user, task: Task) -> int:
    """How many held-out questions await ``user``'s label (or adjudication)."""
    if not may_label(user, task):
        return 0
    return sum(
        1
        for question in held_out_questions(task=task)
        if _row(user, task, question, labeller=True)["action"]
    )


def _context(request, task: Task, progress: dict | None = None, **extra) -> dict:
    return {
        "to_label": _awaiting(request.user, task),
        "task": task,
        "blocker_keys": blocker_keys(task=task),
        "none_value": NONE_VALUE,
        "may_edit": can_edit_task(request.user, task),
        "may_label": may_label(request.user, task),
        "may_add": _may_add(request.user, task),
        "progress": progress or labelling_progress(task),
        **extra,
    }


def _style_choice(user, task: Task) -> dict:
    """The add form's styles, the one the task's held-out questions have fewest of chosen
    (the page asks writers for varied styles), and why the user's own questions would not
    count, if they would not (``judge.floor``: its writer rule)."""
    have = Counter(held_out_styles(task=task))
    suggested = min(floor.STYLES, key=lambda style: have[style])
    editors = floor.task_editors(task)
    return {
        "styles": [{"value": s.value, "name": s.label, "have": have[s]} for s in floor.STYLES],
        "suggested_style": suggested.value,
        "my_questions_refused": editors.get(user.pk, ""),
    }


def _page(request, task: Task, *, measured=None, suggestions=None, recorded=None, status=200):
    progress = labelling_progress(task)
    stored = _stored(task, measured=measured, suggestions=suggestions, recorded=recorded)
    held_out, retired = _question_rows(request.user, task, progress["not_counted"])
    context = _context(
        request,
        task,
        progress,
        **_style_choice(request.user, task),
        held_out=held_out,
        retired=retired,
        **stored,
    )
    return render(request, "judge/questions.html", context, status=status)


def _stored(task: Task, *, measured=None, suggestions=None, recorded=None) -> dict:
    """The measurement card's names: the one just made, or else the last one stored (its
    validation run's figures, with when, by whom, with which judge, and whether stale)."""
    measurement = (
        measurement_of(task=task, run=recorded) if recorded else measurement_last(task=task)
    )
    if measured is None and measurement is not None:
        measured, recorded = measurement.report, measurement.run
        suggestions = expansion_suggestions(measured) if measured.needs_expansion else []
    return {
        "measured": measured,
        "suggestions": suggestions or [],
        "recorded": recorded,
        "measurement": measurement,
    }


def _may_add(user, task: Task) -> bool:
    """The task's editors and anyone who labels its questions (reviewers, auditors, leads)
    may add held-out questions — during review too: they change no task content."""
    return can_edit_task(user, task) or may_label(user, task)


def _refresh(request, task: Task, question: ValidationQuestion, message: str, *, ok: bool):
    """htmx: the question's row, the progress card (out of band) and a one-line status."""
    question = question_with_labels(task=task, question_id=question.pk)
    progress = labelling_progress(task)
    why = progress["not_counted"].get(question.pk, "")
    context = _context(
        request,
        task,
        progress,
        row=_row(request.user, task, question, may_label(request.user, task), why),
        notice=message,
        ok=ok,
        oob=True,
    )
    return render(request, "judge/questions.html#labelled", context)


@login_required
@require_GET
def questions(request, task_id: int):
    task = access_task(request.user, task_id)
    return _page(request, task)


@login_required
@require_POST
def question_create(request, task_id: int):
    task = access_task(request.user, task_id)
    if not _may_add(request.user, task):
        raise AccessDenied("Your role in this project does not add validation questions.")
    source = "author" if task.author_id == request.user.pk else "reviewer"
    typed = question_typed(request.POST)
    try:
        data = form_input(HeldOutQuestionIn, typed)
        question = question_add(task=task, actor=request.user, source=source, **data)
    except DomainError as exc:
        if request.htmx:
            text = " ".join(typed["text"].split())
            shown = f"“{text[:80]}{'…' if len(text) > 80 else ''}” was not added: {exc}"
            context = _context(request, task, notice=shown, ok=False)
            return render(request, "judge/questions.html#queued", context)
        messages.error(request, str(exc))
        return redirect("judge-questions", task_id=task_id)
    notice = "Question added; it needs two labels by people other than you."
    if request.htmx:
        question = question_with_labels(task=task, question_id=question.pk)
        count = held_out_count(task=task)
        progress = labelling_progress(task)
        why = progress["not_counted"].get(question.pk, "")
        context = _context(
            request,
            task,
            progress,
            notice=f"Added: “{question.text[:80]}”. It needs two labels by people other than you.",
            ok=True,
            row=_row(request.user, task, question, may_label(request.user, task), why),
            count=count,
            oob=True,
        )
        return render(request, "judge/questions.html#queued", context)
    messages.success(request, notice)
    return redirect("judge-questions", task_id=task_id)


@login_required
@require_POST
def generate(request, task_id: int):
    task = access_task(request.user, task_id)
    if not _may_add(request.user, task):
        raise AccessDenied("Your role in this project does not add validation questions.")
    result = candidates_generate(task=task, actor=request.user)
    if result.error:
        messages.error(request, f"The LLM endpoint wrote no candidates: {result.error}")
    elif not settings.JUDGE_LLM_BASE_URL:
        messages.info(
            request,
            "No LLM endpoint is configured (JUDGE_LLM_BASE_URL), so only off-task questions "
            "were proposed: write the paraphrases of each blocker yourself.",
        )
    if result.rejected:
        messages.warning(
            request,
            f"{len(result.rejected)} candidate(s) refused as near-copies: "
            + " · ".join(result.rejected[:5]),
        )
    noun = "question" if result.added == 1 else "questions"
    messages.success(request, f"Added {result.added} candidate {noun}.")
    return redirect("judge-questions", task_id=task_id)


def _choice(request) -> str | None:
    """The blocker key chosen by a label button (None: "none (irrelevant)")."""
    choice = form_input(QuestionLabelIn, request.POST)["blocker_key"]
    return None if choice == NONE_VALUE else choice


def _label_answer(request, task: Task, question: ValidationQuestion, act):
    """Call ``act`` (a labelling service; it returns the notice) and answer: for htmx the
    question's row, the progress and the notice; otherwise a redirect to the page with the
    message. A refusal — a stale form, a double submission — is the notice, never a 500."""
    try:
        notice, ok = act(), True
    except DomainError as exc:
        notice, ok = str(exc), False
    if request.htmx:
        return _refresh(request, task, question, notice, ok=ok)
    (messages.success if ok else messages.error)(request, notice)
    return redirect("judge-questions", task_id=task.pk)


@login_required
@require_POST
def label(request, task_id: int, question_id: int):
    task = access_task(request.user, task_id)
    question = task_question(task=task, question_id=question_id)
    if question is None:
        messages.error(request, "No such question in this task.")
        return redirect("judge-questions", task_id=task_id)
    if task.author_id != request.user.pk and not may_label(request.user, task):
        raise AccessDenied("Your role in this project does not label questions.")

    def act() -> str:
        blocker_key = _choice(request)
        if question.split != ValidationQuestion.Split.HELD_OUT:
            raise DomainError("This question is retired; it is no longer labelled.")
        created = label_add(question=question, labeller=request.user, blocker_key=blocker_key)
        verb = "Adjudicated" if created.role == "adjudicator" else "Labelled"
        return f"{verb}: “{question.text[:60]}”."

    return _label_answer(request, task, question, act)


def _own_label(request, task_id: int, question_id: int) -> tuple[Task, ValidationQuestion]:
    """The task and question whose label the user changes or withdraws. Whose label it is
    is the service's question: the user's own, or none (``judge.labels``)."""
    task = access_task(request.user, task_id)
    if not may_label(request.user, task):
        raise AccessDenied("Your role in this project does not label questions.")
    question = task_question(task=task, question_id=question_id)
    if question is None:
        raise not_found("validation question")
    return task, question


@login_required
@require_POST
def label_change_view(request, task_id: int, question_id: int):
    task, question = _own_label(request, task_id, question_id)

    def act() -> str:
        label = label_change(question=question, labeller=request.user, blocker_key=_choice(request))
        return f"Your label of “{question.text[:60]}” is now {label.blocker_key or 'none'}."

    return _label_answer(request, task, question, act)


@login_required
@require_POST
def label_withdraw_view(request, task_id: int, question_id: int):
    task, question = _own_label(request, task_id, question_id)

    def act() -> str:
        label_withdraw(question=question, labeller=request.user)
        return f"Withdrew your label of “{question.text[:60]}”; it awaits a label again."

    return _label_answer(request, task, question, act)


def _measured(request, task: Task, **context):
    """The measurement card: alone for htmx (the page keeps the rest), else the page."""
    if request.htmx:
        stored = _stored(
            task,
            measured=context.pop("measured", None),
            suggestions=context.pop("suggestions", None),
            recorded=context.pop("recorded", None),
        )
        context = {"task": task, "may_edit": can_edit_task(request.user, task), **stored, **context}
        return render(request, "judge/questions.html#measure", context)
    if context.get("measure_error"):
        messages.error(request, context["measure_error"])
        return redirect("judge-questions", task_id=task.pk)
    return _page(request, task, **context)


@login_required
@require_POST
def measure(request, task_id: int):
    task = access_task(request.user, task_id)
    if not has_revision(task=task):
        return _measured(
            request, task, measure_error="The task has no saved revision to measure the judge on."
        )
    try:
        report = judge_recall(task=task, judge=get_judge(project=task.project))
    except JudgeError as exc:
        return _measured(request, task, measure_error=f"The judge failed: {exc}")
    # Recorded as a validation run of judge_recall on the current revision: what the final
    # sign-off's and the export's gate read (the verdicts are cached, so this is quick).
    run = validation_run_inline(task=task, actor=request.user, checks=["judge_recall"])
    suggestions = expansion_suggestions(report) if report.needs_expansion else []
    return _measured(request, task, measured=report, suggestions=suggestions, recorded=run)


@login_required
@require_POST
def accept(request, task_id: int):
    task = access_task(request.user, task_id, edit=True)
    try:
        chosen = form_input(SuggestionsAcceptIn, suggestions_typed(request.POST))["accepted"]
    except DomainError as exc:
        messages.error(request, str(exc))
        return redirect("judge-questions", task_id=task_id)
    accepted = []
    for row in chosen:
        question = task_question(task=task, question_id=row["question"])
        if question is None:
            messages.error(request, f"No question {row['question']} in this task.")
            return redirect("judge-questions", task_id=task_id)
        state, gold = gold_label(question)
        if state not in ("agreed", "adjudicated") or gold is None:
            messages.error(request, f"“{question.text[:60]}” has no settled blocker label.")
            return redirect("judge-questions", task_id=task_id)
        text = " ".join(row.get("text", question.text).split())
        accepted.append({"question": question.pk, "blocker": gold, "text": text})
    if not accepted:
        messages.info(request, "No suggestion selected.")
        return redirect("judge-questions", task_id=task_id)
    try:
        suggestions_accept(task=task, actor=request.user, accepted=accepted)
    except DomainError as exc:
        messages.error(request, str(exc))
        return redirect("judge-questions", task_id=task_id)
    n = len(accepted)
    messages.success(
        request,
        f"Added {n} trigger question{'s' if n != 1 else ''}; "
        f"{'their' if n != 1 else 'its'} source question{'s are' if n != 1 else ' is'} retired.",
    )
    return redirect("judge-questions", task_id=task_id)


@login_required
@require_GET
def report(request, project_id: int):
    project = access_project(request.user, project_id)
    try:
        result = project_judge_report(project=project, judge=get_judge(project=project))
    except JudgeError as exc:
        messages.error(request, f"The judge could not be loaded: {exc}")
        result = None
    calibration_job = calibration_job_last(project=project)
    return render(
        request,
        "judge/report.html",
        {"project": project, "report": result, "calibration_job": calibration_job},
    )


@login_required
@require_POST
def calibrate(request, project_id: int):
    """Leads calibrate the embedded judge on the project's labelled questions."""

    project = access_project(request.user, project_id)
    require_role(request.user, project, Role.LEAD, action="calibrate the judge")
    judge_calibrate_start(project=project, actor=request.user)
    messages.info(
        request, "Calibration queued: this page says how it ended once a worker has run it."
    )
    return redirect("judge-report", project_id=project.pk)
