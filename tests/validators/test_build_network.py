"""Issue 24, item 2: an environment build reaches the package registries and nothing else.

The build job runs for real (local sandbox, pip installing from the registry through the
build's proxy); its install step is an attacker's probe of this machine's network."""

import os
import socket
import threading
from pathlib import Path

import pytest

from validators.environments import environment_for

from .gitutil import git
from .test_swe_checks import ENVIRONMENT_SPEC, mirror_of, swe_environment

pytestmark = pytest.mark.django_db

SECRET = "host-loopback-secret-7d1f"

PROBE = r"""
import socket, sys
port, abstract, host_ip = int(sys.argv[1]), sys.argv[2], sys.argv[3]
def attempt(label, family, address):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(5)
    try:
        s.connect(address)
        print(label, "CONNECTED", s.recv(100).decode(errors="replace"))
    except OSError as exc:
        print(label, "refused:", type(exc).__name__)
attempt("loopback", socket.AF_INET, ("127.0.0.1", port))
attempt("host-address", socket.AF_INET, (host_ip, port))
attempt("abstract", socket.AF_UNIX, "\0" + abstract)
listening = set()
for name in ("/proc/net/tcp", "/proc/net/tcp6"):
    for line in open(name).read().splitlines()[1:]:
        fields = line.split()
        if fields[3] == "0A":
            listening.add(int(fields[1].rsplit(":", 1)[1], 16))
print("listening ports:", sorted(listening))
print("unix sockets:", len(open("/proc/net/unix").read().splitlines()) - 1)
# Through the proxy, as pip would: the gateway refuses anything but the registries.
for target in ("127.0.0.1:%d" % port, "localhost:443", "%s:443" % host_ip):
    proxy = socket.create_connection(("127.0.0.1", 3128), timeout=5)
    proxy.sendall(("CONNECT %s HTTP/1.1\r\nHost: x\r\n\r\n" % target).encode())
    print("proxy says to", target, proxy.recv(300).decode(errors="replace").splitlines()[0])
"""


class _Listener:
    """A TCP listener on this machine's loopback and an abstract Unix socket, both answering
    with a secret and counting who connected."""

    def __init__(self):
        self.tcp = socket.create_server(("0.0.0.0", 0))  # noqa: S104 - the attack's target
        self.port = self.tcp.getsockname()[1]
        self.abstract_name = f"hilbench-test-{os.getpid()}"
        self.unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.unix.bind("\0" + self.abstract_name)
        self.unix.listen()
        self.connections = 0
        for server in (self.tcp, self.unix):
            threading.Thread(target=self._serve, args=(server,), daemon=True).start()

    def _serve(self, server):
        while True:
            try:
                client, _ = server.accept()
            except OSError:
                return
            self.connections += 1
            client.sendall(SECRET.encode())
            client.close()

    def close(self):
        self.tcp.close()
        self.unix.close()


def _host_address() -> str:
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("192.0.2.1", 9))  # no packet is sent: only the route is chosen
        return probe.getsockname()[0]
    except OSError:
        return "127.0.0.1"
    finally:
        probe.close()


def test_a_build_reaches_the_registry_but_not_this_machine(tmp_path: Path, app_data):
    listener = _Listener()
    work = tmp_path / "probe-repo"
    (work / "tests").mkdir(parents=True)
    (work / "tests" / "test_x.py").write_text("def test_x():\n    assert True\n")
    (work / "probe.py").write_text(PROBE)
    git(tmp_path, "init", "-q", str(work))
    git(work, "add", "-A")
    git(work, "commit", "-qm", "base")
    try:
        env = swe_environment(
            mirror_of(work, tmp_path / "probe.git"),
            base_commit=git(work, "rev-parse", "HEAD").strip(),
            fail_to_pass=["tests/test_x.py::test_x"],
            test_command="python -m pytest -rA tests",
            environment_spec={
                **ENVIRONMENT_SPEC,  # pytest from the registry, through the proxy
                "install": [
                    f"python probe.py {listener.port} {listener.abstract_name} {_host_address()}"
                ],
            },
        )
        built, failed = environment_for(env)
    finally:
        listener.close()
    build = env.task.environment_builds.order_by("-id").first()
    assert failed is None, build.log  # pip reached the registry
    assert SECRET not in build.log and listener.connections == 0, build.log
    for label in ("loopback", "host-address", "abstract"):
        assert f"{label} refused:" in build.log, build.log
    assert "listening ports: [3128]" in build.log, build.log  # only the sandbox's proxy
    assert build.log.count("proxy says to") == 3, build.log
    assert build.log.count("HTTP/1.1 403 Forbidden") == 3, build.log
    # Each refusal is named in the build's log.
    for target in (f"127.0.0.1:{listener.port}", "localhost:443", f"{_host_address()}:443"):
        assert target in build.log.split("connections refused")[1], build.log
    assert built.manifest["ready"]
