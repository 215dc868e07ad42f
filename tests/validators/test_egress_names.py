"""Security review (b): the build's registry proxy refuses, never crashes, on any name.

``CONNECT pypi.org..:443`` passed the allowlist (trailing dots were all dropped before the
comparison) and then raised a ``UnicodeError`` from the resolver's IDNA encoding in the
gateway's thread: the client got no answer. A real gateway (validators/sandbox/egress.py) is
started here, a table of malformed names and then generated ones are sent to it, and each
answer must be an HTTP refusal; afterwards it still relays a good request, and no exception
escaped any thread (``threading.excepthook`` records them; pytest's own warning is an error).
"""

import os
import socket
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hilbench_annotate.toolkit import egress as policy
from validators.sandbox import egress, run_folder
from validators.sandbox.egress import EgressGateway

pytestmark = pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "60"))
ALLOWED = ["pypi.org", ".pythonhosted.org", "127.0.0.1"]


@pytest.fixture
def thread_errors(monkeypatch):
    """Every exception that escapes a thread while the test runs."""
    errors: list[threading.ExceptHookArgs] = []
    monkeypatch.setattr(threading, "excepthook", errors.append)
    yield errors


@pytest.fixture
def no_lookups(monkeypatch):
    """The machine's resolver as the gateway calls it — its own IDNA encoding of the name
    first, where the UnicodeError came from — but for IP literals only: no name is looked up
    (a well-formed allowed name gets the proxy's 502, whatever network this machine has)."""
    real = socket.getaddrinfo

    def getaddrinfo(host, port, family=0, type=0, proto=0, flags=0):  # noqa: A002 - its names
        return real(host, port, family, type, proto, flags | socket.AI_NUMERICHOST)

    monkeypatch.setattr(policy.socket, "getaddrinfo", getaddrinfo)


@pytest.fixture
def echo():
    """A loopback server that echoes what it receives: the good request's destination."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                while data := conn.recv(1024):
                    conn.sendall(data)

    threading.Thread(target=serve, daemon=True).start()
    yield server.getsockname()[1]
    server.close()


def _ask(folder, request: bytes) -> bytes:
    """The gateway's whole answer to ``request`` (it closes after a refusal)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(10)
        client.connect(str(folder / egress.SOCKET_NAME))
        client.sendall(request)
        answer = b""
        while piece := client.recv(4096):
            answer += piece
        return answer


def _status(answer: bytes) -> int:
    assert answer.startswith(b"HTTP/1.1 "), f"no HTTP answer: {answer[:80]!r}"
    return int(answer[9:12])


def _connect(target: bytes) -> bytes:
    return b"CONNECT " + target + b" HTTP/1.1\r\nHost: x\r\n\r\n"


def _assert_still_serves(folder, port: int) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(10)
        client.connect(str(folder / egress.SOCKET_NAME))
        client.sendall(_connect(f"127.0.0.1:{port}".encode()))
        head = b""
        while b"\r\n\r\n" not in head:
            head += client.recv(1)
        assert head.startswith(b"HTTP/1.1 200"), head
        client.sendall(b"ping")
        assert client.recv(4) == b"ping"


LONG_LABEL = "a" * 64
LONG_NAME = ("a" * 63 + ".") * 4 + "pythonhosted.org"  # 272 characters
MALFORMED = [
    # (the CONNECT target as sent, the status the proxy answers)
    (b"pypi.org..:443", 400),  # the finding
    (b"pypi.org...:443", 400),
    (b"a..pythonhosted.org:443", 400),
    (b".pypi.org:443", 400),
    (b".:443", 400),
    (b"..:443", 400),
    (b":443", 400),
    (LONG_LABEL.encode() + b".pythonhosted.org:443", 400),
    (LONG_NAME.encode() + b":443", 400),
    ("pypı.org:443".encode(), 400),  # non-ASCII, as UTF-8
    ("bücher.pythonhosted.org:443".encode("latin-1"), 400),  # non-ASCII, as Latin-1
    ("\u200b.pythonhosted.org:443".encode(), 400),  # IDNA maps it to an empty label
    (b"\xff\xfe.pythonhosted.org:443", 400),  # not text at all
    (b"pypi.org\x00:443", 400),
    (b"pypi.org\x00.evil.example:443", 400),
    (b"pypi%2Eorg:443", 400),
    (b"%70ypi.org:443", 400),
    (b"pypi.org%00:443", 400),
    (b"user@pypi.org:443", 400),
    (b"pypi.org/x:443", 400),
    (b"pypi.org\t:443", 400),
    (b"[::1:443", 400),
    (b"::1]:443", 400),
    (b"[[::1]]:443", 400),
    (b"[]:443", 400),
    (b"[127.0.0.1]:443", 400),
    (b"[::g]:443", 400),
    (b"[fe80::1%25eth0]:443", 400),
    (b"[fe80::1%eth0]:443", 400),
    (b"::1:443", 400),  # an IPv6 address goes in brackets
    (b"pypi.org", 400),
    (b"pypi.org:", 400),
    (b"pypi.org:0", 400),
    (b"pypi.org:65536", 400),
    (b"pypi.org:99999999999999999999", 400),
    (b"pypi.org:-443", 400),
    (b"pypi.org:+443", 400),
    (b"pypi.org:44a", 400),
    (b"pypi.org:0x1bb", 400),
    ("pypi.org:４４３".encode(), 400),  # fullwidth digits: str.isdigit() said yes
    ("pypi.org:²".encode(), 400),  # so did it for ², and int() then raised
    (b"pypi.org:443:443", 400),
    (b"", 400),
    (b"evil.example:443", 403),  # well formed, not allowed: refused before any lookup
    (b"pypi.org:22", 403),  # an allowed host on a port that is not
]


def test_every_malformed_name_is_refused_and_the_gateway_serves_on(thread_errors, no_lookups, echo):
    with run_folder() as folder, EgressGateway(folder, ALLOWED, ports=[443, echo]) as gateway:
        answers = {target: _status(_ask(folder, _connect(target))) for target, _ in MALFORMED}
        assert answers == dict(MALFORMED)
        _assert_still_serves(folder, echo)
    for target, _ in MALFORMED:  # each refusal is named in the build's log
        if target.isascii() and target.decode().isprintable() and target:
            assert any(line.startswith(target.decode()[:80]) for line in gateway.refused), target
    assert all(line.isprintable() for line in gateway.refused)
    assert not any("could not handle" in line for line in gateway.refused), gateway.refused
    assert thread_errors == []


FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
# Labels, good and bad, before an allowed name: what passed the allowlist and then broke the
# resolver's encoding (``x..pythonhosted.org``, ``pypi.org..``).
labels = st.sampled_from(
    ["", "a", "files", "pypi", "é", "ı", "\u200b", "x" * 64, "a\x00b", "%2e", "-"]
)
allowed_ends = st.sampled_from(["pypi.org", ".pythonhosted.org", "127.0.0.2", "[::2]"])
hosts = st.one_of(
    st.text(max_size=80),
    st.binary(max_size=80),
    st.lists(st.text(max_size=70), max_size=6).map(".".join),  # labels, some empty or long
    st.tuples(
        st.lists(labels, max_size=4).map(".".join), allowed_ends, st.text(".[]:", max_size=3)
    ).map("".join),
)
ports = st.one_of(st.just("443"), st.integers(-(10**6), 10**7).map(str), st.text(max_size=8))


def test_generated_names_are_refused_and_the_gateway_serves_on(thread_errors, no_lookups, echo):
    answers: list[int] = []
    with run_folder() as folder, EgressGateway(folder, ALLOWED, ports=[443, echo]) as gateway:

        @FUZZ
        @given(host=hosts, port=ports)
        def ask(host, port):
            target = (host if isinstance(host, bytes) else host.encode()) + b":"
            target += port.encode()
            status = _status(_ask(folder, _connect(target)))
            # 502: a well-formed allowed name (``no_lookups``: it resolves to nothing).
            assert status in (400, 403, 405, 502), (target, status)
            answers.append(status)

        ask()
        _assert_still_serves(folder, echo)
    assert answers and 400 in answers
    assert not any("could not handle" in line for line in gateway.refused), gateway.refused
    assert thread_errors == []


def test_what_nothing_foresaw_is_refused_too(thread_errors, no_lookups, echo, monkeypatch):
    """The last line of defence: an error no check above expected still gets an answer (500)
    and is named; the thread ends quietly and the gateway serves on."""
    real = egress.create_checked_connection

    def flaky(host, port, **kwargs):
        if host == "pypi.org":
            raise RuntimeError("a resolver nobody expected")
        return real(host, port, **kwargs)

    monkeypatch.setattr(egress, "create_checked_connection", flaky)
    with run_folder() as folder, EgressGateway(folder, ALLOWED, ports=[443, echo]) as gateway:
        assert _status(_ask(folder, _connect(b"pypi.org:443"))) == 500
        _assert_still_serves(folder, echo)
    assert any("could not handle it (RuntimeError)" in line for line in gateway.refused)
    assert thread_errors == []
