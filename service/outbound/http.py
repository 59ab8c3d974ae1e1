"""The one HTTP client for calls the service makes: time-limited, no redirects, capped bodies.

Redirects are not followed: a webhook or platform URL is the one that was registered, and a
redirect could point a request signed for it somewhere else (or into the private network).
"""

from __future__ import annotations

import ipaddress
import json
import socket
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

MAX_RESPONSE_BYTES = 64 * 1024
USER_AGENT = "gradquiz"


class HttpError(Exception):
    """No HTTP answer: the address was refused, the connection failed or timed out."""


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


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # the 3xx comes back as the response


_opener = urllib.request.build_opener(_NoRedirects)


def check_public_url(url: str) -> None:
    """Refuse a URL that is not https or whose host resolves to a loopback, private, link-local
    or otherwise non-global address (what a webhook registered by an API client may not reach)."""
    parts = urlsplit(url)
    if parts.scheme != "https":
        raise HttpError("only https:// URLs are allowed")
    try:
        infos = socket.getaddrinfo(parts.hostname or "", parts.port or 443, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError) as exc:
        raise HttpError(f"cannot resolve {parts.hostname!r}: {exc}") from None
    for info in infos:
        address = ipaddress.ip_address(info[4][0])
        if not address.is_global:
            raise HttpError(f"{parts.hostname} resolves to a non-public address ({address})")


def send(method: str, url: str, *, body: bytes | None = None, headers: Mapping[str, str] | None = None,
         timeout: float, public_only: bool = False, max_bytes: int = MAX_RESPONSE_BYTES) -> HttpResponse:
    """One request; any HTTP status comes back as a response, no answer at all as HttpError.
    The body read is cut at `max_bytes` (the response says `truncated`)."""
    if public_only:
        check_public_url(url)
    elif urlsplit(url).scheme not in ("http", "https"):
        raise HttpError("only http(s):// URLs are allowed")
    request = urllib.request.Request(url, data=body, method=method,
                                     headers={"User-Agent": USER_AGENT, **(headers or {})})
    try:
        with _opener.open(request, timeout=timeout) as response:
            read = response.read(max_bytes)
            return HttpResponse(response.status, dict(response.headers), read, len(read) >= max_bytes)
    except urllib.error.HTTPError as exc:
        with exc:
            read = exc.read(max_bytes)
            return HttpResponse(exc.code, dict(exc.headers or {}), read, len(read) >= max_bytes)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        parts = urlsplit(url)  # host and port only: a netloc may carry user:password
        raise HttpError(f"no answer from {parts.hostname}:{parts.port or parts.scheme}: {reason}") from None
