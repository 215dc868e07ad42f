"""LLMJudge against a real OpenAI-compatible HTTP server on 127.0.0.1 whose replies are scripted:
transport and retries, and the release judge's criteria (each automatic rejection under its
code, the match criteria, the confidence rule) as the prompt states them and as the verdict
applies them."""

import json
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from judge.base import JudgeError, RegistryBlocker, respond
from judge.llm import (
    MATCH_CRITERIA,
    MIN_CONFIDENCE,
    PROMPT_VERSION,
    REJECTION_CODES,
    REJECTIONS,
    SYSTEM_PROMPT,
    LLMJudge,
    build_messages,
    outcome_of,
    parse_reply,
)

SENIOR = RegistryBlocker(
    id="undefined_senior_account_owner",
    description=(
        'The question refers to "senior account owners" without providing any definition or '
        "criteria for determining which clients qualify as senior."
    ),
    trigger_questions=(
        "What rule should be used to determine whether a client qualifies as a senior account "
        "owner",
        "How is it determined who is a senior account holder?",
    ),
    resolution="Senior account owners are defined as clients with a birth date earlier than "
    "January 1, 1950.",
)
CRISIS = RegistryBlocker(
    id="undefined_crisis_period",
    description="The term crisis period is used without specifying any concrete start or end "
    "dates.",
    trigger_questions=("What exact date range defines the crisis period?",),
    resolution="The crisis period is defined as the calendar year from January 1, 1996, to "
    "December 31, 1996.",
)
LOANS = RegistryBlocker(
    id="ambiguous_loan_servicing_transactions",
    description="It is unclear which classification codes make a transaction loan servicing.",
    trigger_questions=("Which payments qualify as loan servicing transactions?",),
    resolution="Loan servicing transactions are defined as transactions where\n"
    "trans.k_symbol = 'CAT7' AND trans.service_flag = 'S1'.",
)
REGISTRY = [SENIOR, CRISIS, LOANS]
QUESTION = "What birth date cutoff defines a senior account owner?"


@dataclass
class Reply:
    status: int = 200
    body: bytes | str | dict = b""
    delay: float = 0.0


@dataclass
class FakeEndpoint:
    """The scripted server: replies are served in order, then ``default`` for ever."""

    base_url: str
    replies: deque = field(default_factory=deque)
    requests: list = field(default_factory=list)
    default: Reply | None = None

    def script(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def bodies(self) -> list[dict]:
        return [json.loads(request["body"]) for request in self.requests]


def completion(content: str) -> dict:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "judge-model",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
    }


def answer(
    blocker_key: str | None,
    reasoning: str = "because",
    *,
    rejection: str | None = None,
    confidence: float | None = None,
) -> Reply:
    """A reply in the prompt's form; without ``rejection`` and ``confidence``, in the release's
    own two-key form."""
    content: dict = {"reasoning": reasoning, "blocker_key": blocker_key}
    if rejection is not None:
        content["rejection"] = rejection
    if confidence is not None:
        content["confidence"] = confidence
    return Reply(body=completion(json.dumps(content)))


def text(content: str) -> Reply:
    return Reply(body=completion(content))


@pytest.fixture
def endpoint():
    state = FakeEndpoint(base_url="")
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - the http.server API
            length = int(self.headers.get("Content-Length", 0))
            body = self.rfile.read(length).decode()
            with lock:
                state.requests.append(
                    {"path": self.path, "headers": dict(self.headers), "body": body}
                )
                reply = state.replies.popleft() if state.replies else state.default
            if reply is None:
                reply = Reply(status=599, body="nothing scripted")
            time.sleep(reply.delay)
            payload = reply.body
            if isinstance(payload, dict):
                payload = json.dumps(payload)
            if isinstance(payload, str):
                payload = payload.encode()
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout tests)

        def log_message(self, format, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    yield state
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def make_judge(endpoint, **kwargs) -> LLMJudge:
    options = {"base_url": endpoint.base_url, "model": "judge-model", "timeout_s": 5}
    options.update(kwargs)
    return LLMJudge(**options)


def test_good_reply_names_the_blocker(endpoint):
    endpoint.script(answer(SENIOR.id, reasoning="asks for the senior definition"))
    verdict = make_judge(endpoint).judge(QUESTION, REGISTRY)
    assert verdict.blocker_id == SENIOR.id
    assert verdict.reason == "match: asks for the senior definition"
    assert respond(verdict, REGISTRY) == SENIOR.resolution
    assert len(endpoint.requests) == 1
    assert endpoint.requests[0]["path"] == "/v1/chat/completions"


def test_null_is_irrelevant(endpoint):
    endpoint.script(answer(None, reasoning="asks about opening hours"))
    verdict = make_judge(endpoint).judge("When does the branch open?", REGISTRY)
    assert verdict.blocker_id is None
    assert respond(verdict, REGISTRY) == "irrelevant question"
    assert verdict.reason == "no-match: asks about opening hours"


def test_request_body_has_the_settings_and_the_registry_but_no_resolution(endpoint):
    endpoint.script(answer(None))
    make_judge(endpoint).judge(QUESTION, REGISTRY)
    raw = endpoint.requests[0]["body"]
    body = json.loads(raw)
    assert body["temperature"] == 0
    assert body["model"] == "judge-model"
    assert body["response_format"] == {"type": "json_object"}
    prompt = "\n".join(message["content"] for message in body["messages"])
    assert body["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert json.dumps(QUESTION) in prompt
    for blocker in REGISTRY:
        assert blocker.id in prompt
        assert json.dumps(blocker.description, ensure_ascii=False) in prompt
        for trigger in blocker.trigger_questions:  # documented choice: shown as examples
            assert trigger in prompt
        # Neither the resolution nor any line of it, decoded or as sent on the wire.
        for fragment in [blocker.resolution, *blocker.resolution.splitlines()]:
            assert fragment not in prompt
            assert fragment not in raw
            assert json.dumps(fragment)[1:-1] not in raw
        assert "1950" not in raw and "1996" not in raw and "CAT7" not in raw


def test_malformed_then_good_succeeds_after_one_retry(endpoint):
    endpoint.script(text("I think it is the senior one."), answer(SENIOR.id))
    verdict = make_judge(endpoint).judge(QUESTION, REGISTRY)
    assert verdict.blocker_id == SENIOR.id
    assert len(endpoint.requests) == 2
    first, second = endpoint.bodies()
    assert len(second["messages"]) == len(first["messages"]) + 2
    assert second["messages"][-2] == {
        "role": "assistant",
        "content": "I think it is the senior one.",
    }
    correction = second["messages"][-1]
    assert correction["role"] == "user"
    assert "not JSON" in correction["content"]
    assert SENIOR.id in correction["content"]


def test_malformed_three_times_raises(endpoint):
    endpoint.script(text("nope"), text('{"reasoning": "x"}'), text("[1, 2]"))
    with pytest.raises(JudgeError, match="malformed output 3 times") as caught:
        make_judge(endpoint, max_retries=2).judge(QUESTION, REGISTRY)
    assert "blocker_key" in str(caught.value)
    assert len(endpoint.requests) == 3


def test_unknown_blocker_id_is_malformed(endpoint):
    endpoint.script(answer("made_up_blocker"), answer(CRISIS.id))
    verdict = make_judge(endpoint).judge("What dates define the crisis period?", REGISTRY)
    assert verdict.blocker_id == CRISIS.id
    assert "made_up_blocker" in endpoint.bodies()[1]["messages"][-1]["content"]


def test_unknown_blocker_id_every_time_raises_not_irrelevant(endpoint):
    endpoint.default = answer("made_up_blocker")
    with pytest.raises(JudgeError, match="malformed output 3 times.*made_up_blocker"):
        make_judge(endpoint).judge(QUESTION, REGISTRY)


def test_fenced_json_block_is_accepted(endpoint):
    content = (
        "Here is my answer:\n```json\n"
        + json.dumps({"reasoning": "dates", "blocker_key": CRISIS.id})
        + "\n```"
    )
    endpoint.script(text(content))
    assert make_judge(endpoint).judge("Which dates?", REGISTRY).blocker_id == CRISIS.id
    assert len(endpoint.requests) == 1


def test_server_error_then_success(endpoint):
    endpoint.script(Reply(status=500, body="boom"), answer(LOANS.id))
    verdict = make_judge(endpoint).judge("Which codes are loan servicing?", REGISTRY)
    assert verdict.blocker_id == LOANS.id
    assert len(endpoint.requests) == 2


def test_server_error_always_raises_naming_the_status(endpoint):
    endpoint.default = Reply(status=500, body="internal error")
    with pytest.raises(JudgeError, match="500"):
        make_judge(endpoint, max_retries=2).judge(QUESTION, REGISTRY)
    assert len(endpoint.requests) == 3


def test_client_error_raises_at_once(endpoint):
    endpoint.default = Reply(status=400, body={"error": "unknown model"})
    with pytest.raises(JudgeError, match="HTTP 400.*unknown model"):
        make_judge(endpoint).judge(QUESTION, REGISTRY)
    assert len(endpoint.requests) == 1


def test_not_a_chat_completion_is_retried_then_raises(endpoint):
    endpoint.default = Reply(body={"unexpected": True})
    with pytest.raises(JudgeError, match="not a chat completion"):
        make_judge(endpoint).judge(QUESTION, REGISTRY)
    assert len(endpoint.requests) == 3


def test_timeout_raises_fast(endpoint):
    endpoint.script(Reply(delay=2.0, body=completion("{}")))
    started = time.monotonic()
    with pytest.raises(JudgeError, match=r"did not answer within 0\.5 s"):
        make_judge(endpoint, timeout_s=0.5).judge(QUESTION, REGISTRY)
    assert time.monotonic() - started < 1.5
    assert len(endpoint.requests) == 1


def test_connection_refused_raises():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    judge = LLMJudge(base_url=f"http://127.0.0.1:{port}/v1", model="m", timeout_s=2)
    with pytest.raises(JudgeError, match="could not reach the judge endpoint"):
        judge.judge(QUESTION, REGISTRY)


def test_authorization_header_carries_the_key_read_at_call_time(endpoint, monkeypatch):
    monkeypatch.setenv("JUDGE_TEST_KEY", "sk-first")
    judge = make_judge(endpoint, api_key_env="JUDGE_TEST_KEY")
    endpoint.script(answer(None), answer(None))
    judge.judge(QUESTION, REGISTRY)
    monkeypatch.setenv("JUDGE_TEST_KEY", "sk-second")
    judge.judge(QUESTION, REGISTRY)
    headers = [request["headers"] for request in endpoint.requests]
    assert headers[0]["Authorization"] == "Bearer sk-first"
    assert headers[1]["Authorization"] == "Bearer sk-second"
    assert "sk-" not in repr(judge) and "sk-" not in repr(vars(judge))


def test_unset_key_sends_no_header_and_a_401_names_the_variable(endpoint, monkeypatch):
    monkeypatch.delenv("JUDGE_TEST_KEY", raising=False)
    endpoint.script(answer(None), Reply(status=401, body={"error": "unauthorised"}))
    judge = make_judge(endpoint, api_key_env="JUDGE_TEST_KEY")
    assert judge.judge(QUESTION, REGISTRY).blocker_id is None  # an open local endpoint
    assert "Authorization" not in endpoint.requests[0]["headers"]
    with pytest.raises(JudgeError, match="HTTP 401.*JUDGE_TEST_KEY is not set"):
        judge.judge(QUESTION, REGISTRY)
    assert len(endpoint.requests) == 2


def test_no_key_env_sends_no_authorization(endpoint):
    endpoint.script(answer(None))
    make_judge(endpoint).judge(QUESTION, REGISTRY)
    assert "Authorization" not in endpoint.requests[0]["headers"]


def test_trailing_slash_in_base_url(endpoint):
    endpoint.script(answer(None))
    make_judge(endpoint, base_url=endpoint.base_url + "/").judge(QUESTION, REGISTRY)
    assert endpoint.requests[0]["path"] == "/v1/chat/completions"


def test_empty_registry_is_irrelevant_without_a_call(endpoint):
    assert make_judge(endpoint).judge(QUESTION, []).blocker_id is None
    assert endpoint.requests == []


def test_version_and_prompt_rules():
    judge = LLMJudge(base_url="http://127.0.0.1:1/v1", model="m")
    assert judge.version == PROMPT_VERSION == "llm-prompt-2"
    for rule in ("at most one blocker", "more than one topic", "I assume X, right?"):
        assert rule in SYSTEM_PROMPT
    with pytest.raises(ValueError):
        LLMJudge(base_url="file:///etc/passwd", model="m")


@pytest.mark.parametrize(
    "content",
    [
        '{"reasoning": "r", "blocker_key": "undefined_crisis_period"}',
        'Sure! {"reasoning": "r", "blocker_key": "undefined_crisis_period"} Hope it helps.',
        '```\n{"reasoning": "r", "blocker_key": "undefined_crisis_period"}\n```',
    ],
)
def test_parse_reply_is_robust(content):
    assert parse_reply(content, {CRISIS.id}).blocker_key == CRISIS.id


@pytest.mark.parametrize(
    "content",
    [
        "",
        "null",
        '{"reasoning": 3, "blocker_key": null}',
        '{"reasoning": "r", "blocker_key": 7}',
        '{"reasoning": "r", "blocker_key": "other"}',
        '{"blocker_key": null}',
    ],
)
def test_parse_reply_rejects(content):
    from judge.llm import _Malformed

    with pytest.raises(_Malformed):
        parse_reply(content, {CRISIS.id})


@pytest.mark.parametrize("domain", ["sql", "swe"])
def test_release_registry_prompt_holds_no_resolution(release_examples, domain):
    path = release_examples / domain / f"{domain}_0/shared/ask-human-data/blocker_registry.json"
    registry = [
        RegistryBlocker(
            id=item["id"],
            description=item["description"],
            trigger_questions=tuple(item.get("example_questions", ())),
            resolution=item["resolution"],
        )
        for item in json.loads(path.read_text())["blockers"]
    ]
    prompt = json.dumps(build_messages("Any question?", registry), ensure_ascii=False)
    decoded = "\n".join(m["content"] for m in build_messages("Any question?", registry))
    for blocker in registry:
        assert blocker.id in decoded
        for fragment in [blocker.resolution, *blocker.resolution.splitlines()]:
            assert fragment not in decoded
            assert json.dumps(fragment, ensure_ascii=False)[1:-1] not in prompt


def test_a_redirect_to_another_host_is_not_followed(endpoint):
    """The judge's configured host is allowed; a redirect to any other (here 127.0.0.1, the
    same machine under another name) is not followed (issue 24, item 4)."""

    class Redirect(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - the http.server API
            self.send_response(302)
            self.send_header("Location", f"{endpoint.base_url}/chat/completions")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Redirect)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    endpoint.script(answer(None))
    try:
        judge = make_judge(endpoint, base_url=f"http://localhost:{server.server_address[1]}/v1")
        with pytest.raises(JudgeError, match="redirects are not followed"):
            judge.judge(QUESTION, REGISTRY)
    finally:
        server.shutdown()
        server.server_close()
    assert endpoint.requests == []


# -- the release judge's criteria -------------------------------------------------------------

# One message of each rejection class, all about the senior-owner blocker's topic: the release
# refuses them whatever blocker their topic touches.
REJECTED = {
    "statement": "The clients table has a birth date column for every account owner.",
    "no-request": "Senior account owners?",
    "confirmation": "I assume senior account owners are clients born before 1960, right?",
    "tangential": "What birth date cutoff defines a junior account owner?",
    "vague": "Is there anything else I should know before I write the query?",
    "best-practice": "What is the best practice for comparing birth dates in SQL?",
    "no-specific-intent": "Tell me about senior account owners.",
    "multi-topic": "What birth date makes a client senior, and which dates bound the crisis "
    "period?",
    "definition-echo": "What does 'senior account owners' mean?",
    "padding": "I looked at the client table and the birth dates run from 1920 to 2001, and "
    "the question wants seniors, so what birth date cutoff defines a senior account owner?",
}


def test_every_rejection_has_a_test_message():
    assert set(REJECTED) == set(REJECTION_CODES)
    assert len(REJECTION_CODES) == len(set(REJECTION_CODES))


def test_the_prompt_carries_every_criterion_and_the_confidence_rule():
    for code, rule in REJECTIONS:
        assert f"- {code}: {rule}" in SYSTEM_PROMPT
    for name, criterion in MATCH_CRITERIA:
        assert f"- {name}: {criterion}" in SYSTEM_PROMPT
    # Rejections are checked first and win over a topic match; then every match criterion.
    assert SYSTEM_PROMPT.index("Step 1, rejections") < SYSTEM_PROMPT.index("Step 2, matching")
    assert "even when its topic is one of the blockers" in SYSTEM_PROMPT
    assert "only if every criterion" in SYSTEM_PROMPT
    assert f"only a match of {MIN_CONFIDENCE} or more is answered" in SYSTEM_PROMPT
    for key in ('"reasoning"', '"rejection"', '"blocker_key"', '"confidence"'):
        assert key in SYSTEM_PROMPT
    assert MIN_CONFIDENCE == 95  # the release's "95%+"


@pytest.mark.parametrize("code", REJECTION_CODES)
def test_each_rejection_is_irrelevant_with_its_reason(endpoint, code):
    endpoint.script(answer(None, f"it meets the {code} rule", rejection=code, confidence=0))
    verdict = make_judge(endpoint).judge(REJECTED[code], REGISTRY)
    assert verdict.blocker_id is None
    assert respond(verdict, REGISTRY) == "irrelevant question"
    assert verdict.reason == f"{code}: it meets the {code} rule"
    assert outcome_of(verdict.reason) == code
    body = endpoint.bodies()[0]
    assert body["messages"][0]["content"] == SYSTEM_PROMPT
    assert json.dumps(REJECTED[code]) in body["messages"][1]["content"]


def test_a_rejection_wins_over_a_named_blocker(endpoint):
    """The release: a message that meets a rejection rule is refused even when its topic is a
    blocker's, so a reply naming both is a rejection."""
    endpoint.script(answer(SENIOR.id, "padded", rejection="padding", confidence=99))
    verdict = make_judge(endpoint).judge(REJECTED["padding"], REGISTRY)
    assert verdict.blocker_id is None
    assert verdict.reason == f"padding (it named {SENIOR.id}, refused): padded"
    assert outcome_of(verdict.reason) == "padding"


@pytest.mark.parametrize("confidence", [0, 50, 80, 94, 94.9])
def test_a_match_below_the_confidence_threshold_is_refused(endpoint, confidence):
    endpoint.script(answer(SENIOR.id, "probably the senior one", confidence=confidence))
    verdict = make_judge(endpoint).judge(QUESTION, REGISTRY)
    assert verdict.blocker_id is None
    assert respond(verdict, REGISTRY) == "irrelevant question"
    assert verdict.reason == (
        f"low-confidence ({SENIOR.id} at {confidence:g}, below 95): probably the senior one"
    )
    assert outcome_of(verdict.reason) == "low-confidence"


@pytest.mark.parametrize("confidence", [95, 97, 100])
def test_a_confident_match_returns_the_blocker(endpoint, confidence):
    endpoint.script(answer(SENIOR.id, "asks for the cutoff", confidence=confidence))
    verdict = make_judge(endpoint).judge(QUESTION, REGISTRY)
    assert verdict.blocker_id == SENIOR.id
    assert respond(verdict, REGISTRY) == SENIOR.resolution
    assert verdict.reason == f"match (confidence {confidence:g}): asks for the cutoff"
    assert outcome_of(verdict.reason) == "match"


def test_no_blocker_and_no_rejection_is_no_match(endpoint):
    endpoint.script(answer(None, "no blocker is about branches", rejection=None, confidence=0))
    verdict = make_judge(endpoint).judge("Which branch has the most clients?", REGISTRY)
    assert verdict.blocker_id is None
    assert outcome_of(verdict.reason) == "no-match"


@pytest.mark.parametrize(
    "content, problem",
    [
        ({"rejection": "rude"}, "rejection 'rude' is not one of the rejection codes"),
        ({"confidence": "high"}, "confidence is not a number"),
        ({"confidence": True}, "confidence is not a number"),
        ({"confidence": 150}, "not a whole number from 0 to 100"),
        ({"confidence": -1}, "not a whole number from 0 to 100"),
        ({"confidence": 0.97}, "not a whole number from 0 to 100"),
    ],
)
def test_an_unreadable_rejection_or_confidence_is_retried(endpoint, content, problem):
    bad = {"reasoning": "r", "blocker_key": SENIOR.id, **content}
    endpoint.script(text(json.dumps(bad)), answer(SENIOR.id, confidence=98))
    verdict = make_judge(endpoint).judge(QUESTION, REGISTRY)
    assert verdict.blocker_id == SENIOR.id
    correction = endpoint.bodies()[1]["messages"][-1]["content"]
    assert problem in correction
    for code in REJECTION_CODES:  # the correction lists the codes it may use
        assert code in correction


def test_an_unreadable_confidence_every_time_raises_not_irrelevant(endpoint):
    endpoint.default = text(json.dumps({"reasoning": "r", "blocker_key": None, "confidence": "x"}))
    with pytest.raises(JudgeError, match="malformed output 3 times.*confidence"):
        make_judge(endpoint).judge(QUESTION, REGISTRY)


@pytest.mark.parametrize("question", ["", "?", "  a  ", "ok"])
def test_a_message_under_three_characters_is_refused_without_a_call(endpoint, question):
    verdict = make_judge(endpoint).judge(question, REGISTRY)
    assert verdict.blocker_id is None
    assert outcome_of(verdict.reason) == "too-short"
    assert endpoint.requests == []


def test_outcome_of_reads_only_this_judges_reasons():
    assert outcome_of("multi-topic: two things") == "multi-topic"
    assert outcome_of("low-confidence (x at 80, below 95): r") == "low-confidence"
    assert outcome_of("embedded: best 3.1") is None
    assert outcome_of("because") is None
