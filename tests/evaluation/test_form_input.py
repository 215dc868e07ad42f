"""The failure-label pages read their forms through ``evaluation.serializers`` (no API takes
these actions yet; one would validate with the same schema): malformed input is refused with
the field named, never a 500, and nothing is saved; valid input does what it did. A results
upload is read by ``ResultsIn`` on the page as in ``POST /api/projects/<id>/results``: the
same refusals, word for word."""

import pytest
from django.contrib.messages import get_messages
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from evaluation.models import (
    EvaluationRun,
    FailureLabel,
    LabellingRun,
    ModelEndpoint,
    TaxonomyEntry,
)
from evaluation.services import taxonomy

from .util import keep_by_pass_rate

pytestmark = pytest.mark.django_db


def _said(response) -> str:
    return " ".join(str(m) for m in get_messages(response.wsgi_request))


@pytest.fixture
def failed(sql_task, lead):
    (run,) = keep_by_pass_rate(sql_task)
    return run.task_passes.filter(resolved=False).first()


@pytest.mark.parametrize(
    "data,said",
    [
        ({"dimension": "logic", "mode": "strategy", "note": "a\x00b"}, "Note: Null characters"),
        ({"dimension": "logic\x00", "mode": "strategy"}, "Dimension: Null characters"),
        # Blank is the service's refusal, which names the keys to choose from.
        ({"mode": "strategy"}, "Choose a dimension of "),
    ],
)
def test_a_malformed_label_is_refused_naming_the_field(client, reviewer, failed, data, said):
    client.force_login(reviewer)
    response = client.post(reverse("evaluation-pass-label", args=[failed.pk]), data)
    assert response.status_code == 302 and said in _said(response)
    assert not FailureLabel.objects.exists()


def test_a_valid_label_is_saved(client, reviewer, failed):
    client.force_login(reviewer)
    data = {"dimension": "logic", "mode": "strategy", "note": "  looped  "}
    response = client.post(reverse("evaluation-pass-label", args=[failed.pk]), data)
    assert _said(response) == "Label saved."
    label = FailureLabel.objects.get()
    assert (label.dimension, label.mode, label.note) == ("logic", "strategy", "looped")


@pytest.mark.parametrize(
    "data,said",
    [
        ({}, "Endpoint: This field is required."),
        ({"endpoint": "abc"}, "Endpoint: A valid integer is required."),
        ({"endpoint": "99999999999"}, "Endpoint: Ensure this value is less than or equal to"),
    ],
)
def test_a_malformed_labelling_run_is_refused_naming_the_field(
    client, project, lead, failed, data, said
):
    client.force_login(lead)
    response = client.post(reverse("evaluation-llm-labelling", args=[project.pk]), data)
    assert response.status_code == 302 and _said(response).startswith(said)
    assert not LabellingRun.objects.exists()


def test_a_labelling_run_starts_on_the_projects_endpoint(client, project, lead, failed):
    endpoint = ModelEndpoint.objects.create(
        project=project, name="l", base_url="http://127.0.0.1:9/v1", model="m", created_by=lead
    )
    client.force_login(lead)
    url = reverse("evaluation-llm-labelling", args=[project.pk])
    assert client.post(url, {"endpoint": endpoint.pk + 1}).status_code == 404
    response = client.post(url, {"endpoint": str(endpoint.pk)})
    assert "queued" in _said(response)
    assert LabellingRun.objects.get().endpoint == endpoint


def test_a_malformed_taxonomy_is_refused_naming_the_row_and_field(client, project, lead):
    entries = taxonomy(project)
    before = list(TaxonomyEntry.objects.order_by("pk").values_list("name", "definition"))
    client.force_login(lead)
    url = reverse("evaluation-taxonomy", args=[project.pk])
    second = entries[1]
    response = client.post(url, {f"name-{entries[0].pk}": "New", f"name-{second.pk}": "x\x00"})
    assert response.status_code == 400
    assert _said(response) == "Row 2, name: Null characters are not allowed."
    after = list(TaxonomyEntry.objects.order_by("pk").values_list("name", "definition"))
    assert after == before
    # A blank definition is the service's refusal, in its words, with the same 400.
    response = client.post(url, {f"definition-{second.pk}": " "})
    assert response.status_code == 400
    assert _said(response) == f"{second.key}: a name and a definition are required."


def test_a_valid_taxonomy_is_saved(client, project, lead):
    entry = taxonomy(project)[0]
    client.force_login(lead)
    url = reverse("evaluation-taxonomy", args=[project.pk])
    response = client.post(url, {f"name-{entry.pk}": " Renamed ", f"examples-{entry.pk}": "e"})
    assert response.status_code == 302
    entry.refresh_from_db()
    assert (entry.name, entry.examples) == ("Renamed", "e")


# --- results upload: the page and ``POST /api/projects/<id>/results``, one schema (ResultsIn) --


def _upload(data: dict) -> dict:
    """A fresh upload each time: a file is read once."""
    return {k: SimpleUploadedFile("r.jsonl", v) if k == "file" else v for k, v in data.items()}


@pytest.mark.parametrize(
    "data,said,errors",
    [
        ({"model": "m"}, "No file was submitted.", {"file": ["No file was submitted."]}),
        (
            {"file": b"{}\n", "model": "m" * 201},
            "Model: Ensure this field has no more than 200 characters.",
            {"model": ["Ensure this field has no more than 200 characters."]},
        ),
    ],
)
def test_the_page_and_the_api_refuse_a_malformed_upload_in_the_same_words(
    client, api, sql_task, lead, data, said, errors
):
    url = reverse("evaluation-results-upload", args=[sql_task.project_id])
    client.force_login(lead)
    response = client.post(url, _upload(data))
    api.force_authenticate(lead)
    answer = api.post(
        reverse("api-results", args=[sql_task.project_id]), _upload(data), format="multipart"
    )
    assert response.status_code == 302 and _said(response) == said
    assert (answer.status_code, answer.json()) == (400, errors)
    assert not EvaluationRun.objects.exists()


def test_the_services_refusal_of_an_upload_is_the_same_on_the_page_and_in_the_api(
    client, api, sql_task, lead
):
    data = {"file": b'{"task": 1, "mode": "baseline"}\n', "model": "m"}
    client.force_login(lead)
    response = client.post(
        reverse("evaluation-results-upload", args=[sql_task.project_id]), _upload(data)
    )
    api.force_authenticate(lead)
    answer = api.post(
        reverse("api-results", args=[sql_task.project_id]), _upload(data), format="multipart"
    )
    assert answer.status_code == 400 and _said(response) == answer.json()["detail"]
    assert "line 1: missing pass" in _said(response)
    assert not EvaluationRun.objects.exists()
