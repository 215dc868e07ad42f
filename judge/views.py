"""Judge validation screens: a task's held-out questions (add, generate, label, adjudicate),
measuring the judge with the recall floor loop, and the project's judge report."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from hilbench_annotate.access import access_project, access_task, can_edit_task, require_role
from hilbench_annotate.errors import AccessDenied, DomainError
from hilbench_annotate.models import Task
from hilbench_annotate.vocabulary import Role

from .access import may_label
from .base import JudgeError
from .models import ValidationQuestion
from .report import project_judge_report
from .services import get_judge
from .validation import (
    candidates_generate,
    expansion_suggestions,
    gold_label,
    judge_calibrate,
    judge_recall,
    label_add,
    question_add,
    suggestions_accept,
)

NONE_VALUE = "__none__"


def _question_rows(user, task: Task) -> tuple[list[dict], list[dict]]:
    """(held-out rows, retired rows). Others' labels are shown only once the user labelled
    the question, when it is settled, when it awaits adjudication, or to the task's author
    (who never labels)."""
    labeller = may_label(user, task)
    held_out, retired = [], []
    questions = task.validation_questions.prefetch_related("labels__labeller")
    for question in questions:
        state, gold = gold_label(question)
        labels = list(question.labels.all())
        mine = next((label for label in labels if label.labeller_id == user.pk), None)
        settled = state in ("agreed", "adjudicated")
        reveal = mine is not None or settled or state == "disputed" or task.author_id == user.pk
        action = None
        if question.split == ValidationQuestion.Split.HELD_OUT and labeller and mine is None:
            if state in ("unlabelled", "single"):
                action = "label"
            elif state == "disputed":
                action = "adjudicate"
        row = {
            "question": question,
            "state": state,
            "gold": gold,
            "settled": settled,
            "mine": mine,
            "labels": labels if reveal else [],
            "hidden": 0 if reveal else len(labels),
            "action": action,
        }
        (held_out if question.split == ValidationQuestion.Split.HELD_OUT else retired).append(row)
    return held_out, retired


def _page(request, task: Task, *, measured=None, suggestions=None, status=200):
    held_out, retired = _question_rows(request.user, task)
    return render(
        request,
        "judge/questions.html",
        {
            "task": task,
            "held_out": held_out,
            "retired": retired,
            "blocker_keys": list(task.blockers.values_list("key", flat=True)),
            "none_value": NONE_VALUE,
            "may_edit": can_edit_task(request.user, task),
            "may_label": may_label(request.user, task),
            "measured": measured,
            "suggestions": suggestions or [],
        },
        status=status,
    )


@login_required
@require_GET
def questions(request, task_id: int):
    task = access_task(request.user, task_id)
    return _page(request, task)


@login_required
@require_POST
def question_create(request, task_id: int):
    with transaction.atomic():
        task = access_task(request.user, task_id, for_update=True, edit=True)
        try:
            question_add(task=task, actor=request.user, text=request.POST.get("text", ""))
        except DomainError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, "Question added; it needs two independent labels.")
    return redirect("judge-questions", task_id=task_id)


@login_required
@require_POST
def generate(request, task_id: int):
    task = access_task(request.user, task_id, edit=True)
    added, llm_error = candidates_generate(task=task, actor=request.user)
    if llm_error:
        messages.error(request, f"The LLM endpoint wrote no candidates: {llm_error}")
    if added:
        messages.success(
            request, f"Generated {added} candidate question{'s' if added != 1 else ''}."
        )
    else:
        messages.info(request, "No new candidates: every template question is already here.")
    return redirect("judge-questions", task_id=task_id)


@login_required
@require_POST
def label(request, task_id: int, question_id: int):
    with transaction.atomic():
        task = access_task(request.user, task_id, for_update=True)
        question = task.validation_questions.filter(pk=question_id).first()
        if question is None:
            messages.error(request, "No such question in this task.")
            return redirect("judge-questions", task_id=task_id)
        choice = request.POST.get("blocker_key", "")
        if not choice:
            messages.error(request, "Choose a blocker or “none (irrelevant)”.")
            return redirect("judge-questions", task_id=task_id)
        if question.split != ValidationQuestion.Split.HELD_OUT:
            messages.error(request, "This question is retired; it is no longer labelled.")
            return redirect("judge-questions", task_id=task_id)
        if task.author_id != request.user.pk and not may_label(request.user, task):
            raise AccessDenied("Your role in this project does not label questions.")
        try:
            created = label_add(
                question=question,
                labeller=request.user,
                blocker_key=None if choice == NONE_VALUE else choice,
            )
        except DomainError as exc:
            messages.error(request, str(exc))
        else:
            verb = "Adjudicated" if created.role == "adjudicator" else "Labelled"
            messages.success(request, f"{verb}: “{question.text[:60]}”.")
    return redirect("judge-questions", task_id=task_id)


@login_required
@require_POST
def measure(request, task_id: int):
    task = access_task(request.user, task_id)
    if not task.revisions.exists():
        messages.error(request, "The task has no saved revision to measure the judge on.")
        return redirect("judge-questions", task_id=task_id)
    try:
        report = judge_recall(task=task, judge=get_judge(project=task.project))
    except JudgeError as exc:
        messages.error(request, f"The judge failed: {exc}")
        return redirect("judge-questions", task_id=task_id)
    suggestions = expansion_suggestions(report) if report.needs_expansion else []
    return _page(request, task, measured=report, suggestions=suggestions)


@login_required
@require_POST
def accept(request, task_id: int):
    chosen = request.POST.getlist("accept")
    with transaction.atomic():
        task = access_task(request.user, task_id, for_update=True, edit=True)
        accepted = []
        for raw in chosen:
            question = task.validation_questions.filter(pk=raw).first() if raw.isdigit() else None
            if question is None:
                messages.error(request, f"No question {raw} in this task.")
                return redirect("judge-questions", task_id=task_id)
            state, gold = gold_label(question)
            if state not in ("agreed", "adjudicated") or gold is None:
                messages.error(request, f"“{question.text[:60]}” has no settled blocker label.")
                return redirect("judge-questions", task_id=task_id)
            text = " ".join(request.POST.get(f"text-{question.pk}", question.text).split())
            accepted.append({"question": question.pk, "blocker": gold, "text": text})
        if not accepted:
            messages.info(request, "No suggestion selected.")
            return redirect("judge-questions", task_id=task_id)
        try:
            with transaction.atomic():
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
    return render(request, "judge/report.html", {"project": project, "report": result})


@login_required
@require_POST
def calibrate(request, project_id: int):
    """Leads calibrate the embedded judge on the project's labelled questions."""

    project = access_project(request.user, project_id)
    require_role(request.user, project, Role.LEAD, action="calibrate the judge")
    try:
        calibration = judge_calibrate(project=project, actor=request.user)
    except (DomainError, JudgeError) as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request,
            f"Calibrated on {calibration.questions} questions: thresholds "
            + ", ".join(f"{d} {t:.2f}" for d, t in sorted(calibration.thresholds.items()))
            + f"; the judge is now {calibration.version}.",
        )
    return redirect("judge-report", project_id=project.pk)
