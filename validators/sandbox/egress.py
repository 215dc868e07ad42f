"""How a build reaches the package registries and nothing else.

A build's sandbox has a network namespace of its own, like every run: only its loopback, no
route anywhere — not to this machine's loopback (Redis, PostgreSQL, the web app), its abstract
Unix sockets, its network, or the deployment's. The one way out is an HTTP ``CONNECT`` proxy:

- inside, a forwarder (``FORWARDER``, run by the machine's ``python3`` from ``/usr``) listens
  on ``127.0.0.1:PORT`` of the sandbox's loopback and hands each connection, unread, to a Unix
  socket in the run's folder; ``HTTPS_PROXY`` and friends point pip, npm, go and curl at it;
- outside, :class:`EgressGateway` (threads of the worker) reads the ``CONNECT host:port`` and
  opens the connection only to a host named in ``settings.BUILD_EGRESS_HOSTS`` on port 443 or
  80, through :func:`hilbench_annotate.toolkit.egress.create_checked_connection` (the same
  policy as every outbound connection of the app: the checked address is the one dialled).
  A request line not in ASCII, a malformed name (the policy's ``host_name_problem``) or a
  port not 1 to 65535 is answered 400; whatever a request holds, it gets an answer.

Why this and not user-mode networking (slirp4netns, pasta): those give the sandbox the
machine's whole view of the network minus its loopback — another host of the deployment
(a managed PostgreSQL, the broker) stays reachable. Here the policy is a list of names the
operator can read, every refusal is written into the build's log, and nothing needs
installing (bubblewrap already makes the namespace; the forwarder is the standard library).
What it does not carry: a build step that opens raw sockets (``git clone`` over ``git://``,
ssh) — it fails with a refused connection, as it should.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path

from hilbench_annotate.toolkit.egress import (
    EgressRefused,
    create_checked_connection,
    host_name_problem,
)

from .base import SandboxError

PORT = 3128
SOCKET_NAME = "egress.sock"
PORTS = (443, 80)
HEAD_LIMIT = 8192
HEAD_TIMEOUT_S = 30  # the whole request head, not each read of it
CONNECT_TIMEOUT_S = 30
MAX_CONNECTIONS = 32  # at once for one run: threads and sockets of the worker, not the sandbox's
MAX_NOTED = 100  # connections named in the result (opened, refused)
IDLE_TIMEOUT_S = 600
CHUNK = 65536

# The forwarder inside the sandbox: binds first, then forks, so the shell that started it
# goes on only once the proxy listens. It decides nothing; the gateway outside does.
FORWARDER = r"""
import os, socket, sys, threading
path, port = sys.argv[1], int(sys.argv[2])
server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", port))
server.listen(64)
if os.fork():
    os._exit(0)
def pump(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    try:
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass
def serve(client):
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        return
    back = threading.Thread(target=pump, args=(upstream, client), daemon=True)
    back.start()
    pump(client, upstream)
    back.join()
    client.close()
    upstream.close()
while True:
    client, _ = server.accept()
    threading.Thread(target=serve, args=(client,), daemon=True).start()
"""


def forwarder_python() -> str:
    """The interpreter that runs the forwarder: one under /usr, which every sandbox sees."""
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("python3", path="/usr/bin:/usr/local/bin")
    if found:
        return found
    raise SandboxError(
        "A build needs the machine's python3 under /usr for its registry proxy; none is there."
    )


@dataclass
class EgressGateway:
    """The proxy's outside half for one run (see the module doc); a context manager."""

    folder: Path
    allowed_hosts: Sequence[str]
    ports: Sequence[int] = PORTS
    refused: list[str] = field(default_factory=list)
    opened: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._server: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()

    @property
    def prelude(self) -> str:
        """Shell lines run before the command: the forwarder started, listening."""
        (self.folder / "egress_forward.py").write_text(FORWARDER)
        (self.folder / "egress_forward.py").chmod(0o644)
        return (
            f"{forwarder_python()} -I -S /.run/egress_forward.py /.run/{SOCKET_NAME} {PORT} "
            ">/dev/null 2>&1 </dev/null || { echo 'hilbench sandbox: the registry proxy did not "
            "start' >&2; exit 97; }\n"
        )

    @property
    def env(self) -> dict[str, str]:
        proxy = f"http://127.0.0.1:{PORT}"
        names = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY")
        env = dict.fromkeys(names, proxy)
        env.update(npm_config_proxy=proxy, npm_config_https_proxy=proxy, NO_PROXY="", no_proxy="")
        return env

    def __enter__(self) -> EgressGateway:
        path = self.folder / SOCKET_NAME
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        directory = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY)
        try:  # through the folder's descriptor: a long sandbox root passes sun_path's limit
            server.bind(f"/proc/self/fd/{directory}/{SOCKET_NAME}")
        finally:
            os.close(directory)
        path.chmod(0o666)  # the sandbox user connects to it
        server.listen(64)
        server.settimeout(0.5)
        self._server = server
        self._thread = threading.Thread(target=self._accept, daemon=True, name="build-egress")
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._server is not None:
            self._server.close()
        with self._lock:  # the run is over: every relay it left open ends now
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            self._open.clear()

    def _track(self, sock: socket.socket) -> socket.socket:
        with self._lock:
            if self._stop.is_set():
                sock.close()
                raise OSError("the run is over")
            self._open.add(sock)
        return sock

    def _note(self, where: list[str], text: str) -> None:
        text = "".join(c if c.isprintable() else "?" for c in text)[:300]
        with self._lock:
            if len(where) < MAX_NOTED and text not in where:
                where.append(text)

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            if not self._slots.acquire(blocking=False):
                with contextlib.suppress(OSError):
                    client.sendall(_Refusal("?", "too many connections", status=503).response())
                client.close()
                continue
            try:
                threading.Thread(target=self._serve, args=(client,), daemon=True).start()
            except RuntimeError:  # no thread could be started: refuse, keep accepting
                self._slots.release()
                client.close()

    def _serve(self, client: socket.socket) -> None:
        try:
            with contextlib.closing(self._track(client)):
                try:
                    upstream = self._upstream(client)
                except _Refusal as refusal:
                    self._note(self.refused, refusal.what)
                    with contextlib.suppress(OSError):
                        client.sendall(refusal.response())
                    return
                with contextlib.closing(upstream):
                    client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    _relay(client, upstream)
        except OSError:
            pass
        finally:
            with self._lock:
                self._open.discard(client)
            self._slots.release()

    def _upstream(self, client: socket.socket) -> socket.socket:
        """The connection the client's ``CONNECT`` asks for, or a _Refusal: whatever a
        request holds, the client gets an answer and this thread ends quietly."""
        try:
            host, port = _read_connect(client)
            return self._track(self._connect(host, port))
        except (_Refusal, OSError):
            raise
        except Exception as exc:  # noqa: BLE001 - what nothing above foresaw: refused all the same
            raise _Refusal(
                "?", f"the proxy could not handle it ({type(exc).__name__})", 500
            ) from exc

    def _connect(self, host: str, port: int) -> socket.socket:
        where = f"{host}:{port}"
        if port not in self.ports:
            raise _Refusal(where, f"port {port} (only {', '.join(map(str, self.ports))})")
        if not self.allowed_hosts:
            raise _Refusal(where, "no host is allowed (HILBENCH_BUILD_EGRESS_HOSTS is empty)")
        try:
            upstream = create_checked_connection(
                host, port, allowed_hosts=self.allowed_hosts, timeout=CONNECT_TIMEOUT_S
            )
        except EgressRefused as exc:
            raise _Refusal(where, str(exc)) from exc
        except OSError as exc:
            raise _Refusal(where, f"could not connect: {exc}", status=502) from exc
        self._note(self.opened, where)
        return upstream

    def report(self, result) -> None:
        """What the run's result says of the proxy: the connections it opened and refused,
        and a line in the output naming every refusal."""
        result.output += self.summary()
        result.details["egress"] = {"opened": self.opened, "refused": self.refused}

    def summary(self) -> str:
        """A line for the build's log naming every refused connection, or ""."""
        if not self.refused:
            return ""
        shown = "; ".join(dict.fromkeys(self.refused))
        return (
            "\nhilbench sandbox: connections refused (a build reaches only the package "
            f"registries): {shown}\n"
        )


class _Refusal(Exception):
    def __init__(self, where: str, why: str, status: int = 403):
        super().__init__(why)
        self.what, self.status = f"{where} ({why})", status

    def response(self) -> bytes:
        body = f"refused by the build's registry proxy: {self.what}\n".encode()
        reason = HTTPStatus(self.status).phrase
        return (
            f"HTTP/1.1 {self.status} {reason}\r\nContent-Type: text/plain\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        ).encode() + body


def _read_connect(client: socket.socket) -> tuple[str, int]:
    head = b""
    deadline = time.monotonic() + HEAD_TIMEOUT_S
    while b"\r\n\r\n" not in head:
        left = deadline - time.monotonic()
        if left <= 0:
            raise _Refusal("?", f"no request head within {HEAD_TIMEOUT_S} s", status=408)
        client.settimeout(left)
        try:
            piece = client.recv(1024)
        except TimeoutError:
            continue
        if not piece:
            raise _Refusal("?", "the request ended before its head did", status=400)
        head += piece
        if len(head) > HEAD_LIMIT:
            raise _Refusal("?", f"a request head over {HEAD_LIMIT} bytes", status=400)
    try:
        line = head.split(b"\r\n", 1)[0].decode("ascii")
    except UnicodeDecodeError:
        raise _Refusal("?", "a request line not in ASCII (a name goes IDNA-encoded)", 400) from None
    parts = line.split(" ")
    if len(parts) != 3 or parts[0] != "CONNECT":
        raise _Refusal(line[:80], "only CONNECT (HTTPS through the proxy) is relayed", status=405)
    return _authority(parts[1])


_PORT = re.compile(r"[0-9]{1,5}")


def _authority(target: str) -> tuple[str, int]:
    """(host, port) of a ``CONNECT host:port`` (an IPv6 address in brackets), or a 400 naming
    what is wrong: a host the address policy's name rules refuse (``host_name_problem``), a
    port that is not 1 to 65535."""
    host, _, port = target.rpartition(":")
    if not _PORT.fullmatch(port) or not 0 < int(port) < 65536:
        raise _Refusal(target[:80], "not host:port with a port of 1 to 65535", status=400)
    if ":" in host and not host.startswith("["):
        raise _Refusal(target[:80], "an IPv6 address goes in brackets", status=400)
    problem = host_name_problem(host)
    if problem:
        raise _Refusal(target[:80], f"not a host name: {problem}", status=400)
    return host.removeprefix("[").removesuffix("]"), int(port)


def _relay(client: socket.socket, upstream: socket.socket) -> None:
    client.settimeout(IDLE_TIMEOUT_S)
    upstream.settimeout(IDLE_TIMEOUT_S)
    back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
    back.start()
    _pump(client, upstream)
    back.join(timeout=IDLE_TIMEOUT_S)


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(CHUNK):
            sink.sendall(data)
    except OSError:
        pass
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_WR)
