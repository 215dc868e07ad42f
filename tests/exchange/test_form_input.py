"""Starting an export, from the Export page and from ``POST /api/exports/``: one input schema
(``ExportIn``, which the page's form goes through by ``exchange.forms.export_typed`` /
``export_input``), one service (``bundle_export_start``). The same selection is accepted
alike and refused alike, word for word: a clear message, a 400 (never a 500), nothing saved,
and the page shown again with what was typed. An import's options are read by one schema
(``ImportOptionsIn``) from the Import page's form and the records API's query alike."""

import pytest
from django.contrib.messages import get_messages
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils.html import escape
from django.utils.http import urlencode

from exchange.models import ExportJob, ImportJob

from ..factories import TaskFactory

pytestmark = pytest.mark.django_db


def _by_page(client, user, form) -> tuple[int, str, str]:
    client.force_login(user)
    response = client.post(reverse("export-list"), form)
    said = " ".join(str(m) for m in get_messages(response.wsgi_request))
    return response.status_code, said, response.content.decode()


def _by_api(api, user, body) -> tuple[int, dict]:
    api.force_authenticate(user)
    response = api.post(reverse("api-export-start"), body, format="json")
    return response.status_code, response.json()


@pytest.fixture
def task(project, author, lead):
    return TaskFactory(project=project, author=author)


@pytest.mark.parametrize(
    "form,body,said,errors",
    [
        ({}, {}, "Project: This field is required.", {"project": ["This field is required."]}),
        (
            {"tasks": "1, x"},
            {"tasks": [1, "x"]},
            "Task 2: A valid integer is required.",
            {"tasks": {"1": ["A valid integer is required."]}},
        ),
        (
            {"tags": "ok " + "t" * 41},
            {"tags": ["ok", "t" * 41]},
            "Tag 2: Ensure this field has no more than 40 characters.",
            {"tags": {"1": ["Ensure this field has no more than 40 characters."]}},
        ),
        (
            {"tasks": "9" * 20},
            {"tasks": ["9" * 20]},
            "Task 1: Ensure this value is less than or equal to 2147483647.",
            {"tasks": {"0": ["Ensure this value is less than or equal to 2147483647."]}},
        ),
        (
            {"draft": "perhaps"},
            {"draft": "perhaps"},
            "Draft: Must be a valid boolean.",
            {"draft": ["Must be a valid boolean."]},
        ),
    ],
)
def test_the_page_and_the_api_refuse_a_malformed_export_in_the_same_words(
    client, api, project, lead, task, form, body, said, errors
):
    if "project" not in errors:
        form, body = {"project": str(project.pk), **form}, {"project": project.pk, **body}
    status, page_said, html = _by_page(client, lead, form)
    api_status, api_errors = _by_api(api, lead, body)
    assert (status, page_said) == (400, said)
    assert (api_status, api_errors) == (400, errors)
    assert not ExportJob.objects.exists()
    for name in ("tasks", "tags"):  # the form again, as typed
        assert name not in form or f'value="{form[name]}"' in html


@pytest.mark.parametrize(
    "form,body",
    [
        ({"tasks": "999999"}, {"tasks": [999999]}),
        ({"states": ["nope"]}, {"states": ["nope"]}),
        ({"domain": "chess"}, {"domain": "chess"}),
    ],
)
def test_the_services_refusal_is_the_same_on_the_page_and_in_the_api(
    client, api, project, lead, task, form, body
):
    status, said, _ = _by_page(client, lead, {"project": project.pk, **form})
    api_status, api_body = _by_api(api, lead, {"project": project.pk, **body})
    assert status == api_status == 400
    assert said == api_body["detail"]
    assert not ExportJob.objects.exists()


def test_the_same_export_is_started_from_the_page_and_the_api(client, api, project, lead, task):
    form = {"project": project.pk, "tasks": f"{task.pk},", "draft": "on"}
    body = {"project": project.pk, "tasks": [task.pk], "draft": True}
    status, _, _ = _by_page(client, lead, form)
    api_status, _ = _by_api(api, lead, body)
    assert (status, api_status) == (302, 202)
    page_job, api_job = ExportJob.objects.order_by("pk")
    fields = ("selection", "draft", "reveal_reviewers", "allow_internet", "llm_judge")
    assert [getattr(page_job, f) for f in fields] == [getattr(api_job, f) for f in fields]
    assert page_job.selection == {
        "tasks": [task.pk],
        "states": [],
        "domain": "",
        "tags": [],
    }


def test_a_project_id_out_of_range_is_not_found_on_the_page_and_in_the_api(client, api, lead):
    assert _by_page(client, lead, {"project": "9" * 20})[0] == 404
    assert _by_api(api, lead, {"project": "9" * 20})[0] == 404


# --- an import's options: the Import page's form and the records API's query ---------------


def _import_by_page(client, user, project, **options) -> tuple[int, str]:
    client.force_login(user)
    form = {
        "kind": "bird",
        "project": project.pk,
        "questions": SimpleUploadedFile("dev.json", b"[]"),
        **options,
    }
    response = client.post(reverse("import-list"), form)
    return response.status_code, response.content.decode()


def _import_by_api(api, user, project, **options) -> tuple[int, dict]:
    api.force_authenticate(user)
    url = reverse("api-records-import", args=[project.pk]) + "?" + urlencode(options)
    response = api.generic("POST", url, b"[]", content_type="application/json")
    return response.status_code, response.json()


@pytest.mark.parametrize(
    "options,said,errors",
    [
        (
            {"skip_missing_databases": "perhaps"},
            "Skip missing databases: Must be a valid boolean.",
            {"skip_missing_databases": ["Must be a valid boolean."]},
        ),
        (
            {"skip_missing_databases": "on", "repo_url": "https://x/" + "r" * 500},
            "Repository URL: Ensure this field has no more than 500 characters.",
            {"repo_url": ["Ensure this field has no more than 500 characters."]},
        ),
    ],
)
def test_the_import_page_and_api_refuse_malformed_options_in_the_same_words(
    client, api, project, author, options, said, errors
):
    status, html = _import_by_page(client, author, project, **options)
    api_status, body = _import_by_api(api, author, project, **options)
    assert status == 200 and escape(said) in html  # the form again, the refusal above it
    assert (api_status, body) == (400, errors)
    assert not ImportJob.objects.exists()


def test_an_empty_or_ticked_skip_is_read_alike(api, client, project, author):
    assert _import_by_api(api, author, project, skip_missing_databases="")[0] == 202
    assert _import_by_api(api, author, project, skip_missing_databases="true")[0] == 202
    assert _import_by_page(client, author, project, skip_missing_databases="on")[0] == 302
    assert [job.options["skip_missing_databases"] for job in ImportJob.objects.order_by("pk")] == [
        False,
        True,
        True,
    ]
