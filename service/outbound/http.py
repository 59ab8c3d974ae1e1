"""The one HTTP client for requests the service makes on someone's behalf: an LMS's OpenID
configuration and registration endpoint, its JWKS, token, AGS and NRPS endpoints, webhooks.

Every request follows one policy (`OutboundPolicy`, from the settings):

- https URLs; plain http only to a network the operator allows (by default, outside production,
  loopback and the private networks).
- The host is resolved once, and every address it resolves to must be public: loopback, private,
  link-local, shared (CGNAT), reserved, unspecified and multicast addresses are refused unless the
  operator allows their network (OUTBOUND_ALLOWED_NETWORKS); cloud metadata addresses, unspecified
  and multicast ones always. An IPv6 address carrying an IPv4 one (::ffff:a.b.c.d, 64:ff9b::/96,
  2002::/16) is judged by the IPv4 one too.
- The connection goes to an address that was checked: no second lookup, which a name that
  rebinds between the check and the connection could answer differently.
- One deadline for the whole request (resolving, connecting, sending and every read together), so
  a server that trickles its answer a byte at a time is cut off when the deadline passes.
- The body is read up to a size limit, and redirects are not followed: a webhook or platform URL
  is the one that was registered, and a redirect could point a request signed for it elsewhere.

Proxies from the environment (HTTPS_PROXY) are not used: a proxy would resolve the name itself,
past the address check.
"""

from __future__ import annotations

import http.client
import io
import ipaddress
import json
import socket
import ssl
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..config import Settings

MAX_RESPONSE_BYTES = 64 * 1024
USER_AGENT = "gradquiz"
SEND_CHUNK_BYTES = 16 * 1024

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# Cloud instance metadata (AWS, ECS, EKS, GCP, Azure, Alibaba, Oracle): credentials live there.
# Refused even inside an allowed network.
METADATA_ADDRESSES = frozenset(ipaddress.ip_address(a) for a in (
    "169.254.169.254", "169.254.170.2", "169.254.170.23", "fd00:ec2::254", "fd00:ec2::23",
    "168.63.129.16", "100.100.100.200", "192.0.0.192"))
NAT64 = ipaddress.ip_network("64:ff9b::/96")
# What "loopback and private" means for OUTBOUND_ALLOWED_NETWORKS=private (and the default outside
# production): the networks a service on the same machine or site is on.
PRIVATE_NETWORKS = tuple(ipaddress.ip_network(n) for n in (
    "127.0.0.0/8", "::1/128", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7"))


class HttpError(Exception):
    """No HTTP answer: the URL or its address was refused, the connection failed, or the deadline passed."""


class AddressRefused(HttpError):
    """The policy refused the URL: its scheme, or an address its host resolves to."""


class DeadlinePassed(HttpError):
    """The whole request took longer than the policy's deadline."""


class OutboundBusy(Exception):
    """This process makes as many outbound calls inside web requests as it may at once."""


class UnreadableJson(ValueError):
    """The body is not one JSON object; `kind` says why: "too_large" (cut at the read limit),
    "not_json", or "not_object"."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


@dataclass(frozen=True)
class HttpResponse:
    status: int
    headers: Mapping[str, str]
    body: bytes
    # The body reached the read limit (send's max_bytes): what was read may be cut.
    truncated: bool = False

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def json_object(self) -> dict[str, Any]:
        """The body as a JSON object; UnreadableJson when it was cut, is not JSON, or is another value."""
        if self.truncated:
            raise UnreadableJson("too_large")
        try:
            parsed = json.loads(self.body)
        except ValueError:
            raise UnreadableJson("not_json") from None
        if not isinstance(parsed, dict):
            raise UnreadableJson("not_object")
        return parsed


def _carried_ipv4(address: IpAddress) -> IpAddress:
    """The IPv4 address an IPv6 one carries (mapped, NAT64, 6to4), else the address itself."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address.sixtofour is not None:
            return address.sixtofour
        if address in NAT64:
            return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address


def is_public(address: IpAddress) -> bool:
    """Globally reachable unicast: none of the special-purpose ranges."""
    return (address.is_global and not address.is_multicast and not address.is_reserved
            and not address.is_link_local and not address.is_loopback and not address.is_private)


@dataclass(frozen=True)
class OutboundPolicy:
    """Where a request may go, and how long it may take."""

    # Networks that are not public but may be reached all the same (OUTBOUND_ALLOWED_NETWORKS).
    allowed_networks: tuple[IpNetwork, ...]
    # The whole request, from resolving the host to the last byte read.
    deadline_seconds: float

    def refusal(self, address: IpAddress) -> str | None:
        """Why the policy refuses `address`, or None if it may be reached."""
        carried = _carried_ipv4(address)  # judged by the IPv4 address it carries, if it carries one
        if address in METADATA_ADDRESSES or carried in METADATA_ADDRESSES:
            return "a cloud metadata address"
        if address.is_unspecified or carried.is_unspecified or address.is_multicast or carried.is_multicast:
            return "not a unicast address"
        if is_public(carried):
            return None
        if self.in_allowed_network(address):
            return None
        return "not a public address"

    def in_allowed_network(self, address: IpAddress) -> bool:
        carried = _carried_ipv4(address)
        return any(a in network for network in self.allowed_networks for a in {address, carried}
                   if a.version == network.version)

    def check(self, url: str, *, deadline: float | None = None) -> list[IpAddress]:
        """The addresses `url`'s host resolves to, every one allowed; AddressRefused otherwise."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise AddressRefused("only http(s):// URLs are allowed")
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            raise AddressRefused("the URL's port is not a number") from None
        if deadline is None:
            deadline = time.monotonic() + self.deadline_seconds
        addresses = _resolve(parts.hostname, port, deadline)
        if parts.scheme == "http" and not all(self.in_allowed_network(a) for a in addresses):
            raise AddressRefused("only https:// URLs are allowed (plain http only to a network the operator allows)")
        for address in addresses:
            reason = self.refusal(address)
            if reason is not None:
                raise AddressRefused(f"{parts.hostname} resolves to {address}, {reason}")
        return addresses


def _resolve(host: str, port: int, deadline: float) -> list[IpAddress]:
    """The host's addresses, looked up once, within the deadline (a lookup has no timeout of its
    own: it runs in a thread of its own, left to finish alone if the deadline passes)."""
    found: dict[str, Any] = {}

    def look_up() -> None:
        try:
            found["infos"] = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as exc:
            found["error"] = exc

    lookup = threading.Thread(target=look_up, name="gradquiz-outbound-lookup", daemon=True)
    lookup.start()
    lookup.join(max(deadline - time.monotonic(), 0))
    if lookup.is_alive():
        raise DeadlinePassed(f"no answer in time: looking up {host} took too long")
    if "error" in found:
        raise HttpError(f"cannot resolve {host!r}: {found['error']}")
    addresses: list[IpAddress] = []
    for info in found["infos"]:
        address = ipaddress.ip_address(info[4][0].split("%")[0])  # drop an IPv6 zone (fe80::1%eth0)
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise HttpError(f"cannot resolve {host!r}")
    return addresses


class _DeadlineSocket:
    """A connected socket each of whose sends and receives may take only what is left before the deadline."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self.sock, self.deadline = sock, deadline

    def _arm(self) -> None:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the deadline passed")
        self.sock.settimeout(left)

    def sendall(self, data: bytes) -> None:
        view = memoryview(data)
        for start in range(0, len(view), SEND_CHUNK_BYTES):
            self._arm()
            self.sock.sendall(view[start:start + SEND_CHUNK_BYTES])

    def recv_into(self, buffer: Any, nbytes: int = 0) -> int:
        self._arm()
        return self.sock.recv_into(buffer, nbytes)

    def makefile(self, mode: str) -> io.BufferedReader:
        return io.BufferedReader(_DeadlineReader(self))

    def close(self) -> None:
        pass  # http.client closes its connection while the response is still read: send() closes the socket


class _DeadlineReader(io.RawIOBase):
    def __init__(self, sock: _DeadlineSocket) -> None:
        self.sock = sock

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        return self.sock.recv_into(buffer)


def _connect(address: IpAddress, port: int, deadline: float) -> socket.socket:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("the deadline passed")
    sock = socket.create_connection((str(address), port), timeout=left)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


class _Connection(http.client.HTTPConnection):
    """HTTP to the checked addresses (the first that accepts), within the deadline."""

    def __init__(self, host: str, port: int, addresses: list[IpAddress], deadline: float) -> None:
        super().__init__(host, port)
        self.addresses, self.deadline = addresses, deadline
        self.opened: socket.socket | None = None

    def _open(self) -> socket.socket:
        failure: OSError | None = None
        for address in self.addresses:
            try:
                self.opened = _connect(address, self.port, self.deadline)
                return self.opened
            except TimeoutError:
                raise
            except OSError as exc:
                failure = exc
        assert failure is not None
        raise failure

    def connect(self) -> None:
        self.sock = _DeadlineSocket(self._open(), self.deadline)


class _TlsConnection(_Connection):
    """HTTPS: the certificate is checked against the URL's host name, not the address."""

    context = ssl.create_default_context()

    def connect(self) -> None:
        raw = self._open()
        raw.settimeout(max(self.deadline - time.monotonic(), 0.001))  # the handshake as a whole
        self.opened = tls = self.context.wrap_socket(raw, server_hostname=self.host)
        self.sock = _DeadlineSocket(tls, self.deadline)


def send(method: str, url: str, policy: OutboundPolicy, *, body: bytes | None = None,
         headers: Mapping[str, str] | None = None, max_bytes: int = MAX_RESPONSE_BYTES) -> HttpResponse:
    """One request under `policy`; any HTTP status comes back as a response, no answer at all as
    HttpError (AddressRefused, DeadlinePassed). The body read is cut at `max_bytes` (the response
    says `truncated`)."""
    deadline = time.monotonic() + policy.deadline_seconds
    addresses = policy.check(url, deadline=deadline)
    parts = urlsplit(url)
    https = parts.scheme == "https"
    host = parts.hostname or ""
    port = parts.port or (443 if https else 80)
    connection = (_TlsConnection if https else _Connection)(host, port, addresses, deadline)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        connection.request(method, target, body=body, headers={"User-Agent": USER_AGENT, **(headers or {})})
        response = connection.getresponse()
        read = response.read(max_bytes)
        return HttpResponse(response.status, dict(response.headers), read, len(read) >= max_bytes)
    except TimeoutError:
        raise DeadlinePassed(f"no answer in time from {host}:{port} "
                             f"(the deadline is {policy.deadline_seconds:g} s)") from None
    except (OSError, http.client.HTTPException, ValueError) as exc:
        # Host and port only: a netloc may carry user:password.
        raise HttpError(f"no answer from {host}:{port}: {exc or type(exc).__name__}") from None
    finally:
        connection.close()
        if connection.opened is not None:
            connection.opened.close()


class CallSlots:
    """A bound on the outbound calls a process makes inside web requests at once: past it, a
    request is refused at once (OutboundBusy) rather than wait, so calls to slow servers hold no
    more than this many of the process's threads."""

    def __init__(self, limit: int) -> None:
        self._free = threading.BoundedSemaphore(limit)

    @contextmanager
    def hold(self) -> Iterator[None]:
        if not self._free.acquire(blocking=False):
            raise OutboundBusy
        try:
            yield
        finally:
            self._free.release()


def outbound_policy(settings: Settings) -> OutboundPolicy:
    """Where the service's own requests may go, and their deadline (OUTBOUND_ALLOWED_NETWORKS: unset,
    loopback and the private networks outside production, none in production)."""
    if settings.outbound_allowed_networks is None:
        networks = () if settings.env == "production" else PRIVATE_NETWORKS
    else:
        networks = tuple(ipaddress.ip_network(n, strict=False) for n in settings.outbound_allowed_networks)
    return OutboundPolicy(networks, deadline_seconds=settings.outbound_timeout_seconds)
