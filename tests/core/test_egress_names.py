"""The address policy's name rules (hilbench_annotate/toolkit/egress.py, security review (b)):
a host that is no IP literal and no well-formed name is refused by name, before the allowlist
is read or the resolver is asked — whose own IDNA encoding raised a UnicodeError that no
caller expected (``pypi.org..`` passed the allowlist: every trailing dot was dropped)."""

import socket

import pytest

from hilbench_annotate.toolkit import egress
from hilbench_annotate.toolkit.egress import (
    EgressRefused,
    create_checked_connection,
    host_is_named,
    host_name_problem,
    resolve_destination,
)

GOOD = [
    "pypi.org",
    "pypi.org.",  # one trailing dot: the root
    "PyPI.Org",
    "files.pythonhosted.org",
    "_service.example-1.org",
    "bücher.example",  # international: IDNA-encodes
    "xn--bcher-kva.example",
    "a" * 63 + ".org",
    ("a" * 62 + ".") * 4,  # 252 characters and the root's dot
    "127.0.0.1",
    "::1",
    "[::1]",
    "[2001:db8::1]",
]
BAD = [
    ("", "an empty name"),
    (".", "an empty name"),
    ("pypi.org..", "an empty label"),
    ("a..b", "an empty label"),
    (".pypi.org", "an empty label"),
    ("a" * 64 + ".org", "a label of 64 characters"),
    (("a" * 63 + ".") * 4 + "org", "characters (a name has at most 253)"),
    ("pypi.org\x00", "a character no host name holds"),
    ("pypi\x00.org.", "a character no host name holds"),
    ("pypi .org", "a character no host name holds"),
    ("user@pypi.org", "a character no host name holds"),
    ("pypi.org/x", "a character no host name holds"),
    ("pypi.org:443", "a character no host name holds"),
    ("pypi%2Eorg", "'%'"),
    ("fe80::1%eth0", "'%'"),
    ("ı..org", "not a name IDNA can encode"),
    ("\u200b.org", "not a name IDNA can encode"),
    ("a" * 70 + "é.org", "not a name IDNA can encode"),
    ("[::1", "not an IPv6 address in brackets"),
    ("::1]", "not an IPv6 address in brackets"),
    ("[]", "not an IPv6 address in brackets"),
    ("[127.0.0.1]", "not an IPv6 address in brackets"),
    ("[fe80::1%25eth0]", "not an IPv6 address in brackets"),
    ("[[::1]]", "not an IPv6 address in brackets"),
]


@pytest.mark.parametrize("host", GOOD)
def test_well_formed_hosts_pass(host):
    assert host_name_problem(host) is None


@pytest.mark.parametrize(("host", "why"), BAD)
def test_malformed_hosts_are_named_with_why(host, why):
    assert why in (host_name_problem(host) or "")


@pytest.fixture
def lookups(monkeypatch):
    """The resolver's calls; any one of them would have raised (the real one's encoding)."""
    calls = []

    def getaddrinfo(host, *args, **kwargs):
        calls.append(host)
        host.encode("idna")
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(egress.socket, "getaddrinfo", getaddrinfo)
    return calls


@pytest.mark.parametrize(("host", "why"), BAD)
def test_a_malformed_host_is_refused_before_any_lookup(host, why, lookups):
    allowed = ["pypi.org", ".pythonhosted.org", "::1"]
    with pytest.raises(EgressRefused, match="is not a host name"):
        resolve_destination(host, 443, allowed_hosts=allowed)
    with pytest.raises(EgressRefused, match="is not a host name"):
        create_checked_connection(host, 443, allowed_hosts=allowed, timeout=1)
    assert lookups == []


def test_only_one_trailing_dot_names_an_allowed_host():
    assert host_is_named("pypi.org.", ["pypi.org"])
    assert not host_is_named("pypi.org..", ["pypi.org"])
    assert not host_is_named("a..pythonhosted.org", [".pythonhosted.org"])


@pytest.mark.parametrize("port", [0, -1, 65536, 10**20, "443"])
def test_a_port_out_of_range_is_refused(port, lookups):
    with pytest.raises(EgressRefused, match="is not a port"):
        resolve_destination("pypi.org", port, allowed_hosts=["pypi.org"])
    assert lookups == []


def test_what_the_resolver_cannot_encode_is_the_policy_s_refusal(monkeypatch):
    """Should a name pass the rules and still not encode (another resolver, a later Python),
    the caller gets EgressRefused, never the resolver's ValueError."""
    monkeypatch.setattr(egress, "host_name_problem", lambda host: None)
    with pytest.raises(EgressRefused, match="not a host name the resolver takes"):
        resolve_destination("a..pypi.org", 443, allowed_hosts=[".pypi.org"])
