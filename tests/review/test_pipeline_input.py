"""Saving a project's review pipeline, from the pipeline editor and from
``PUT /api/projects/<id>/pipeline/``: one input schema (``PipelineIn``, which the page's form goes
through by ``review.forms.pipeline_typed`` / ``pipeline_input``), one service (``pipeline_update``).
The same input is accepted alike, and refused alike for the same reason, word for word — a
malformed or hostile form included: a clear message, a 400 (never a 500), nothing saved, and the
page shown again with what was typed. The workspace's Submit for review goes through ``SubmitIn``
as ``POST /api/tasks/<id>/submit`` does."""

import pytest
from django.contrib.messages import get_messages
from django.http import QueryDict
from django.urls import reverse

from hilbench_annotate import workflow
from review import selectors
from review.forms import pipeline_input, pipeline_typed
from review.models import ReviewLayer

from ..factories import TaskFactory

pytestmark = pytest.mark.django_db

VALID = {
    "layers": [
        {"name": "Self-check", "role": "author", "self_check": True, "checklist": ["Lint read"]},
        {"name": "Audit", "role": "auditor", "checklist": ["Exact", " "], "gates": ["lint_clean"]},
    ],
    "lock_minutes": 15,
    "reject_reasons": ["Broken", ""],
}


def _form(body: dict) -> dict:
    """``body`` as the pipeline editor posts it: one row of fields a layer, lines for lists."""
    form = {
        "layer": [str(i) for i in range(len(body["layers"]))],
        "lock_minutes": str(body["lock_minutes"]),
        "reject_reasons": "\n".join(body["reject_reasons"]),
    }
    for i, layer in enumerate(body["layers"]):
        form[f"layer-{i}-name"] = layer["name"]
        form[f"layer-{i}-role"] = layer["role"]
        if layer.get("self_check"):
            form[f"layer-{i}-self_check"] = "on"
        form[f"layer-{i}-checklist"] = "\n".join(layer.get("checklist", []))
        form[f"layer-{i}-gates"] = "\n".join(layer.get("gates", []))
    return form


def _saved(project) -> tuple:
    policy = selectors.policy_for(project=project)
    layers = [
        (x.position, x.name, x.role, x.self_check, x.checklist, x.gates)
        for x in ReviewLayer.objects.filter(project=project).order_by("position")
    ]
    return layers, policy.lock_minutes, policy.reject_reasons


def _by_page(client, user, project, form):
    client.force_login(user)
    return client.post(reverse("review-pipeline", args=[project.pk]), form)


def _said(response) -> str:
    return " ".join(str(m) for m in get_messages(response.wsgi_request))


def _by_api(api, user, project, body):
    api.force_authenticate(user)
    return api.put(reverse("api-pipeline", args=[project.pk]), body, format="json")


@pytest.fixture
def before(project, lead):
    selectors.pipeline_layers(project=project)  # the default pipeline, made on first read
    return _saved(project)


SAVED = (
    [
        (1, "Self-check", "author", True, ["Lint read"], []),
        (2, "Audit", "auditor", False, ["Exact"], ["lint_clean"]),
    ],
    15,
    ["Broken"],
)


def test_the_page_and_the_api_save_the_same_pipeline(client, api, project, lead, before):
    response = _by_page(client, lead, project, _form(VALID))
    assert response.status_code == 302
    assert _said(response) == "Pipeline saved."
    assert _saved(project) == SAVED

    ReviewLayer.objects.filter(project=project).delete()
    response = _by_api(api, lead, project, VALID)
    assert response.status_code == 200, response.content
    assert _saved(project) == SAVED


def test_the_form_is_read_as_the_apis_body():
    post = QueryDict(mutable=True)
    for key, value in _form(VALID).items():
        for one in value if isinstance(value, list) else [value]:
            post.appendlist(key, one)
    post.appendlist("layer", "2")  # a row ticked for removal: not sent
    post.update({"layer-2-name": "Old", "layer-2-role": "lead", "layer-2-delete": "on"})
    post.appendlist("layer", "3")  # the empty "add a layer" row: left out
    post["layer-1-gates"] = "lint_clean, "
    typed = pipeline_typed(post)
    assert [row["delete"] for row in typed["layers"]] == [False, False, True]
    read = pipeline_input(typed)
    assert [dict(layer) for layer in read["layers"]] == [
        {
            "name": "Self-check",
            "role": "author",
            "self_check": True,
            "checklist": ["Lint read"],
            "gates": [],
        },
        {
            "name": "Audit",
            "role": "auditor",
            "self_check": False,
            "checklist": ["Exact", ""],
            "gates": ["lint_clean"],
        },
    ]
    assert (read["lock_minutes"], read["reject_reasons"]) == (15, ["Broken"])
    # An emptied lock time is the default hour, as the page always read it.
    post["lock_minutes"] = ""
    assert pipeline_input(pipeline_typed(post))["lock_minutes"] == 60


def _layers(n: int) -> list[dict]:
    return [{"name": f"Layer {i}", "role": "reviewer"} for i in range(1, n + 1)]


BLANK_NAME = "This field may not be blank."
BAD_ROLE = '"boss" is not a valid choice.'
WHOLE = "The lock time is a whole number of minutes."
AT_LEAST_1 = "Ensure this value is greater than or equal to 1."
AT_MOST = "Ensure this value is less than or equal to 2147483647."


@pytest.mark.parametrize(
    "change,api_said,page_said",
    [
        # Refused by the schema: the API's field errors, the page's one line.
        ({"lock_minutes": "soon"}, {"lock_minutes": [WHOLE]}, WHOLE),
        ({"lock_minutes": "1.5"}, {"lock_minutes": [WHOLE]}, WHOLE),
        ({"lock_minutes": "-5"}, {"lock_minutes": [AT_LEAST_1]}, f"Lock time: {AT_LEAST_1}"),
        ({"lock_minutes": "0"}, {"lock_minutes": [AT_LEAST_1]}, f"Lock time: {AT_LEAST_1}"),
        ({"lock_minutes": "9" * 30}, {"lock_minutes": [AT_MOST]}, f"Lock time: {AT_MOST}"),
        (
            {"layers": [VALID["layers"][0], {"name": "Audit", "role": "boss"}]},
            {"layers": {"1": {"role": [BAD_ROLE]}}},
            f"Layer 2, role: {BAD_ROLE}",
        ),
        (
            {"layers": [{"name": "  ", "role": "lead", "checklist": ["Ready"]}]},
            {"layers": {"0": {"name": [BLANK_NAME]}}},
            f"Layer 1, name: {BLANK_NAME}",
        ),
        (
            {"layers": [{"name": "x" * 101, "role": "lead"}]},
            {"layers": {"0": {"name": ["Ensure this field has no more than 100 characters."]}}},
            "Layer 1, name: Ensure this field has no more than 100 characters.",
        ),
        # Refused by the service: its own words, on both doors.
        ({"layers": _layers(11)}, "A pipeline has between 1 and 10 layers.", None),
        (
            {"layers": [{"name": "Bot", "role": "harness"}]},
            "layer 1: role must be author, reviewer, auditor or lead",
            None,
        ),
        ({"reject_reasons": [" "]}, "give at least one reject reason", None),
        (
            {"layers": [{"name": "Sign-off", "role": "lead", "gates": ["no_such_check"]}]},
            "unknown automated checks “no_such_check”; known: “",
            None,
        ),
    ],
)
def test_the_page_and_the_api_refuse_the_same_input_for_the_same_reason(
    client, api, project, lead, before, change, api_said, page_said
):
    body = {**VALID, **change}

    response = _by_api(api, lead, project, body)
    assert response.status_code == 400, response.content
    if isinstance(api_said, dict):
        assert response.json() == api_said
    else:
        assert response.json()["detail"].startswith(api_said)
        page_said = response.json()["detail"]  # the service's refusal, word for word
    assert _saved(project) == before

    form = _form(body)
    response = _by_page(client, lead, project, form)
    assert response.status_code == 400
    assert _said(response) == page_said
    assert _saved(project) == before
    # The form again as typed.
    page = response.content.decode()
    assert f'name="lock_minutes" value="{form["lock_minutes"]}"' in page
    for i, layer in enumerate(body["layers"]):
        if layer["name"].strip():
            assert f'name="layer-{i}-name" value="{layer["name"]}"' in page


def test_a_hostile_form_is_refused_plainly_and_saves_nothing(client, project, lead, before):
    form = {
        "layer": ["0", "../1", "0"],
        "layer-0-name": "Only",
        "layer-0-role": "lead",
        "layer-../1-name": "Sneaky",
        "layer-../1-role": "root",
        "lock_minutes": "1e9",
        "reject_reasons": "Broken",
    }
    response = _by_page(client, lead, project, form)
    assert response.status_code == 400
    assert _said(response) == (f'Layer 2, role: "root" is not a valid choice. {WHOLE}')
    assert _saved(project) == before


def test_a_member_who_is_not_a_lead_is_refused_alike(client, api, project, reviewer, before):
    refused = _by_api(api, reviewer, project, VALID)
    assert refused.status_code == 403
    response = _by_page(client, reviewer, project, _form(VALID))
    assert response.status_code == 403  # the 403 page, in the service's words
    assert refused.json()["detail"] in response.content.decode()
    assert _saved(project) == before


# --- the workspace's Submit for review ---------------------------------------------------------


@pytest.mark.parametrize(
    "data,error",
    [
        ({}, "This field is required."),
        ({"expected_version": "first"}, "A valid integer is required."),
        ({"expected_version": "-1"}, AT_LEAST_1),
    ],
)
def test_submit_is_refused_alike_on_the_page_and_in_the_api(
    client, api, project, author, data, error
):
    task = TaskFactory(project=project, author=author)
    status = task.status
    api.force_authenticate(author)
    response = api.post(reverse("api-task-submit", args=[task.pk]), data, format="json")
    assert response.status_code == 400
    assert response.json() == {"expected_version": [error]}

    client.force_login(author)
    response = client.post(reverse("workspace-submit", args=[task.pk]), data)
    assert response.status_code == 302
    assert _said(response) == f"Expected version: {error}"
    response = client.post(
        reverse("workspace-submit", args=[task.pk]), data, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 400
    assert f"Expected version: {error}" in response.content.decode()
    task.refresh_from_db()
    assert task.status == status != workflow.IN_REVIEW
