"""The one address policy for connections the app opens to addresses users give it (model
endpoints, proxied downloads…). No Django: the caller passes the operator's allowlist in.

The policy, for a host and port:

- the host must be an IP literal or a well-formed name (``host_name_problem``: no empty or
  over-long label, nothing IDNA cannot encode, no ``%``) and the port 1 to 65535; anything
  else is refused, by name, before the allowlist is read or any lookup is made;
- when ``allowed_hosts`` is non-empty, the host must be named in it: a name (compared
  case-insensitively, a trailing dot ignored), an IP literal (compared as an address, so
  ``::1`` and ``0:0::1`` are one), or a leading-dot entry such as ``.example.org``, which
  allows example.org and every name under it;
- every address the host resolves to must be public: loopback, link-local, private
  (RFC 1918, ULA fc00::/7), shared (CGNAT 100.64/10), unspecified, multicast, reserved and
  other special-purpose addresses, and IPv4-mapped / 6to4 / Teredo / NAT64 forms of them, are
  refused — unless the host is named in ``allowed_hosts``: an operator who named a host (or a
  domain) trusts whatever it resolves to (an internal vLLM, a registry mirror).

A connection is made only to an address that was checked (``create_checked_connection``):
there is no second DNS lookup between the check and the connect, so a name cannot resolve to a
public address for the check and to 127.0.0.1 for the connection.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Sequence

from hilbench_annotate.errors import DomainError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_SHARED_V4 = ipaddress.ip_network("100.64.0.0/10")  # CGNAT; ipaddress calls it neither
_NAT64 = ipaddress.ip_network("64:ff9b::/96")  # well-known NAT64 prefix: an IPv4 inside


class EgressRefused(DomainError):
    """The policy refuses a connection to this host; the message names the host and why."""


_LABEL = re.compile(r"[A-Za-z0-9_-]{1,63}")
MAX_NAME = 253  # characters of a DNS name, without its trailing dot


def host_name_problem(host: str) -> str | None:
    """Why ``host`` is neither an IP literal nor a name a resolver can be asked for, or None.

    An IPv6 literal may stand in brackets; a name is labels of 1 to 63 letters, digits, ``-``
    or ``_`` (an international name: once IDNA-encoded), at most 253 characters, with at
    most one trailing dot. No ``%`` (a zone id, an encoding), no empty label, no control
    character: what the resolver's own encoding would raise on is refused here, by name."""
    if host.startswith("[") or host.endswith("]"):
        inner = host[1:-1] if host.startswith("[") and host.endswith("]") else ""
        if "%" in inner or _as_ip(inner) is None or ":" not in inner:
            return "not an IPv6 address in brackets"
        return None
    if "%" in host:
        return "it holds a '%' (no zone id, no %-encoding)"
    if _as_ip(host) is not None:
        return None
    try:
        name = host if host.isascii() else host.encode("idna").decode("ascii")
    except UnicodeError:
        return "not a name IDNA can encode (an empty, over-long or forbidden label)"
    name = name.removesuffix(".")
    if not name:
        return "an empty name"
    if len(name) > MAX_NAME:
        return f"{len(name)} characters (a name has at most {MAX_NAME})"
    for label in name.split("."):
        if not label:
            return "an empty label"
        if len(label) > 63:
            return f"a label of {len(label)} characters (at most 63)"
        if not _LABEL.fullmatch(label):
            return "a character no host name holds (letters, digits, '-' and '_' only)"
    return None


def _normal_name(host: str) -> str:
    return host.strip().strip("[]").removesuffix(".").lower()


def _as_ip(text: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None


def host_is_named(host: str, allowed_hosts: Sequence[str]) -> bool:
    """Whether ``host`` is named by an entry of the allowlist (see the module's rules)."""
    name = _normal_name(host)
    if not name or host_name_problem(host.strip()):
        return False
    name_ip = _as_ip(name)
    for entry in allowed_hosts:
        wanted = _normal_name(entry)
        if not wanted:
            continue
        if name_ip is not None:
            if _as_ip(wanted) == name_ip:
                return True
        elif wanted.startswith("."):
            if name == wanted[1:] or name.endswith(wanted):
                return True
        elif name == wanted:
            return True
    return False


def _embedded_v4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]  # the client's address
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def address_refusal(address: str | IPAddress) -> str | None:
    """Why the policy refuses ``address`` for a host not named by the operator (``"loopback"``,
    ``"private"``…), or None for a public address."""
    ip = address if not isinstance(address, str) else _as_ip(address)
    if ip is None:
        return "not an IP address"
    if isinstance(ip, ipaddress.IPv6Address):
        inner = _embedded_v4(ip)
        if inner is not None:
            reason = address_refusal(inner)
            return f"{reason} (inside an IPv6 address)" if reason else None
    for reason, hit in (
        ("unspecified", ip.is_unspecified),
        ("loopback", ip.is_loopback),
        ("link-local", ip.is_link_local),
        ("multicast", ip.is_multicast),
        ("shared (CGNAT)", isinstance(ip, ipaddress.IPv4Address) and ip in _SHARED_V4),
        ("reserved", ip.is_reserved),
        ("private", ip.is_private),
        ("not a public address", not ip.is_global),
    ):
        if hit:
            return reason
    return None


def _checked_addresses(
    host: str, port: int, allowed_hosts: Sequence[str]
) -> list[tuple[socket.AddressFamily, tuple]]:
    """(family, sockaddr) of every address a connection to host:port may use."""
    problem = host_name_problem(host.strip())
    if problem:
        raise EgressRefused(f"{host!r} is not a host name: {problem}.")
    if not isinstance(port, int) or not 0 < port < 65536:
        raise EgressRefused(f"{port!r} is not a port (1 to 65535).")
    named = host_is_named(host, allowed_hosts)
    if allowed_hosts and not named:
        raise EgressRefused(
            f"{host} is not an allowed host: the operator's allowlist names only "
            f"{', '.join(allowed_hosts)}."
        )
    # getaddrinfo's own errors (an unknown name: socket.gaierror, an OSError) pass through;
    # a name it cannot even encode (a UnicodeError, a ValueError) is the policy's refusal.
    try:
        infos = socket.getaddrinfo(host.strip().strip("[]"), port, type=socket.SOCK_STREAM)
    except ValueError as error:
        raise EgressRefused(f"{host!r} is not a host name the resolver takes: {error}.") from None
    found: list[tuple[socket.AddressFamily, tuple]] = []
    for family, _type, _proto, _name, sockaddr in infos:
        if family not in (socket.AF_INET, socket.AF_INET6):
            continue
        if not named:
            reason = address_refusal(str(sockaddr[0]))
            if reason:
                # One refused address refuses the host: which one a connection would try
                # first is the resolver's choice, not ours.
                raise EgressRefused(
                    f"{host} resolves to {sockaddr[0]}, a {reason} address; the app does not "
                    f"connect there unless the operator allows {host} by name."
                )
        if (family, sockaddr) not in found:
            found.append((family, sockaddr))
    if not found:
        raise EgressRefused(f"{host} resolves to no IP address.")
    return found


def resolve_destination(host: str, port: int, *, allowed_hosts: Sequence[str] = ()) -> list[str]:
    """The IP addresses a connection to ``host:port`` may use, in the resolver's order.

    Raises EgressRefused (naming the host and why) when the policy refuses the host or any
    address it resolves to; an unknown name raises socket.gaierror as getaddrinfo does.
    """
    addresses: list[str] = []
    for _family, sockaddr in _checked_addresses(host, port, allowed_hosts):
        if sockaddr[0] not in addresses:
            addresses.append(sockaddr[0])
    return addresses


def create_checked_connection(
    host: str,
    port: int,
    *,
    allowed_hosts: Sequence[str] = (),
    timeout: float | None = None,
) -> socket.socket:
    """A TCP connection to ``host:port`` made only to an address ``resolve_destination``
    allows (the checked address itself: no second lookup). ``timeout`` None leaves the
    socket's default. Raises EgressRefused, or the OSError of the last address tried."""
    last_error: OSError | None = None
    for family, sockaddr in _checked_addresses(host, port, allowed_hosts):
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            if timeout is not None:
                sock.settimeout(timeout)
            sock.connect(sockaddr)
        except OSError as error:
            sock.close()
            last_error = error
            continue
        return sock
    assert last_error is not None  # _checked_addresses never returns an empty list
    raise last_error
