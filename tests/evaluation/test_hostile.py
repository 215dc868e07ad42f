"""What the review of the evaluation code found: hostile or odd input gets a clear refusal,
never a crash, and jobs are recovered."""

import json
import math
import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.urls import reverse
from django.utils import timezone

from evaluation.models import EvaluationRun, ModelEndpoint, SupportStudy, TaskPass
from evaluation.services import (
    endpoint_create,
    evaluation_run_execute,
    evaluation_run_start,
    results_import_start,
    support_study_execute,
    support_study_start,
)
from evaluation.support import verbalised_probability, yes_probability
from evaluation.trajectories import TrajectoryError, find_trajectory, parse_trajectory_text
from evaluation.viewer import csv_safe
from hilbench_annotate.chat import ChatError, ChatRetryable, chat_completion
from hilbench_annotate.errors import DomainError, ImportRefused

from .conftest import text_reply


def test_a_results_csv_that_is_not_utf8_is_refused(sql_task, lead, tmp_path):
    root = tmp_path / "r"
    root.mkdir()
    (root / "pass_level_metrics.csv").write_bytes(
        "model,task,mode,pass,resolved\nmodèle,1,baseline,1,1\n".encode("latin-1")
    )
    with pytest.raises(ImportRefused, match="pass_level_metrics.csv is not UTF-8 text"):
        results_import_start(project=sql_task.project, actor=lead, path=root)


def test_names_from_the_csv_cannot_leave_the_folder(tmp_path):
    secret = tmp_path / "secret" / "pass_1_trajectory.json"
    secret.parent.mkdir()
    secret.write_text("[]")
    base = tmp_path / "results"
    (base / "trajectories" / "baseline").mkdir(parents=True)
    found = find_trajectory(base, mode="baseline", model="../../..", task="secret", index=1)
    assert found is None


def test_trajectories_refuse_what_the_database_would(tmp_path):
    with pytest.raises(TrajectoryError, match="NaN is not a JSON number"):
        parse_trajectory_text('[{"role": "user", "time": NaN}]', name="t.json", jsonl=False)
    with pytest.raises(TrajectoryError, match=r"t\.jsonl line 2: a NUL character"):
        parse_trajectory_text('{"role": "a"}\n{"role": "b\\u0000"}', name="t.jsonl", jsonl=True)


def test_token_counts_are_bounded(sql_task, lead, tmp_path):
    path = tmp_path / "r.jsonl"
    line = {"task": sql_task.pk, "mode": "baseline", "pass": 1, "resolved": True, "tokens": 3e9}
    path.write_text(json.dumps(line) + "\n")
    with pytest.raises(ImportRefused, match="line 1: tokens must be a number from 0 to"):
        results_import_start(project=sql_task.project, actor=lead, path=path, model_name="m")


def test_duplicate_modes_do_not_break_progress(sql_task, lead, chat_server):
    endpoint = endpoint_create(
        project=sql_task.project, actor=lead, name="e", base_url=chat_server.url, model="m"
    )
    run = evaluation_run_start(
        project=sql_task.project,
        actor=lead,
        endpoint=endpoint,
        task_ids=[sql_task.pk],
        modes=["baseline", "baseline"],
        passes=3,
    )
    assert run.modes == ["baseline"] and run.total == 3


def test_log_probabilities_that_are_not_numbers_are_ignored():
    content = [
        {
            "token": "Yes",
            "top_logprobs": [
                "junk",
                {"token": "Yes", "logprob": 1e308},  # not a log-probability: capped at 0
                {"token": "No", "logprob": math.log(0.5)},
                {"token": "No", "logprob": "x"},
            ],
        }
    ]
    assert yes_probability({"content": content}) == pytest.approx(1 / 1.5)
    assert verbalised_probability("1.5") is None


def test_csv_cells_never_start_a_formula():
    assert csv_safe("=HYPERLINK(1)") == "'=HYPERLINK(1)"
    assert csv_safe("@SUM(A1)") == "'@SUM(A1)"
    assert csv_safe("gpt-x") == "gpt-x" and csv_safe(0.5) == 0.5


def test_a_study_whose_worker_died_is_taken_over(sql_task, lead, chat_server, settings):
    endpoint = endpoint_create(
        project=sql_task.project, actor=lead, name="e", base_url=chat_server.url, model="m"
    )
    study = support_study_start(
        project=sql_task.project,
        actor=lead,
        endpoint=endpoint,
        method="direct_ask",
        task_ids=[sql_task.pk],
    )
    # A worker claimed it and died before storing anything.
    SupportStudy.objects.filter(pk=study.pk).update(
        status="running", heartbeat_at=timezone.now() - timedelta(hours=2)
    )
    chat_server.script = [text_reply(t) for t in ("SELECT 1", "SELECT 1", "Yes", "0.9")]
    support_study_execute(study_id=study.pk)
    study.refresh_from_db()
    assert study.status == "succeeded" and study.records.count() == 1
    assert EvaluationRun.objects.count() == 0


# --- The workers never fetch internal addresses for a lead (issue 24, item 4) ---------------

SECRET = "s3cr3t-internal-token"


class FixedServer:
    """An HTTP server on 127.0.0.1 that answers every request with one fixed answer (an
    internal service, or an endpoint that redirects) and keeps the paths it was asked."""

    def __init__(self, status: int, body: bytes, headers: dict[str, str] | None = None):
        self.requests: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self):
                server.requests.append(self.path)
                self.send_response(status)
                for name, value in (headers or {"Content-Type": "application/json"}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _answer  # noqa: N815 - http.server's names

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def internal_service():
    server = FixedServer(200, json.dumps({"secret": SECRET}).encode())
    yield server
    server.close()


def _run_and_page(client, sql_task, lead, endpoint) -> str:
    run = evaluation_run_start(
        project=sql_task.project,
        actor=lead,
        endpoint=endpoint,
        task_ids=[sql_task.pk],
        modes=["baseline"],
        passes=1,
    )
    evaluation_run_execute(run_id=run.pk)
    run.refresh_from_db()
    stored = json.dumps(list(TaskPass.objects.filter(run=run).values()), default=str)
    assert SECRET not in stored and SECRET not in run.error
    client.force_login(lead)
    page = client.get(reverse("evaluation-run", args=[run.pk]))
    assert page.status_code == 200
    return page.content.decode()


@pytest.mark.parametrize(
    "base_url",
    [
        "http://127.0.0.1:{port}/v1",
        "http://localhost:{port}/v1",
        "http://[::1]:{port}/v1",
        "http://[::ffff:127.0.0.1]:{port}/v1",
        "http://169.254.169.254/v1",
        "http://10.0.0.1/v1",
    ],
)
def test_a_lead_cannot_register_an_internal_endpoint_by_default(
    client, project, lead, settings, internal_service, base_url
):
    settings.MODEL_ENDPOINT_HOSTS = []
    url = base_url.format(port=internal_service.port)
    client.force_login(lead)
    response = client.post(
        reverse("evaluation-endpoint-add", args=[project.pk]),
        {
            "name": "e",
            "base_url": url,
            "model": "m",
            "concurrency": 1,
            "timeout_s": 5,
            "max_turns": 3,
        },  # fmt: skip
        follow=True,
    )
    assert not ModelEndpoint.objects.exists()
    text = response.content.decode()
    assert "the app does not connect there" in text and "HILBENCH_MODEL_ENDPOINT_HOSTS" in text
    with pytest.raises(DomainError, match="a (loopback|link-local|private)"):
        endpoint_create(project=project, actor=lead, name="e", base_url=url, model="m")
    assert internal_service.requests == []


def test_an_endpoint_registered_before_is_refused_when_the_worker_connects(
    client, sql_task, lead, settings, internal_service
):
    # Registered when the operator allowed loopback, or written to the database directly.
    endpoint = ModelEndpoint.objects.create(
        project=sql_task.project,
        name="old",
        base_url=f"http://127.0.0.1:{internal_service.port}/v1",
        model="m",
        timeout_s=5,
        created_by=lead,
    )
    settings.MODEL_ENDPOINT_HOSTS = []
    page = _run_and_page(client, sql_task, lead, endpoint)
    assert internal_service.requests == []
    assert SECRET not in page and "loopback" in page


def test_a_redirect_from_an_allowed_host_to_an_internal_one_is_not_followed(
    client, sql_task, lead, settings, internal_service
):
    target = f"http://127.0.0.1:{internal_service.port}/v1/chat/completions"
    redirect = FixedServer(302, b"", {"Location": target})
    try:
        # The operator allows "localhost" by name; 127.0.0.1 (the same machine, another
        # name) is not on the list.
        settings.MODEL_ENDPOINT_HOSTS = ["localhost"]
        endpoint = endpoint_create(
            project=sql_task.project,
            actor=lead,
            name="e",
            base_url=f"http://localhost:{redirect.port}/v1",
            model="m",
            timeout_s=5,
        )
        page = _run_and_page(client, sql_task, lead, endpoint)
    finally:
        redirect.close()
    assert redirect.requests == ["/v1/chat/completions"]
    assert internal_service.requests == []
    assert SECRET not in page and "redirects are not followed" in page


def test_an_answer_that_is_not_a_chat_completion_is_not_shown(
    client, sql_task, lead, internal_service
):
    endpoint = endpoint_create(
        project=sql_task.project,
        actor=lead,
        name="e",
        base_url=f"http://127.0.0.1:{internal_service.port}/v1",  # allowed by conftest
        model="m",
        timeout_s=5,
    )
    page = _run_and_page(client, sql_task, lead, endpoint)
    assert internal_service.requests  # it answered, and its answer stayed out of the page
    assert SECRET not in page
    assert "not a chat completion (HTTP 200, application/json, " in page


@pytest.mark.parametrize(
    ("status", "body", "content_type", "shown", "error"),
    [
        (500, f"<html>{SECRET}</html>", "text/html", "HTTP 500 (text/html, 34 bytes)",
         ChatRetryable),
        (404, json.dumps({"detail": SECRET}), "application/json",
         "HTTP 404: (application/json", ChatError),
        (400, json.dumps({"error": {"message": "bad model"}, "x": SECRET}), "application/json",
         "HTTP 400: bad model", ChatError),
        (400, json.dumps({"error": "unknown model", "x": SECRET}), "application/json",
         "HTTP 400: unknown model", ChatError),
    ],
)  # fmt: skip
def test_error_answers_show_only_an_error_message(status, body, content_type, shown, error):
    server = FixedServer(status, body.encode(), {"Content-Type": content_type})
    try:
        with pytest.raises(error) as raised:
            chat_completion(
                base_url=f"http://127.0.0.1:{server.port}/v1",
                body={"model": "m", "messages": []},
                api_key_env=None,
                timeout_s=5,
                allowed_hosts=["127.0.0.1"],
            )
    finally:
        server.close()
    assert shown in str(raised.value) and SECRET not in str(raised.value)
