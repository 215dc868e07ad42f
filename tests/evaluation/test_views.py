"""Evaluation pages: roles, forms, the leaderboard CSV, htmx progress."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from evaluation.models import EvaluationRun, ModelEndpoint, SelectionPolicy
from evaluation.services import evaluation_run_execute, support_import

from .util import import_results

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def results(sql_task, lead, tmp_path):
    records = [
        {"task": sql_task.pk, "mode": mode, "pass": i, "resolved": mode == "full_info" or i == 3}
        for mode in ("baseline", "full_info")
        for i in (1, 2, 3)
    ]
    import_results(project=sql_task.project, actor=lead, records=records, model="model-a")
    scores = tmp_path / "scores.jsonl"
    scores.write_text(
        json.dumps(
            {"task": sql_task.pk, "score": 0.8, "correct": False, "correct_with_support": True}
        )
        + "\n"
    )
    support_import(project=sql_task.project, actor=lead, path=scores, model_name="model-a")
    return sql_task


def test_leaderboard_page_and_csv(client, results, author):
    client.force_login(author)
    page = client.get(reverse("evaluation-project", args=[results.project_id]))
    assert page.status_code == 200
    html = page.content.decode()
    assert "model-a" in html and "Delta-Burden curves" in html and "<polyline" in html
    assert "Register endpoint" not in html  # authors read; only leads run and import
    # Both pass@k columns are on the page, each named and defined.
    assert ">pass@1</th>" in html and ">unbiased pass@1</th>" in html
    assert "any of their first 1 passes" in html and "1 − C(n−c,1)/C(n,1)" in html
    assert 'id="pass-at-k-definitions"' in html
    csv_text = client.get(
        reverse("evaluation-leaderboard-csv", args=[results.project_id])
    ).content.decode()
    header, *rows = csv_text.strip().splitlines()
    assert header.startswith(
        "model,mode,tasks,passes,pass_at_1,pass_at_2,pass_at_3,"
        "pass_at_1_unbiased,pass_at_2_unbiased,pass_at_3_unbiased,ask_f1"
    )
    # baseline: 1 of 3 passes resolved (the third) -> the release's pass@1 0, pass@2 0,
    # pass@3 1; unbiased pass@1 1/3, pass@2 1 - C(2,2)/C(3,2) = 2/3, pass@3 1.
    assert rows[0].startswith("model-a,baseline,1,3,0.0000,0.0000,1.0000,0.3333,0.6667,1.0000")
    assert rows[1].startswith("model-a,full_info,1,3,1.0000,1.0000,1.0000,1.0000,1.0000,1.0000")
    # AUDBC of one flipping instance: Δ over k = 0, 1 is 0, 1; mean 0.5 over a gain of 1.
    assert rows[0].endswith(",0.5000")


def test_outsiders_and_harness_users_see_nothing(client, results, outsider, harness):
    for user in (outsider, harness):
        client.force_login(user)
        response = client.get(reverse("evaluation-project", args=[results.project_id]))
        assert response.status_code in (403, 404)


def test_a_lead_registers_an_endpoint_and_an_author_cannot(client, project, lead, author):
    data = {
        "name": "vllm",
        "base_url": "http://127.0.0.1:9/v1",
        "model": "llama",
        "api_key_env": "HILBENCH_MODEL_KEY_VLLM",
        "concurrency": 2,
        "timeout_s": 30,
        "max_turns": 12,
    }
    client.force_login(author)
    response = client.post(reverse("evaluation-endpoint-add", args=[project.pk]), data)
    assert response.status_code == 403 and not ModelEndpoint.objects.exists()
    client.force_login(lead)
    response = client.post(reverse("evaluation-endpoint-add", args=[project.pk]), data)
    assert response.status_code == 302
    endpoint = ModelEndpoint.objects.get()
    assert endpoint.api_key_env == "HILBENCH_MODEL_KEY_VLLM" and endpoint.concurrency == 2


def test_uploading_a_bad_results_file_shows_the_line(client, sql_task, lead):
    client.force_login(lead)
    upload = SimpleUploadedFile("r.jsonl", b'{"task": 1, "mode": "baseline"}\n')
    response = client.post(
        reverse("evaluation-results-upload", args=[sql_task.project_id]),
        {"file": upload, "model": "m"},
        follow=True,
    )
    assert "line 1: missing pass" in response.content.decode()
    assert not EvaluationRun.objects.exists()


def test_upload_then_progress_fragment_stops_polling(client, sql_task, lead):
    client.force_login(lead)
    line = json.dumps({"task": sql_task.pk, "mode": "baseline", "pass": 1, "resolved": True})
    response = client.post(
        reverse("evaluation-results-upload", args=[sql_task.project_id]),
        {"file": SimpleUploadedFile("r.jsonl", line.encode()), "model": "m"},
    )
    run = EvaluationRun.objects.get()
    assert response.url == reverse("evaluation-run", args=[run.pk])
    fragment = client.get(response.url, **HTMX)
    assert fragment.status_code == 200 and b"<html" not in fragment.content
    evaluation_run_execute(run_id=run.pk)
    fragment = client.get(response.url, **HTMX)
    assert fragment.status_code == 286 and b"Succeeded" in fragment.content


def test_policy_form_and_selection_page(client, results, lead):
    client.force_login(lead)
    client.post(
        reverse("evaluation-policy", args=[results.project_id]),
        {
            "k": 3,
            "full_info_min": 0.9,
            "baseline_max": 0.2,
            "min_models": 1,
            "min_models_reason": "A pilot: one model is licensed for now.",
        },
    )
    assert SelectionPolicy.objects.get().full_info_min == 0.9
    # model-a names no model: it counts only beside an identified one.
    records = [
        {"task": results.pk, "mode": mode, "pass": i, "resolved": mode == "full_info" or i == 3}
        for mode in ("baseline", "full_info")
        for i in (1, 2, 3)
    ]
    import_results(project=results.project, actor=lead, records=records, model="gpt-4o")
    page = client.get(reverse("evaluation-task-selection", args=[results.pk])).content.decode()
    # baseline solved at pass 3: pass@3 1.0 > 0.2 -> drop.
    assert "drop" in page and "baseline unbiased pass@3 1.00 &gt; 0.20" in page


def test_evaluation_page_query_count_does_not_grow(client, results, author, lead):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.force_login(author)
    url = reverse("evaluation-project", args=[results.project_id])

    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert client.get(url).status_code == 200
        return len(queries)

    def add_model(model: str) -> None:
        records = [
            {"task": results.pk, "mode": mode, "pass": i, "resolved": i == 2}
            for mode in ("baseline", "ask_human")
            for i in (1, 2, 3)
        ]
        import_results(project=results.project, actor=lead, records=records, model=model)

    add_model("model-b")  # ask_human passes too, so every kind of read is in the count
    before = count()
    add_model("model-c")
    add_model("model-d")
    assert count() == before


def test_evaluation_home_lists_only_projects_the_user_reads(client, project, author, harness):
    client.force_login(author)
    response = client.get(reverse("evaluation-home"))
    assert response.status_code == 302
    assert response.url == reverse("evaluation-project", args=[project.pk])
    client.force_login(harness)  # a machine user reads no evaluation page
    response = client.get(reverse("evaluation-home"))
    assert response.status_code == 200 and project.name not in response.content.decode()


def test_a_lead_starts_a_model_run_and_a_study_from_the_page(client, sql_task, lead):
    """Both forms answered 500 (TypeError in the view's form set-up) before the HTML
    permission matrix asked them as a lead."""
    from evaluation.models import SupportStudy

    endpoint = ModelEndpoint.objects.create(
        project=sql_task.project,
        name="local",
        base_url="http://127.0.0.1:9/v1",
        model="m",
        created_by=lead,
    )
    client.force_login(lead)
    project = sql_task.project.pk

    run = client.post(
        reverse("evaluation-run-start", args=[project]),
        {"endpoint": endpoint.pk, "tasks": str(sql_task.pk), "modes": ["baseline"], "passes": 2},
    )
    study = client.post(
        reverse("evaluation-study-start", args=[project]),
        {"endpoint": endpoint.pk, "tasks": str(sql_task.pk), "method": "direct_ask"},
    )

    started = EvaluationRun.objects.get(endpoint=endpoint)
    assert run.status_code == 302 and run["Location"] == reverse(
        "evaluation-run", args=[started.pk]
    )
    assert (started.passes, started.modes) == (2, ["baseline"])
    assert study.status_code == 302
    assert SupportStudy.objects.get(project=sql_task.project).method == "direct_ask"
