"""The failure taxonomy, human labels of failed passes, and LLM pre-labelling.

The taxonomy is the HiL-Bench paper's (appendix F): a capability dimension (tool use,
alignment, logic) crossed with a failure mode (completion, accuracy, strategy,
self-assessment), each with a definition and examples a lead may edit per project. The LLM
labeller's prompt is versioned by a hash of the rubric it shows, so labels made under one
wording are never compared as if made under another.
"""

from __future__ import annotations

import hashlib
import json

from django.db import IntegrityError, transaction
from django.db.models import F

from hilbench_annotate.access import READER_ROLES, require_role
from hilbench_annotate.chat import ChatError, extract_json, snippet
from hilbench_annotate.errors import DomainError
from hilbench_annotate.jobs import job_claim, job_fail, job_finish, job_heartbeat, job_send
from hilbench_annotate.models import Project
from hilbench_annotate.services.tasks import event_record
from hilbench_annotate.vocabulary import Role

from ..models import (
    FailureLabel,
    LabellingRun,
    ModelEndpoint,
    TaskPass,
    TaxonomyEntry,
)
from ..runner import Endpoint, complete

PROMPT_VERSION = "failure-rubric-1"
MAX_TRAJECTORY_CHARS = 24_000

DEFAULT_TAXONOMY = [
    (
        "dimension",
        "tool_use",
        "Tool use",
        "The agent selects the wrong tool, or calls the right one with wrong parameters.",
        "Calling get_table_info on a table that does not exist; malformed SQL to execute_sql.",
    ),
    (
        "dimension",
        "alignment",
        "Alignment",
        "The agent pursues the wrong objective, or fabricates information to finish the task.",
        "Silently dropping a requirement; mapping a concept to a column that does not exist.",
    ),
    (
        "dimension",
        "logic",
        "Logic",
        "The agent reasons incorrectly from correct premises: wrong beliefs, poor "
        "self-evaluation, incomplete execution or a flawed strategy.",
        "Declaring the task done although the reasoning is wrong; stalling after a partial fix.",
    ),
    (
        "mode",
        "completion",
        "Completion",
        "The agent explores but never makes the critical call, spending its budget in "
        "analysis loops.",
        "Never calling execute_sql or submit_sql; running out of turns while reading schemas.",
    ),
    (
        "mode",
        "accuracy",
        "Accuracy",
        "The right kind of action, done wrongly: hallucinated tools, malformed SQL, wrong "
        "columns or tables, wrong values.",
        "A query on a misspelled column; filtering on the wrong status code.",
    ),
    (
        "mode",
        "strategy",
        "Strategy",
        "A wrong plan: the wrong sequence of steps, or decomposing the task around the wrong "
        "goal with high confidence.",
        "Answering a different question than asked; never asking although a blocker surfaced.",
    ),
    (
        "mode",
        "self_assessment",
        "Self-assessment",
        "The agent sees evidence that its output is wrong, or says the task is infeasible, "
        "and submits anyway.",
        "Submitting an empty result after reasoning it is impossible; resubmitting after "
        "failed tests.",
    ),
]

SYSTEM_PROMPT = """\
You label why an AI agent failed a task, using a two-axis taxonomy: the capability dimension \
in which the failure occurred and the failure mode. Read the rubric, then the agent's \
trajectory (its messages, tool calls and their outputs) and the reason the pass failed. \
Choose exactly one dimension and one mode, by their keys.

Answer with a single JSON object and nothing else:
{"reasoning": "<one or two sentences>", "dimension": "<dimension key>", "mode": "<mode key>"}"""


def taxonomy(project: Project) -> list[TaxonomyEntry]:
    """The project's taxonomy, the paper's defaults until a lead changes them (stored when the
    project is made: ``evaluation.apps``)."""
    return list(TaxonomyEntry.objects.filter(project=project))


def taxonomy_ensure(project: Project) -> list[TaxonomyEntry]:
    """Store the paper's default taxonomy for a project that has none (when it is made)."""
    entries = taxonomy(project)
    if entries:
        return entries
    with transaction.atomic():
        for position, (axis, key, name, definition, examples) in enumerate(DEFAULT_TAXONOMY):
            TaxonomyEntry.objects.get_or_create(
                project=project,
                axis=axis,
                key=key,
                defaults={
                    "name": name,
                    "definition": definition,
                    "examples": examples,
                    "position": position,
                },
            )
    return list(TaxonomyEntry.objects.filter(project=project))


def _keys(project: Project) -> tuple[list[str], list[str]]:
    entries = taxonomy(project)
    dims = [e.key for e in entries if e.axis == TaxonomyEntry.Axis.DIMENSION]
    modes = [e.key for e in entries if e.axis == TaxonomyEntry.Axis.MODE]
    return dims, modes


@transaction.atomic
def taxonomy_update(*, project: Project, actor, entries: dict[int, dict]) -> None:
    """``entries``: entry id -> {name, definition, examples}. Keys stay, so labels keep
    their meaning; a new wording gives the LLM rubric a new version."""
    require_role(actor, project, Role.LEAD, action="do this")
    known = {e.pk: e for e in taxonomy(project)}
    for pk, fields in entries.items():
        entry = known.get(pk)
        if entry is None:
            raise DomainError(f"The taxonomy has no entry {pk}.")
        name = (fields.get("name") or "").strip()
        definition = (fields.get("definition") or "").strip()
        if not name or not definition:
            raise DomainError(f"{entry.key}: a name and a definition are required.")
        TaxonomyEntry.objects.filter(pk=pk).update(
            name=name[:80], definition=definition, examples=(fields.get("examples") or "").strip()
        )
    event_record(project_id=project.pk, task_id=None, actor=actor, kind="taxonomy_updated")


def _failed_pass(task_pass: TaskPass) -> None:
    if task_pass.resolved:
        raise DomainError("Only failed passes are labelled; this pass resolved its task.")


@transaction.atomic
def failure_label_set(
    *, task_pass: TaskPass, actor, dimension: str, mode: str, note: str = ""
) -> FailureLabel:
    """A person's label of a failed pass; labelling again replaces their own label."""
    project = task_pass.run.project
    require_role(actor, project, *READER_ROLES, action="label failures")
    _failed_pass(task_pass)
    dims, modes = _keys(project)
    if dimension not in dims or mode not in modes:
        raise DomainError(
            f"Choose a dimension of {', '.join(dims)} and a mode of {', '.join(modes)}."
        )
    label, _ = FailureLabel.objects.update_or_create(
        task_pass=task_pass,
        labeller=actor,
        defaults={"dimension": dimension, "mode": mode, "note": note.strip()[:4000]},
    )
    event_record(
        project_id=project.pk,
        task_id=task_pass.task_id,
        actor=actor,
        kind="failure_labelled",
        task_pass=task_pass.pk,
        dimension=dimension,
        mode=mode,
    )
    return label


# --- LLM pre-labelling ------------------------------------------------------------------


def rubric(project: Project) -> tuple[str, str]:
    """(rubric text, version): the version changes whenever the rubric's wording does."""
    entries = taxonomy(project)
    parts = []
    for axis, title in TaxonomyEntry.Axis.choices:
        parts.append(f"## {title}s")
        for e in entries:
            if e.axis == axis:
                parts.append(f"- {e.key} ({e.name}): {e.definition}")
                if e.examples:
                    parts.append(f"  Examples: {e.examples}")
    text = "\n".join(parts)
    digest = hashlib.sha256((SYSTEM_PROMPT + text).encode()).hexdigest()[:10]
    return text, f"{PROMPT_VERSION}:{digest}"


def _trajectory_text(task_pass: TaskPass) -> str:
    steps = task_pass.trajectory.steps if hasattr(task_pass, "trajectory") else []
    lines = []
    for n, step in enumerate(steps, start=1):
        head = f"[{n}] {step.get('role')}"
        if step.get("tool"):
            head += f" → {step['tool']}({json.dumps(step.get('tool_input'))[:500]})"
        lines.append(head)
        if step.get("content"):
            lines.append(str(step["content"])[:1500])
        if step.get("tool_output") is not None:
            lines.append("output: " + str(step["tool_output"])[:1500])
    text = "\n".join(lines)
    if len(text) > MAX_TRAJECTORY_CHARS:
        half = MAX_TRAJECTORY_CHARS // 2
        text = text[:half] + "\n[… middle of the trajectory left out …]\n" + text[-half:]
    return text


def _parse(content: str, dims: list[str], modes: list[str]) -> dict:
    data = extract_json(content)
    if not isinstance(data, dict):
        raise ValueError("the reply is not a JSON object")
    if data.get("dimension") not in dims or data.get("mode") not in modes:
        raise ValueError(
            f"dimension must be one of {dims} and mode one of {modes}: {snippet(content)}"
        )
    return data


def llm_label(*, endpoint: Endpoint, rubric_text: str, task_pass: TaskPass, dims, modes) -> dict:
    """One pass's label from the endpoint; malformed replies are retried with a correction."""
    failure = task_pass.error or (task_pass.detail.get("score") or {}).get("reason", "")
    messages = [
        {"role": "system", "content": SYSTEM_PROMPT + "\n\n# Rubric\n" + rubric_text},
        {
            "role": "user",
            "content": (
                f"Task mode: {task_pass.mode}. The pass failed"
                + (f": {failure}" if failure else ".")
                + "\n\n# Trajectory\n"
                + (_trajectory_text(task_pass) or "(no trajectory was recorded)")
            ),
        },
    ]
    problems = []
    for _attempt in range(3):
        reply = complete(endpoint, messages, max_tokens=400)
        content = reply.message.get("content") or ""
        try:
            return _parse(content, dims, modes)
        except ValueError as error:
            problems.append(str(error))
            messages += [
                {"role": "assistant", "content": content},
                {
                    "role": "user",
                    "content": f"That could not be used: {error}. Answer with the JSON only.",
                },
            ]
    raise ChatError("malformed labels 3 times: " + "; ".join(problems))


@transaction.atomic
def labelling_run_start(
    *, project: Project, actor, endpoint: ModelEndpoint, pass_ids: list[int] | None = None
) -> LabellingRun:
    require_role(actor, project, Role.LEAD, action="do this")
    if endpoint.project_id != project.pk:
        raise DomainError("The endpoint belongs to another project.")
    failed = TaskPass.objects.filter(run__project=project, resolved=False)
    if pass_ids:
        failed = failed.filter(pk__in=pass_ids)
    ids = list(failed.order_by("pk").values_list("pk", flat=True))
    if not ids:
        raise DomainError("There is no failed pass to label.")
    _, version = rubric(project)
    run = LabellingRun.objects.create(
        project=project,
        endpoint=endpoint,
        model_name=endpoint.name,
        rubric_version=version,
        pass_ids=ids,
        total=len(ids),
        created_by=actor,
    )
    event_record(
        project_id=project.pk, task_id=None, actor=actor, kind="labelling_run_queued", run=run.pk
    )
    job_send(run)
    return run


def labelling_run_execute(*, run_id: int) -> None:
    if not job_claim(LabellingRun, run_id):
        return
    run = LabellingRun.objects.select_related("endpoint", "project").get(pk=run_id)
    if run.endpoint is None:
        job_fail(LabellingRun, run.pk, "The run's endpoint was deleted.")
        return
    rubric_text, version = rubric(run.project)
    if version != run.rubric_version:
        job_fail(
            LabellingRun, run.pk, "The taxonomy changed after the run was started; start another."
        )
        return
    dims, modes = _keys(run.project)
    endpoint = run.endpoint.client(max_turns=1)
    problems = []
    done = set(run.labels.values_list("task_pass_id", flat=True))
    todo = TaskPass.objects.filter(pk__in=run.pass_ids).exclude(pk__in=done).order_by("pk")
    for pass_id in todo.values_list("pk", flat=True):
        # One at a time: a trajectory can be tens of megabytes.
        task_pass = TaskPass.objects.select_related("trajectory").get(pk=pass_id)
        try:
            data = llm_label(
                endpoint=endpoint,
                rubric_text=rubric_text,
                task_pass=task_pass,
                dims=dims,
                modes=modes,
            )
        except ChatError as error:
            problems.append(f"pass {task_pass.pk}: {error}")
            continue
        try:
            with transaction.atomic():
                FailureLabel.objects.create(
                    task_pass=task_pass,
                    llm_run=run,
                    dimension=data["dimension"],
                    mode=data["mode"],
                    note=str(data.get("reasoning", ""))[:4000],
                )
                job_heartbeat(LabellingRun, run.pk, done=F("done") + 1)
        except IntegrityError:
            continue  # stored by an earlier delivery of this job
    job_finish(
        LabellingRun,
        run.pk,
        error="\n".join(problems)[:4000],
    )
