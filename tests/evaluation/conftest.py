"""A scripted OpenAI-compatible chat server on loopback, and a SQL task with the demo's
blockers planted."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from exchange.demo.blocked_task import DEMO_BLOCKERS
from hilbench_annotate import services as core


def tool_call(name: str, arguments: dict | str, call_id: str = "c1") -> dict:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": raw}}
        ],
    }
    return {"choices": [{"message": message}], "usage": {"total_tokens": 10}}


def text_reply(content: str, *, logprobs: dict | None = None) -> dict:
    choice = {"message": {"role": "assistant", "content": content}}
    if logprobs is not None:
        choice["logprobs"] = logprobs
    return {"choices": [choice], "usage": {"total_tokens": 5}}


class ScriptedServer:
    """Answers each POST with the next scripted reply. A reply may be ``("sleep", s)``
    (answer nothing for s seconds: a timeout) or ``("status", code)``. Requests are kept."""

    def __init__(self):
        self.script: list = []
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.requests.append(body)
                    reply = server.script.pop(0) if server.script else ("status", 500)
                if isinstance(reply, tuple) and reply[0] == "sleep":
                    time.sleep(reply[1])
                    return
                if isinstance(reply, tuple) and reply[0] == "status":
                    self.send_response(reply[1])
                    self.end_headers()
                    return
                payload = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(autouse=True)
def _loopback_endpoints_allowed(settings):
    """The stand-in endpoints listen on 127.0.0.1, which the outbound policy refuses unless
    the operator names it: these tests name it (a test of the refusal sets its own)."""
    settings.MODEL_ENDPOINT_HOSTS = ["127.0.0.1"]


@pytest.fixture
def chat_server():
    server = ScriptedServer()
    yield server
    server.close()


@pytest.fixture
def sql_task(sql_task, author):
    """The shared demo SQL task (tests/conftest.py) with the demo's three blockers planted."""
    task = sql_task
    for blocker in DEMO_BLOCKERS:
        task.refresh_from_db()
        core.blocker_create(task=task, actor=author, expected_version=task.version, **blocker)
    task.refresh_from_db()
    return task
