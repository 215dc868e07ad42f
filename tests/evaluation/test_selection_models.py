"""The pass-rate gate counts distinct models (issue 43, item 5): two by default, by the model
each run's endpoint serves or the name given at import; one model's runs count once; a model
with no recorded identity never counts alone; a lead may ask for fewer only with a reason,
which the gate's verdict then carries."""

import importlib

import pytest
from django.apps import apps
from django.urls import reverse

from evaluation.models import EvaluationRun, ModelEndpoint, SelectionPolicy, TaskPass
from evaluation.models import model_identity as identity_of
from evaluation.selectors import selection_policy, task_selection
from evaluation.services import endpoint_create, selection_policy_update
from hilbench_annotate.errors import DomainError
from hilbench_annotate.gates import gate_results
from hilbench_annotate.models import TaskEvent
from hilbench_annotate.selectors import revision_current

from ..factories import ProjectFactory
from .util import import_results, keep_by_pass_rate

REASON = "A pilot batch: only one model is licensed for this project."


def _kept_records(task) -> list[dict]:
    """Solved 3/3 with full information, 0/3 without."""
    return [
        {"task": task.pk, "mode": mode, "pass": i, "resolved": mode == "full_info"}
        for mode in ("baseline", "full_info")
        for i in (1, 2, 3)
    ]


def _endpoint(project, lead, name: str, model: str) -> ModelEndpoint:
    return endpoint_create(
        project=project, actor=lead, name=name, base_url="http://127.0.0.1:9/v1", model=model
    )


def _endpoint_run(task, endpoint, *, source=EvaluationRun.Source.BUILTIN) -> EvaluationRun:
    """A finished run of ``endpoint`` (the built-in runner's or Harbor's) that keeps ``task``,
    its passes as the worker stores them."""
    run = EvaluationRun.objects.create(
        project=task.project,
        source=source,
        endpoint=endpoint,
        model_name=endpoint.name,
        modes=["baseline", "full_info"],
        passes=3,
        task_ids=[task.pk],
        total=6,
        done=6,
        status=EvaluationRun.Status.SUCCEEDED,
        created_by=endpoint.created_by,
    )
    revision = revision_current(task=task)
    TaskPass.objects.bulk_create(
        TaskPass(
            run=run,
            task=task,
            revision=revision,
            mode=record["mode"],
            index=record["pass"],
            resolved=record["resolved"],
            blocker_count=3,
        )
        for record in _kept_records(task)
    )
    return run


def _gate(task) -> tuple[bool, str]:
    ((_name, green, message),) = gate_results(task, ["pass_rate"])
    return green, message


@pytest.mark.parametrize(
    "name, identity",
    [
        ("gpt-4o", "gpt-4o"),
        ("openai/GPT-4o-2024-08-06", "gpt-4o"),
        ("anthropic:claude-3-5-sonnet-20241022", "claude-3-5-sonnet"),
        ("claude-3-5-sonnet-latest", "claude-3-5-sonnet"),
        ("meta-llama/Llama-3.3-70B-Instruct", "llama-3.3-70b-instruct"),
        ("hosted_vllm/Qwen/Qwen2.5-Coder-32B", "qwen2.5-coder-32b"),
        ("qwen2.5:7b", "qwen2.5:7b"),
        ("o1", "o1"),
        ("demo-synthetic-a", "demo-synthetic-a"),
        ("", None),
        ("   ", None),
        ("model", None),
        ("model-a", None),
        ("b", None),
        ("default", None),
        ("Local model", None),
        ("stand-in", None),
        ("standin", None),
        ("openai", None),
        ("n/a", None),
        ("1", None),
    ],
)
def test_a_models_identity_is_its_normalised_name_or_none(name, identity):
    assert identity_of(name) == identity


def test_a_new_project_asks_for_two_models(project):
    policy = selection_policy(project=project)
    assert policy.pk is None and policy.min_models == 2


def test_one_models_pass_rates_do_not_pass_the_gate_by_default(sql_task, lead):
    (run,) = keep_by_pass_rate(sql_task, beside=())
    selection = task_selection(task=sql_task)
    assert selection["decision"] == "undecided" and selection["min_models"] == 2
    assert selection["decided_by"] == []
    green, message = _gate(sql_task)
    assert not green
    assert message == (
        "undecided: 1 distinct model with 3 passes in both baseline and full_info on the "
        f"current revision: gpt-4o (run {run.pk}); 2 distinct models needed (runs of one "
        "served model count as one)"
    )


def test_two_runs_of_one_served_model_count_as_one(sql_task, lead):
    # Two endpoints serving one model (spelt differently), and an import of it too.
    first = _endpoint_run(sql_task, _endpoint(sql_task.project, lead, "azure", "gpt-4o"))
    second = _endpoint_run(
        sql_task,
        _endpoint(sql_task.project, lead, "openai", "openai/GPT-4o-2024-08-06"),
        source=EvaluationRun.Source.HARBOR,
    )
    (imported,) = import_results(
        project=sql_task.project, actor=lead, records=_kept_records(sql_task), model="GPT-4o"
    )
    selection = task_selection(task=sql_task)
    # Three leaderboard rows, one model: their passes pooled.
    assert [m["model"] for m in selection["models"]] == ["GPT-4o", "azure", "openai"]
    assert {m["identity"] for m in selection["models"]} == {"gpt-4o"}
    (model,) = selection["identities"]
    assert model["identity"] == "gpt-4o" and model["runs"] == [first.pk, second.pk, imported.pk]
    assert selection["decision"] == "undecided"
    green, message = _gate(sql_task)
    assert not green and "1 distinct model" in message and "2 distinct models needed" in message


def test_two_distinct_models_keep_and_the_gate_names_them(sql_task, lead):
    run = _endpoint_run(sql_task, _endpoint(sql_task.project, lead, "gpu-1", "Qwen/Qwen2.5-72B"))
    (imported,) = import_results(
        project=sql_task.project,
        actor=lead,
        records=_kept_records(sql_task),
        model="anthropic/claude-sonnet-4-20250514",
    )
    selection = task_selection(task=sql_task)
    assert selection["decision"] == "keep"
    assert selection["decided_by"] == [
        {
            "identity": "claude-sonnet-4",
            "models": ["anthropic/claude-sonnet-4-20250514"],
            "runs": [imported.pk],
        },
        {"identity": "qwen2.5-72b", "models": ["gpu-1"], "runs": [run.pk]},
    ]
    green, message = _gate(sql_task)
    assert green
    assert message.endswith(
        f"over 2 models: claude-sonnet-4 (run {imported.pk}), qwen2.5-72b (run {run.pk})"
    )


def test_a_drop_names_the_models_that_decided(sql_task, lead):
    keep_by_pass_rate(sql_task)
    solved = [{**r, "resolved": True} for r in _kept_records(sql_task)]
    import_results(project=sql_task.project, actor=lead, records=solved, model="gpt-4o")
    green, message = _gate(sql_task)
    assert not green and message.startswith("drop: baseline unbiased pass@3 0.50 > 0.34")
    assert "decided by 2 models: claude-sonnet-4 (run " in message and "gpt-4o (run " in message


def test_lowering_to_one_model_needs_a_reason_then_the_gate_can_pass(sql_task, lead):
    keep_by_pass_rate(sql_task, beside=())
    project = sql_task.project
    thresholds = {"k": 3, "full_info_min": 0.67, "baseline_max": 0.34}
    for reason in ("", "   ", "because"):
        with pytest.raises(DomainError, match="say why"):
            selection_policy_update(
                project=project, actor=lead, min_models=1, min_models_reason=reason, **thresholds
            )
    assert not SelectionPolicy.objects.exists()
    assert not _gate(sql_task)[0]

    selection_policy_update(
        project=project, actor=lead, min_models=1, min_models_reason=REASON, **thresholds
    )
    policy = SelectionPolicy.objects.get()
    assert (policy.min_models, policy.min_models_reason) == (1, REASON)
    assert policy.min_models_lowered_by == lead and policy.min_models_lowered_at
    event = TaskEvent.objects.filter(kind="selection_policy_updated").latest("pk")
    assert event.data["min_models_reason"] == REASON

    selection = task_selection(task=sql_task)
    assert selection["decision"] == "keep" and selection["min_models"] == 1
    assert selection["lowered"]["reason"] == REASON and selection["lowered"]["by"] == "lead"
    assert selection["lowered"]["at"]
    green, message = _gate(sql_task)
    assert green
    assert f"models needed lowered to 1 by a lead: “{REASON}”" in message
    assert "over 1 model: gpt-4o (run " in message

    # Another threshold saved with the same lowering keeps who lowered it and when.
    first_at = policy.min_models_lowered_at
    selection_policy_update(
        project=project,
        actor=lead,
        min_models=1,
        min_models_reason=REASON,
        **{**thresholds, "k": 2},
    )
    assert SelectionPolicy.objects.get().min_models_lowered_at == first_at
    # Back to two: the record is cleared and one model no longer decides.
    selection_policy_update(project=project, actor=lead, **thresholds)
    policy = SelectionPolicy.objects.get()
    assert (policy.min_models, policy.min_models_reason, policy.min_models_lowered_by) == (
        2,
        "",
        None,
    )
    assert task_selection(task=sql_task)["decision"] == "undecided"


def test_a_policy_below_two_without_a_reason_decides_as_two(sql_task, lead):
    # Written past the service (an old row, a shell): no reason, so the default holds.
    keep_by_pass_rate(sql_task, beside=())
    SelectionPolicy.objects.create(project=sql_task.project, min_models=1)
    selection = task_selection(task=sql_task)
    assert selection["min_models"] == 2 and selection["lowered"] is None
    assert selection["decision"] == "undecided"


def test_a_model_with_no_recorded_identity_never_counts_alone(sql_task, lead):
    project = sql_task.project
    selection_policy_update(
        project=project,
        actor=lead,
        k=3,
        full_info_min=0.67,
        baseline_max=0.34,
        min_models=1,
        min_models_reason=REASON,
    )
    # A generic import name, a stand-in endpoint: even with one model asked for, not alone.
    (generic,) = import_results(
        project=project, actor=lead, records=_kept_records(sql_task), model="model-a"
    )
    standin = _endpoint_run(sql_task, _endpoint(project, lead, "loopback", "stand-in"))
    selection = task_selection(task=sql_task)
    assert selection["decision"] == "undecided"
    (unknown,) = selection["identities"]  # the two are pooled: they may be one model
    assert unknown["identity"] is None and unknown["runs"] == [generic.pk, standin.pk]
    assert unknown["complete"] and not unknown["counted"]
    green, message = _gate(sql_task)
    assert not green
    assert "a model with no recorded identity counts only beside an identified one" in message
    assert f"no recorded identity (loopback, model-a; runs {generic.pk}, {standin.pk})" in message

    # A run whose endpoint was removed has no recorded identity either.
    gone = _endpoint_run(sql_task, _endpoint(project, lead, "gone", "gpt-4o"))
    ModelEndpoint.objects.filter(name="gone").delete()
    assert gone.pk in task_selection(task=sql_task)["identities"][0]["runs"]
    assert task_selection(task=sql_task)["decision"] == "undecided"


def test_an_unidentified_model_counts_beside_an_identified_one(sql_task, lead):
    # Two needed: gpt-4o and the runs of no recorded identity (as one more model).
    keep_by_pass_rate(sql_task, model="gpt-4o", beside=("model-a", "default"))
    selection = task_selection(task=sql_task)
    assert selection["decision"] == "keep"
    assert [m["identity"] for m in selection["decided_by"]] == ["gpt-4o", None]
    assert selection["decided_by"][1]["models"] == ["default", "model-a"]


def test_an_endpoint_is_registered_with_the_model_it_serves(client, project, lead):
    with pytest.raises(DomainError, match="Name the model"):
        _endpoint(project, lead, "nameless", "  ")
    assert _endpoint(project, lead, "gpu", "  meta-llama/Llama-3.3-70B-Instruct ").model == (
        "meta-llama/Llama-3.3-70B-Instruct"
    )
    client.force_login(lead)
    url = reverse("evaluation-endpoint-add", args=[project.pk])
    form = {"base_url": "http://127.0.0.1:9/v1", "concurrency": 1, "timeout_s": 60, "max_turns": 12}
    response = client.post(url, {**form, "name": "local", "model": "default"}, follow=True)
    page = response.content.decode()
    assert "names no model" in page  # the warning after registering it
    endpoints = page[page.index('id="endpoints"') :]
    endpoints = endpoints[: endpoints.index("</ul>")]
    assert "counted as <strong>llama-3.3-70b-instruct</strong>" in endpoints
    assert "no recorded identity: counts only beside an identified model" in endpoints
    # Without a model the form refuses it.
    response = client.post(url, {**form, "name": "blank", "model": ""}, follow=True)
    assert "model: This field is required." in response.content.decode()
    assert not ModelEndpoint.objects.filter(name="blank").exists()


def test_the_pages_say_which_models_decided_and_who_lowered_it(client, sql_task, lead, author):
    keep_by_pass_rate(sql_task, beside=())
    client.force_login(lead)
    policy_url = reverse("evaluation-policy", args=[sql_task.project_id])
    form = {"k": 3, "full_info_min": 0.67, "baseline_max": 0.34, "min_models": 1}
    client.post(policy_url, form)  # no reason: refused
    assert not SelectionPolicy.objects.exists()
    client.post(policy_url, {**form, "min_models_reason": REASON})
    assert SelectionPolicy.objects.get().min_models_lowered_by == lead

    client.force_login(author)
    page = client.get(reverse("evaluation-task-selection", args=[sql_task.pk])).content.decode()
    decided = page[page.index('id="selection-decided-by"') :]
    assert "Decided by 1 model: <strong>gpt-4o</strong>" in decided
    lowered = page[page.index('id="models-lowered"') :]
    assert "to 1 by lead on " in lowered and REASON in lowered
    evaluation = client.get(reverse("evaluation-project", args=[sql_task.project_id]))
    html = evaluation.content.decode()
    assert 'id="models-needed">1 distinct model<' in html
    assert REASON in html[html.index('id="models-lowered"') :]


def test_existing_policies_at_one_model_become_two():
    # As the migration finds them: 1 (the old default, no reason could be given) and 3.
    migration = importlib.import_module("evaluation.migrations.0008_selection_two_models")
    old = SelectionPolicy.objects.create(project=ProjectFactory(slug="old"), min_models=1)
    more = SelectionPolicy.objects.create(project=ProjectFactory(slug="more"), min_models=3)
    assert migration.two_models_where_one_was_the_default(apps, None) == 1
    old.refresh_from_db()
    more.refresh_from_db()
    assert (old.min_models, more.min_models) == (2, 3)


pytestmark = pytest.mark.django_db
