"""The loopback relay between Harbor and a model endpoint (``hilbench_annotate/model_relay.py``),
against a real stand-in endpoint on 127.0.0.2 and a listener on 127.0.0.1 that must never be
reached. The relay is called as Harbor's model client would: plain HTTP to ``base_url``.
"""

import json
import socket
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from hilbench_annotate import model_relay
from hilbench_annotate.model_relay import ModelRelay

ENDPOINT_HOST = "127.0.0.2"
KEY_ENV = "HILBENCH_TEST_RELAY_KEY"
ANSWER = {"choices": [{"message": {"role": "assistant", "content": "SELECT 1"}}]}


class Endpoint:
    """A model endpoint stand-in that records every request it gets. Paths choose its answer:
    ``/v1/chat/completions`` 200 JSON, ``/v1/created`` 201, ``/v1/limited`` 429,
    ``/v1/redirect`` 302 to ``redirect_to``, ``/v1/big`` ``big`` bytes."""

    def __init__(self, host: str = ENDPOINT_HOST):
        self.requests: list[dict] = []
        self.redirect_to = ""
        self.big = 0
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                endpoint.requests.append(
                    {
                        "method": self.command,
                        "path": self.path,
                        "headers": dict(self.headers.items()),
                        "body": self.rfile.read(length) if length else b"",
                    }
                )
                status, headers, body = 200, {"Content-Type": "application/json"}, b""
                if self.path.startswith("/v1/chat/completions"):
                    body = json.dumps(ANSWER).encode()
                elif self.path == "/v1/created":
                    status, body = 201, b'{"id": "made"}'
                elif self.path == "/v1/limited":
                    status, body = 429, b'{"error": {"message": "slow down"}}'
                elif self.path == "/v1/redirect":
                    status, headers = 302, {"Location": endpoint.redirect_to}
                elif self.path == "/v1/big":
                    headers = {"Content-Type": "application/octet-stream"}
                    body = b"x" * endpoint.big
                else:
                    status, body = 404, b"{}"
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _answer  # noqa: N815 - the http.server protocol

        self.server = ThreadingHTTPServer((host, 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class Listener:
    """A bare TCP listener on 127.0.0.1: somewhere a redirect or a refused endpoint would
    lead. ``connections()`` says how many connected (without blocking)."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.setblocking(False)
        self.port = self.sock.getsockname()[1]

    def connections(self) -> int:
        count = 0
        while True:
            try:
                conn, _ = self.sock.accept()
            except BlockingIOError:
                return count
            conn.close()
            count += 1

    def close(self):
        self.sock.close()


@pytest.fixture
def endpoint():
    server = Endpoint()
    yield server
    server.close()


@pytest.fixture
def listener():
    sock = Listener()
    yield sock
    sock.close()


@pytest.fixture
def relay(endpoint, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-the-workers-own")
    with ModelRelay(
        base_url=endpoint.url + "/", api_key_env=KEY_ENV, allowed_hosts=(ENDPOINT_HOST,)
    ) as running:
        yield running


def call(url: str, body: bytes | None = b"{}", headers: dict | None = None, method="POST"):
    """(status, headers, body) of the relay's answer, error statuses included."""
    request = urllib.request.Request(  # noqa: S310 - a loopback URL of the test
        url,
        data=body,
        headers={"Content-Type": "application/json", **(headers or {})},
        method=method,
    )
    # No proxy: the relay is on loopback and a proxy of the environment must not interpose.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=30) as answer:
            return answer.status, answer.headers, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def test_a_post_is_forwarded_with_its_body_path_and_content_type(relay, endpoint):
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
    status, headers, raw = call(
        relay.base_url + "/chat/completions?trace=1",
        body,
        {"Content-Type": "application/json; charset=utf-8", "Accept": "application/json"},
    )
    assert (status, json.loads(raw)) == (200, ANSWER)
    assert headers["Content-Type"] == "application/json"
    [seen] = endpoint.requests
    assert seen["method"] == "POST"
    assert seen["path"] == "/v1/chat/completions?trace=1"
    assert seen["body"] == body
    assert seen["headers"]["Content-Type"] == "application/json; charset=utf-8"
    assert relay.forwarded == 1
    assert relay.refusals == []


def test_the_endpoints_status_comes_back(relay, endpoint):
    status, _, raw = call(relay.base_url + "/created")
    assert (status, raw) == (201, b'{"id": "made"}')
    status, _, raw = call(relay.base_url + "/limited")
    assert status == 429
    assert json.loads(raw)["error"]["message"] == "slow down"
    assert relay.refusals == []


def test_a_get_is_forwarded_without_a_body(relay, endpoint):
    status, _, _ = call(relay.base_url + "/chat/completions", body=None, method="GET")
    assert status == 200
    assert endpoint.requests[0]["method"] == "GET"
    assert endpoint.requests[0]["body"] == b""


def test_the_key_comes_from_the_workers_environment_not_from_the_client(relay, endpoint):
    call(
        relay.base_url + "/chat/completions",
        headers={
            "Authorization": "Bearer the-clients-own",
            "Cookie": "session=abc",
            "X-Api-Key": "other",
        },
    )
    [seen] = endpoint.requests
    assert seen["headers"]["Authorization"] == "Bearer sk-the-workers-own"
    text = json.dumps(seen["headers"])
    assert "the-clients-own" not in text
    assert "session=abc" not in text
    assert "X-Api-Key" not in seen["headers"]


def test_without_a_key_in_the_environment_no_authorization_is_sent(endpoint, monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    with ModelRelay(
        base_url=endpoint.url, api_key_env=KEY_ENV, allowed_hosts=(ENDPOINT_HOST,)
    ) as relay:
        status, _, _ = call(
            relay.base_url + "/chat/completions", headers={"Authorization": "Bearer mine"}
        )
    assert status == 200
    assert "Authorization" not in endpoint.requests[0]["headers"]


def test_a_redirect_is_refused_never_followed(relay, endpoint, listener):
    endpoint.redirect_to = f"http://127.0.0.1:{listener.port}/v1/chat/completions"
    status, headers, raw = call(relay.base_url + "/redirect")
    assert status == 502
    assert headers["Content-Type"] == "application/json"
    message = json.loads(raw)["error"]["message"]
    assert "redirect" in message
    assert "Location" not in headers
    assert str(listener.port) not in raw.decode()
    assert listener.connections() == 0
    assert len(endpoint.requests) == 1
    assert len(relay.refusals) == 1
    assert "302" in relay.refusals[0] and "redirect" in relay.refusals[0]
    assert relay.forwarded == 0


@pytest.mark.parametrize(
    "path",
    ["/chat/completions", "/v1/chat/completions", "/{prefix}chat/completions", "/{prefix}x/y"],
)
def test_a_request_without_the_random_prefix_is_not_found(relay, endpoint, path):
    port = relay.server.server_address[1]
    url = f"http://127.0.0.1:{port}" + path.format(prefix=relay.prefix.lstrip("/"))
    status, _, raw = call(url)
    assert status == 404
    assert raw == b"not here\n"
    assert endpoint.requests == []


def test_the_prefix_is_random_per_relay(endpoint):
    relays = [
        ModelRelay(base_url=endpoint.url, api_key_env=None, allowed_hosts=(ENDPOINT_HOST,))
        for _ in range(2)
    ]
    try:
        assert relays[0].prefix != relays[1].prefix
        assert len(relays[0].prefix) > 20
        assert relays[0].base_url.startswith("http://127.0.0.1:")
    finally:
        for relay in relays:
            relay.server.server_close()


def test_an_endpoint_on_a_host_not_allowed_is_never_dialled(listener):
    with ModelRelay(
        base_url=f"http://127.0.0.1:{listener.port}/v1",
        api_key_env=None,
        allowed_hosts=(ENDPOINT_HOST,),
    ) as relay:
        status, _, raw = call(relay.base_url + "/chat/completions")
    assert status == 502
    assert "not an allowed host" in json.loads(raw)["error"]["message"]
    assert listener.connections() == 0
    assert len(relay.refusals) == 1


def test_a_loopback_endpoint_the_operator_did_not_name_is_refused(listener):
    with ModelRelay(
        base_url=f"http://127.0.0.1:{listener.port}/v1", api_key_env=None, allowed_hosts=()
    ) as relay:
        status, _, raw = call(relay.base_url + "/chat/completions")
    assert status == 502
    assert "loopback" in json.loads(raw)["error"]["message"]
    assert listener.connections() == 0


def test_an_answer_over_the_limit_is_refused(relay, endpoint, monkeypatch):
    monkeypatch.setattr(model_relay, "MAX_RESPONSE_BYTES", 1000)
    endpoint.big = 1000
    status, _, raw = call(relay.base_url + "/big")
    assert (status, raw) == (200, b"x" * 1000)

    endpoint.big = 5000
    status, _, raw = call(relay.base_url + "/big")
    assert status == 502
    assert b"x" * 100 not in raw
    assert "1000 bytes" in json.loads(raw)["error"]["message"]
    assert relay.refusals == ["the answer passed 1000 bytes"]
    assert relay.forwarded == 1


def test_a_request_over_the_limit_gets_413_and_is_not_forwarded(relay, endpoint, monkeypatch):
    monkeypatch.setattr(model_relay, "MAX_REQUEST_BYTES", 100)
    status, _, _ = call(relay.base_url + "/chat/completions", b"y" * 100)
    assert status == 200
    status, _, raw = call(relay.base_url + "/chat/completions", b"y" * 101)
    assert status == 413
    assert raw == b"request too large\n"
    assert len(endpoint.requests) == 1


def test_a_large_request_over_the_limit_never_reaches_the_endpoint(relay, endpoint, monkeypatch):
    """Sent whole before the answer is read, a body far over the limit may meet a closed
    connection instead of the 413; either way nothing of it is forwarded."""
    monkeypatch.setattr(model_relay, "MAX_REQUEST_BYTES", 100)
    try:
        status = call(relay.base_url + "/chat/completions", b"y" * (4 << 20))[0]
    except (urllib.error.URLError, ConnectionError):
        status = None
    assert status in (413, None)
    assert endpoint.requests == []
