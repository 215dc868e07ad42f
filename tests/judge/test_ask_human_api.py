"""POST /api/ask_human for evaluation runs: token auth, logging, duplicates, the answer cap,
and judge failures reported as errors — with an OpenAI-compatible judge endpoint played by a
real HTTP server on loopback."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from hilbench_annotate import services as core
from hilbench_annotate.services.tokens import api_token_create
from judge.models import AskHumanCall

from ..factories import TaskFactory

pytestmark = pytest.mark.django_db

BLOCKERS = [
    {
        "key": "boom_year",
        "type": "question",
        "subtype": "timeframe_ambiguity",
        "description": "The question names the boom year without saying which year it is.",
        "resolution": "The boom year is 1997.",
        "trigger_questions": [
            "Which year is the boom year?",
            "What dates bound the boom year?",
            "Which calendar year counts as the boom year?",
        ],
    },
    {
        "key": "clean_status",
        "type": "question",
        "subtype": "underspecified_concepts",
        "description": "Nothing says which loan status means a clean settlement.",
        "resolution": "Clean settlement is loan.status = 'A'.",
        "trigger_questions": [
            "Which status means settled cleanly?",
            "How is a clean settlement coded?",
            "What status value marks a clean loan?",
        ],
    },
]


class Endpoint:
    """Scripted judge replies: a list of (status, blocker_key or raw text)."""

    def __init__(self):
        self.replies: list[tuple[int, object]] = []
        self.requests: list[dict] = []

    def handler(self):
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length", 0))
                endpoint.requests.append(json.loads(self.rfile.read(length)))
                status, reply = endpoint.replies.pop(0) if endpoint.replies else (200, None)
                content = (
                    reply
                    if isinstance(reply, str) and reply.startswith("RAW:")
                    else json.dumps({"reasoning": "scripted", "blocker_key": reply})
                )
                body = json.dumps(
                    {
                        "choices": [
                            {
                                "message": {
                                    "role": "assistant",
                                    "content": content.removeprefix("RAW:"),
                                }
                            }
                        ]
                    }
                )
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(body.encode())

            def log_message(self, *args):
                pass

        return Handler


@pytest.fixture
def endpoint(settings):
    endpoint = Endpoint()
    server = ThreadingHTTPServer(("127.0.0.1", 0), endpoint.handler())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    settings.JUDGE_BACKEND = "llm"
    settings.JUDGE_LLM_BASE_URL = f"http://127.0.0.1:{server.server_port}/v1"
    settings.JUDGE_LLM_TIMEOUT_S = 2
    yield endpoint
    server.shutdown()


@pytest.fixture
def task(project, author):
    task = TaskFactory(project=project, author=author)
    for blocker in BLOCKERS:
        core.blocker_create(task=task, actor=author, expected_version=task.version, **blocker)
    return task


@pytest.fixture
def harness_api(api, harness):
    _token, key = api_token_create(user=harness, name="eval")
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return api


def start(api, task):
    response = api.post(
        "/api/ask_human/runs", {"task": task.pk, "label": "model-x pass 1"}, format="json"
    )
    assert response.status_code == 201, response.content
    return response.json()["run"]


def ask(api, run, question):
    return api.post("/api/ask_human", {"run": run, "question": question}, format="json")


def test_answers_verbatim_logs_every_call_and_marks_duplicates(harness_api, task, endpoint):
    run = start(harness_api, task)
    endpoint.replies = [(200, "boom_year"), (200, None), (200, "boom_year")]

    first = ask(harness_api, run, "Which year is meant by the boom year?")
    second = ask(harness_api, run, "What is the weather like?")
    third = ask(harness_api, run, "Which calendar year is the boom year, exactly?")

    assert first.json() == {"response": "The boom year is 1997."}
    assert second.json() == {"response": "irrelevant question"}
    assert third.json() == {"response": "The boom year is 1997."}
    calls = list(AskHumanCall.objects.filter(run_id=run).values_list("blocker_key", "duplicate"))
    assert calls == [("boom_year", False), (None, False), ("boom_year", True)]
    # The judge never saw a resolution.
    sent = json.dumps(endpoint.requests)
    assert "1997" not in sent and "status = 'A'" not in sent


def test_the_same_question_is_judged_once(harness_api, task, endpoint):
    run = start(harness_api, task)
    endpoint.replies = [(200, "clean_status")]
    ask(harness_api, run, "Which status means a clean settlement?")
    again = ask(harness_api, run, "  which STATUS means a clean   settlement? ")
    assert again.json()["response"] == "Clean settlement is loan.status = 'A'."
    assert len(endpoint.requests) == 1  # answered from the cache: deterministic


def test_answer_cap(harness_api, task, endpoint, settings):
    settings.ASK_HUMAN_ANSWER_CAP = 1
    run = start(harness_api, task)
    endpoint.replies = [(200, "boom_year")]
    assert (
        ask(harness_api, run, "Which year is the boom year?")
        .json()["response"]
        .startswith("The boom")
    )
    capped = ask(harness_api, run, "Which status means settled cleanly?")
    assert capped.json() == {"response": "irrelevant question"}
    assert AskHumanCall.objects.filter(run_id=run, capped=True).count() == 1
    assert len(endpoint.requests) == 1


@pytest.mark.parametrize("reply", [(500, "boom_year"), (200, "RAW:not json at all")])
def test_judge_failure_is_an_error_never_irrelevant(harness_api, task, endpoint, reply):
    run = start(harness_api, task)
    endpoint.replies = [reply] * 5
    response = ask(harness_api, run, "Which year is the boom year?")
    assert response.status_code == 503
    assert "Judge error" in response.json()["detail"]
    call = AskHumanCall.objects.get(run_id=run)
    assert call.error and call.response == ""


def test_only_harness_or_lead_may_run_and_anonymous_is_refused(api, task, reviewer, endpoint):
    assert api.post("/api/ask_human/runs", {"task": task.pk}, format="json").status_code in (
        401,
        403,
    )
    assert api.post("/api/ask_human", {"run": 1, "question": "x?"}, format="json").status_code in (
        401,
        403,
    )
    api.force_authenticate(reviewer)
    assert api.post("/api/ask_human/runs", {"task": task.pk}, format="json").status_code == 403


def test_embedded_judge_answers_with_the_resolution_verbatim(harness_api, task, settings):
    settings.JUDGE_BACKEND = "embedded"
    run = start(harness_api, task)
    matched = ask(harness_api, run, "Which calendar year should I treat as the boom year?")
    off_task = ask(harness_api, run, "What is the capital of France?")
    assert matched.json() == {"response": "The boom year is 1997."}
    assert off_task.json() == {"response": "irrelevant question"}


def test_llm_endpoint_writes_candidate_questions_without_seeing_resolutions(
    client, task, author, endpoint
):
    from django.urls import reverse

    from judge.models import ValidationQuestion

    copy = BLOCKERS[0]["trigger_questions"][0]
    reply = "RAW:" + json.dumps(
        {
            "questions": [
                "Which twelve months form the boom year?",
                "When did the boom year start?",
                f"Could you clarify: {copy[0].lower()}{copy[1:]}",  # a near-copy: refused
            ]
        }
    )
    other = "RAW:" + json.dumps(
        {
            "questions": [
                "How is a clean loan coded?",
                "Which code says settled fine?",
                "What marks a loan as cleanly closed?",
            ]
        }
    )
    endpoint.replies = [(200, reply), (200, other)]
    client.force_login(author)
    response = client.post(reverse("judge-generate", args=[task.pk]), follow=True)
    written = set(
        ValidationQuestion.objects.filter(task=task, source="llm").values_list("text", flat=True)
    )
    assert "When did the boom year start?" in written and "How is a clean loan coded?" in written
    assert len(written) == 5 and not any(w.startswith("Could you clarify") for w in written)
    shown = " ".join(str(m) for m in response.context["messages"])
    assert "1 candidate(s) refused as near-copies" in shown and "Too close" in shown
    assert len(endpoint.requests) == 2
    sent = json.dumps(endpoint.requests)
    assert "1997" not in sent and "status = 'A'" not in sent


def mcp(api, method, params=None, request_id=1):
    message = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    response = api.post("/api/mcp", message, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def test_mcp_endpoint_serves_ask_human(harness_api, task, endpoint, outsider, api):
    init = mcp(harness_api, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}})
    assert init["result"]["capabilities"]["tools"] == {"listChanged": False}
    notified = harness_api.post(
        "/api/mcp", {"jsonrpc": "2.0", "method": "notifications/initialized"}, format="json"
    )
    assert notified.status_code == 202
    tools = {t["name"] for t in mcp(harness_api, "tools/list")["result"]["tools"]}
    assert tools == {"start_ask_human_run", "ask_human"}

    started = mcp(
        harness_api, "tools/call", {"name": "start_ask_human_run", "arguments": {"task": task.pk}}
    )
    run = int(started["result"]["content"][0]["text"])
    endpoint.replies = [(200, "clean_status"), (500, None), (500, None), (500, None)]
    answered = mcp(
        harness_api,
        "tools/call",
        {"name": "ask_human", "arguments": {"run": run, "question": "Which status is clean?"}},
    )
    assert answered["result"] == {
        "content": [{"type": "text", "text": "Clean settlement is loan.status = 'A'."}],
        "isError": False,
    }
    # The judge endpoint fails: a tool error that names it, not "irrelevant question".
    failed = mcp(
        harness_api,
        "tools/call",
        {"name": "ask_human", "arguments": {"run": run, "question": "Which year?"}},
    )
    assert failed["result"]["isError"] is True
    assert failed["result"]["content"][0]["text"].startswith("Judge error:")
    assert AskHumanCall.objects.filter(run_id=run).count() == 2

    assert (
        mcp(harness_api, "tools/call", {"name": "nope", "arguments": {}})["error"]["code"] == -32602
    )
    assert mcp(harness_api, "resources/list")["error"]["code"] == -32601
    # A user of another project may not use the run, nor learn that it exists.
    api.force_authenticate(outsider)
    denied = mcp(
        api,
        "tools/call",
        {"name": "ask_human", "arguments": {"run": run, "question": "Which year?"}},
    )
    assert denied["result"]["isError"] is True
    assert denied["result"]["content"][0]["text"] == "No such ask_human run."
    api.force_authenticate(None)
    api.credentials()
    assert api.post(
        "/api/mcp", {"jsonrpc": "2.0", "id": 1, "method": "ping"}, format="json"
    ).status_code in (401, 403)


def test_mcp_refuses_params_that_are_not_an_object_and_huge_batches(harness_api):
    bad = mcp(harness_api, "tools/call", [1])
    assert bad["error"]["code"] == -32602
    batch = [{"jsonrpc": "2.0", "id": n, "method": "ping"} for n in range(21)]
    answer = harness_api.post("/api/mcp", batch, format="json").json()
    assert answer["error"]["code"] == -32600 and "at most 20" in answer["error"]["message"]
