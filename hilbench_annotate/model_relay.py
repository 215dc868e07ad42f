"""A loopback relay between a process the app starts (Harbor's agents) and a model endpoint.

Harbor's model client follows redirects and resolves the endpoint's name itself, so the
address policy checked when a lead registered the endpoint would not hold when the run dials
it. During a run the app gives Harbor this relay's address instead (``base_url``: loopback, a
random port and a random path prefix no other process knows). Each request is forwarded to
the endpoint through the app's own client (``chat.checked_opener``): the operator's allowlist,
every address checked when it is dialled, no proxy, **no redirect followed** — a 3xx answer
becomes a 502 naming the refusal, never passed on (its ``Location`` would send the client
elsewhere). The API key is added here from the worker's environment: Harbor never holds it.
Bodies are bounded both ways.
"""

from __future__ import annotations

import json
import secrets
import threading
import urllib.error
import urllib.request
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .chat import check_base_url, checked_opener, request_headers
from .toolkit.egress import EgressRefused

MAX_REQUEST_BYTES = 16 << 20
MAX_RESPONSE_BYTES = 64 << 20
PASSED_HEADERS = ("Content-Type", "Accept")


class ModelRelay:
    """``with ModelRelay(base_url=…, api_key_env=…, allowed_hosts=…) as relay:`` Harbor is
    given ``relay.base_url``; ``relay.refusals`` lists what was refused, for the run's record."""

    def __init__(
        self,
        *,
        base_url: str,
        api_key_env: str | None,
        allowed_hosts: Sequence[str],
        timeout_s: float = 600,
    ):
        self.target = check_base_url(base_url)
        self.api_key_env = api_key_env
        self.allowed_hosts = tuple(allowed_hosts)
        self.timeout_s = timeout_s
        self.prefix = "/" + secrets.token_urlsafe(18)
        self.refusals: list[str] = []
        self.forwarded = 0
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{self.prefix}"

    def __enter__(self) -> ModelRelay:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def forward(self, method: str, path: str, body: bytes, headers) -> tuple[int, str, bytes]:
        """(status, content type, body) of the endpoint's answer, or of the refusal."""
        url = self.target + path
        sent = request_headers(self.api_key_env)
        for name in PASSED_HEADERS:
            if headers.get(name):
                sent[name] = headers[name]
        request = urllib.request.Request(  # noqa: S310 - the scheme was checked
            url, data=body if method == "POST" else None, headers=sent, method=method
        )
        try:
            with checked_opener(self.allowed_hosts).open(request, timeout=self.timeout_s) as out:
                raw = out.read(MAX_RESPONSE_BYTES + 1)
                if len(raw) > MAX_RESPONSE_BYTES:
                    return self._refuse(f"the answer passed {MAX_RESPONSE_BYTES} bytes")
                self.forwarded += 1
                return out.status, out.headers.get("Content-Type") or "", raw
        except EgressRefused as error:
            return self._refuse(f"{url} is refused: {error}")
        except urllib.error.HTTPError as error:
            if 300 <= error.code < 400:
                return self._refuse(
                    f"the endpoint answered HTTP {error.code}, a redirect: not followed"
                )
            raw = error.read(MAX_RESPONSE_BYTES)
            return error.code, error.headers.get("Content-Type") or "", raw
        except (urllib.error.URLError, OSError) as error:
            return self._refuse(f"could not reach the endpoint: {getattr(error, 'reason', error)}")

    def _refuse(self, why: str) -> tuple[int, str, bytes]:
        self.refusals.append(why)
        body = json.dumps({"error": {"message": f"model relay: {why}", "type": "relay"}})
        return 502, "application/json", body.encode()

    def _handler(self):
        relay = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # the worker's log is not the place
                pass

            def _serve(self, method: str) -> None:
                if not self.path.startswith(relay.prefix + "/"):
                    self._send(404, "text/plain", b"not here\n")
                    return
                try:
                    length = int(self.headers.get("Content-Length") or 0)
                except ValueError:
                    self._send(400, "text/plain", b"Content-Length is not a number\n")
                    return
                if length > MAX_REQUEST_BYTES or length < 0:
                    self.close_connection = True  # the body is not read
                    self._send(413, "text/plain", b"request too large\n")
                    return
                body = self.rfile.read(length) if length else b""
                path = self.path[len(relay.prefix) :]
                self._send(*relay.forward(method, path, body, self.headers))

            def _send(self, status: int, content_type: str, body: bytes) -> None:
                self.send_response(status)
                if content_type:
                    self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):  # noqa: N802 - the http.server protocol
                self._serve("POST")

            def do_GET(self):  # noqa: N802
                self._serve("GET")

        return Handler
