"""Where a language model provider may connect (no Django): public addresses only, checked when it connects.

A provider's HTTP session (`session(allow_private)`) resolves the endpoint's host name itself, once per
connection, refuses the connection when *any* address it resolves to is not public — loopback, link-local (cloud
metadata at 169.254.169.254), private, carrier-grade NAT, unspecified (0.0.0.0 reaches this machine), multicast,
reserved, or an IPv6 address that embeds one of those (IPv4-mapped, 6to4, Teredo, NAT64) — and then connects to
the very address it checked. So every spelling of an address is judged by what it means, not by how it is
written (dotted, hex, octal, decimal, `127.1`, `[::ffff:169.254.169.254]`: the system's resolver reads them all),
a name is judged by what it resolves to (`localhost`, `metadata.google.internal`), and a name whose DNS answer
changes between a check and the connection (DNS rebinding) cannot pass, because there is no second lookup.

Only an operator may allow the other addresses, for an endpoint they configured (`allow_private`: a model server
on the same host or network). Either way the session follows no redirects (a caller passes
`allow_redirects=False`; a 3xx is an answer) and ignores the environment's proxies and `.netrc` (a proxy would
resolve the name itself, past the check, and `.netrc` would add credentials the operator never configured).
"""

from __future__ import annotations

import ipaddress
import socket
import sys
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, NameResolutionError, NewConnectionError
from urllib3.util import connection as urllib3_connection

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))


def _embedded(ip: IPAddress) -> list[IPAddress]:
    """The address and every IPv4 address an IPv6 address carries (and is routed to by some gateway)."""
    found: list[IPAddress] = [ip]
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            found.append(ip.ipv4_mapped)
        if ip.sixtofour is not None:
            found.append(ip.sixtofour)
        if ip.teredo is not None:
            found.extend(ip.teredo)
        if any(ip in net for net in NAT64):
            found.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    return found


def address_problem(address: str | IPAddress) -> str | None:
    """Why the site may not connect to this address (None: a public address)."""
    ip = ipaddress.ip_address(address) if isinstance(address, str) else address
    for one in _embedded(ip):
        if one.is_loopback:
            return "a loopback address"
        if one.is_link_local:
            return "a link-local address (where cloud metadata services answer)"
        if one.is_unspecified:
            return "an unspecified address (it reaches this machine)"
        if one.is_multicast:
            return "a multicast address"
        if one.is_private:
            return "a private address"
        if not one.is_global:
            return "not a public address"
    return None


def resolve(host: str, port: int) -> list[tuple[Any, ...]]:
    """The host's addresses for a TCP connection (getaddrinfo's tuples). One lookup per connection."""
    return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)


def literal_addresses(host: str) -> list[str]:
    """The addresses a host written as a number means, in any spelling the resolver accepts (`2852039166`,
    `0xa9fea9fe`, `0251.0376.0251.0376`, `127.1`, `::ffff:a9fe:a9fe`); [] for a name (no lookup is made)."""
    try:
        infos = socket.getaddrinfo(host.strip("[]"), None, type=socket.SOCK_STREAM, flags=socket.AI_NUMERICHOST)
    except (socket.gaierror, UnicodeError):
        return []
    return sorted({info[4][0] for info in infos})


def host_problem(host: str) -> str | None:
    """Why a host written in a URL is refused without a lookup: a literal address that is not public."""
    for address in literal_addresses(host):
        problem = address_problem(address)
        if problem:
            return f"{host} is {address}, {problem}"
    return None


class RefusedAddress(NewConnectionError):
    """The host resolves to an address the site does not connect to (nothing was sent)."""

    def __init__(self, conn: Any, host: str, address: str, problem: str):
        self.host, self.address, self.problem = host, address, problem
        super().__init__(conn, f"{host} resolves to {address}, {problem}: refused")


class _Checked:
    """urllib3's connection, with its socket opened here: resolve once, check every address, connect to one of
    the addresses checked."""

    host: str
    port: int
    timeout: Any
    source_address: Any
    socket_options: Any
    _dns_host: str

    def _new_conn(self) -> socket.socket:
        try:
            infos = resolve(self._dns_host, self.port)
        except socket.gaierror as exc:
            raise NameResolutionError(self.host, self, exc) from exc  # type: ignore[arg-type]
        addresses = list(dict.fromkeys(info[4][0] for info in infos))
        for address in addresses:  # any: a name answering one public and one private address is refused
            problem = address_problem(address)
            if problem:
                raise RefusedAddress(self, self.host, address, problem)
        error: Exception | None = None
        for address in addresses:
            try:
                sock = urllib3_connection.create_connection(
                    (address, self.port), self.timeout, source_address=self.source_address,
                    socket_options=self.socket_options)
            except TimeoutError as exc:
                error = ConnectTimeoutError(self, f"Connection to {self.host} timed out. "
                                                  f"(connect timeout={self.timeout})")
                error.__cause__ = exc
                continue
            except OSError as exc:
                error = NewConnectionError(self, f"Failed to establish a new connection: {exc}")  # type: ignore[arg-type]
                error.__cause__ = exc
                continue
            sys.audit("http.client.connect", self, self.host, self.port)
            return sock
        raise error or NewConnectionError(self, f"{self.host} resolves to no address")  # type: ignore[arg-type]


class CheckedHTTPConnection(_Checked, HTTPConnection):
    pass


class CheckedHTTPSConnection(_Checked, HTTPSConnection):
    pass  # TLS still verifies the certificate against the host name (urllib3 wraps the socket opened above)


class CheckedHTTPConnectionPool(HTTPConnectionPool):
    ConnectionCls = CheckedHTTPConnection


class CheckedHTTPSConnectionPool(HTTPSConnectionPool):
    ConnectionCls = CheckedHTTPSConnection


class CheckedAdapter(HTTPAdapter):
    """requests' adapter whose pools open their connections through `_Checked`."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": CheckedHTTPConnectionPool,
                                                   "https": CheckedHTTPSConnectionPool}


def session(allow_private: bool = False) -> requests.Session:
    """A requests session for a provider: public addresses only unless `allow_private`; no environment proxies
    or `.netrc`. Callers pass `allow_redirects=False` on every request."""
    out = requests.Session()
    out.trust_env = False
    if not allow_private:
        adapter = CheckedAdapter()
        out.mount("http://", adapter)
        out.mount("https://", adapter)
    return out


def refusal(exc: BaseException) -> RefusedAddress | None:
    """The RefusedAddress behind a requests error, if that is why the connection was not made."""
    seen: set[int] = set()
    stack: list[BaseException] = [exc]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, RefusedAddress):
            return current
        stack += [a for a in getattr(current, "args", ()) if isinstance(a, BaseException)]
        stack += [e for e in (getattr(current, "reason", None), current.__cause__, current.__context__)
                  if isinstance(e, BaseException)]
    return None
