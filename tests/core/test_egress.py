"""The outbound address policy (hilbench_annotate/toolkit/egress.py).

Names resolve through a patched getaddrinfo, so the tests say what a name resolves to
(a rebinding name, a name with one private address among public ones) without a resolver;
connections go to real loopback sockets.
"""

import socket

import pytest

from hilbench_annotate.toolkit import egress
from hilbench_annotate.toolkit.egress import (
    EgressRefused,
    address_refusal,
    create_checked_connection,
    host_is_named,
    resolve_destination,
)

PUBLIC = "93.184.216.34"
PUBLIC6 = "2606:2800:220:1:248:1893:25c8:1946"


@pytest.fixture
def dns(monkeypatch):
    """A fake resolver: ``dns["name"] = ["1.2.3.4", …]``; IP literals resolve to themselves."""
    table: dict[str, list[str]] = {}
    calls: list[str] = []

    def getaddrinfo(host, port, family=0, type=0, proto=0, flags=0):
        calls.append(host)
        addresses = table.get(host.lower().rstrip("."))
        if addresses is None:
            try:
                socket.inet_pton(socket.AF_INET6 if ":" in host else socket.AF_INET, host)
            except OSError:
                raise socket.gaierror(socket.EAI_NONAME, "Name or service not known") from None
            addresses = [host]
        out = []
        for address in addresses:
            if ":" in address:
                out.append((socket.AF_INET6, socket.SOCK_STREAM, 6, "", (address, port, 0, 0)))
            else:
                out.append((socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port)))
        return out

    monkeypatch.setattr(egress.socket, "getaddrinfo", getaddrinfo)
    table["calls"] = calls  # type: ignore[assignment]
    return table


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "loopback"),
        ("127.8.9.10", "loopback"),
        ("::1", "loopback"),
        ("169.254.169.254", "link-local"),
        ("fe80::1", "link-local"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("192.168.1.1", "private"),
        ("100.64.0.1", "shared (CGNAT)"),
        ("100.127.255.254", "shared (CGNAT)"),
        ("fc00::1", "private"),
        ("fd12:3456::1", "private"),
        ("0.0.0.0", "unspecified"),  # noqa: S104 - an address refused, not bound
        ("::", "unspecified"),
        ("224.0.0.1", "multicast"),
        ("ff02::1", "multicast"),
        ("240.0.0.1", "reserved"),
        ("255.255.255.255", "reserved"),
        ("203.0.113.80", "private"),
        ("::ffff:127.0.0.1", "loopback (inside an IPv6 address)"),
        ("::ffff:10.0.0.1", "private (inside an IPv6 address)"),
        ("::ffff:169.254.169.254", "link-local (inside an IPv6 address)"),
        ("2002:7f00:1::", "loopback (inside an IPv6 address)"),
        ("64:ff9b::a9fe:a9fe", "link-local (inside an IPv6 address)"),
    ],
)
def test_special_addresses_are_refused(address, reason):
    assert address_refusal(address) == reason


@pytest.mark.parametrize("address", [PUBLIC, "8.8.8.8", PUBLIC6, "::ffff:93.184.216.34"])
def test_public_addresses_pass(address):
    assert address_refusal(address) is None


def test_a_host_resolving_to_loopback_is_refused_naming_host_and_reason(dns):
    dns["evil.example"] = ["127.0.0.1"]
    with pytest.raises(EgressRefused, match=r"evil\.example resolves to 127\.0\.0\.1, a loopback"):
        resolve_destination("evil.example", 80)


def test_one_private_address_among_public_ones_refuses_the_host(dns):
    dns["mixed.example"] = [PUBLIC, "10.0.0.7"]
    with pytest.raises(EgressRefused, match="private"):
        resolve_destination("mixed.example", 443)


def test_ip_literals_are_checked_too(dns):
    for literal in ("127.0.0.1", "[::1]", "169.254.169.254", "::ffff:127.0.0.1"):
        with pytest.raises(EgressRefused):
            resolve_destination(literal, 80)


def test_a_public_host_resolves_to_its_addresses(dns):
    dns["api.example"] = [PUBLIC, PUBLIC6, PUBLIC]
    assert resolve_destination("api.example", 443) == [PUBLIC, PUBLIC6]


def test_with_an_allowlist_only_named_hosts_pass(dns):
    dns["api.example"] = [PUBLIC]
    dns["other.example"] = [PUBLIC]
    assert resolve_destination("API.Example.", 443, allowed_hosts=["api.example"]) == [PUBLIC]
    with pytest.raises(EgressRefused, match=r"other\.example is not an allowed host"):
        resolve_destination("other.example", 443, allowed_hosts=["api.example"])
    # A refused host is refused before any lookup.
    assert "other.example" not in dns["calls"]


def test_a_named_host_passes_whatever_its_address(dns):
    dns["pypi.org"] = ["203.0.113.80"]
    dns["gpu-1.internal"] = ["10.0.0.5"]
    assert resolve_destination("pypi.org", 443, allowed_hosts=["pypi.org"]) == ["203.0.113.80"]
    assert resolve_destination("gpu-1.internal", 80, allowed_hosts=["gpu-1.internal"]) == [
        "10.0.0.5"
    ]
    assert resolve_destination("127.0.0.1", 80, allowed_hosts=["127.0.0.1"]) == ["127.0.0.1"]


def test_leading_dot_entries_allow_the_domain_and_its_subdomains(dns):
    dns["files.pythonhosted.org"] = ["203.0.113.80"]
    dns["pythonhosted.org"] = ["203.0.113.80"]
    dns["evilpythonhosted.org"] = [PUBLIC]
    allowed = [".pythonhosted.org"]
    assert host_is_named("files.pythonhosted.org", allowed)
    assert host_is_named("pythonhosted.org", allowed)
    assert not host_is_named("evilpythonhosted.org", allowed)
    assert resolve_destination("files.pythonhosted.org", 443, allowed_hosts=allowed)
    with pytest.raises(EgressRefused):
        resolve_destination("evilpythonhosted.org", 443, allowed_hosts=allowed)


def test_ip_literal_entries_compare_as_addresses():
    assert host_is_named("[0:0::1]", ["::1"])
    assert host_is_named("127.0.0.1", ["127.0.0.1"])
    assert not host_is_named("127.0.0.2", ["127.0.0.1"])
    # A name spelled like an address is not the address it might resolve to.
    assert not host_is_named("2130706433", ["127.0.0.1"])
    assert not host_is_named("localhost", ["127.0.0.1"])


def test_an_unknown_name_raises_the_resolver_error(dns):
    with pytest.raises(socket.gaierror):
        resolve_destination("nowhere.invalid", 80)


@pytest.fixture
def listener():
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    yield server
    server.close()


def test_a_checked_connection_goes_to_the_checked_address(dns, listener):
    port = listener.getsockname()[1]
    dns["model.lab"] = ["127.0.0.1"]
    sock = create_checked_connection("model.lab", port, allowed_hosts=["model.lab"], timeout=5)
    with sock:
        assert sock.getpeername() == ("127.0.0.1", port)
        assert sock.gettimeout() == 5
    # Exactly one lookup: the connection uses the checked address, not a second resolution.
    assert dns["calls"] == ["model.lab"]


def test_a_checked_connection_to_a_refused_address_never_connects(dns, listener, monkeypatch):
    port = listener.getsockname()[1]
    dns["rebind.example"] = ["127.0.0.1"]
    connected = []
    monkeypatch.setattr(socket.socket, "connect", lambda self, addr: connected.append(addr))
    with pytest.raises(EgressRefused, match="loopback"):
        create_checked_connection("rebind.example", port)
    with pytest.raises(EgressRefused, match="not an allowed host"):
        create_checked_connection("127.0.0.1", port, allowed_hosts=["localhost"])
    assert connected == []


def test_a_checked_connection_tries_the_next_address(dns, listener):
    port = listener.getsockname()[1]
    dns["two.lab"] = ["127.0.0.2", "127.0.0.1"]  # nothing listens on 127.0.0.2
    with create_checked_connection("two.lab", port, allowed_hosts=["two.lab"], timeout=5) as s:
        assert s.getpeername() == ("127.0.0.1", port)


def test_the_error_of_the_last_address_is_raised(dns, listener):
    port = listener.getsockname()[1]
    listener.close()
    with pytest.raises(ConnectionRefusedError):
        create_checked_connection("127.0.0.1", port, allowed_hosts=["127.0.0.1"], timeout=5)
