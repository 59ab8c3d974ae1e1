"""A webhook receiver on 127.0.0.1 that does what the README tells receivers to do.

It checks each request twice, with `standardwebhooks` and with plain `hmac` (the README's few
lines), answers 400 to a request that fails either, remembers the event ids it has accepted and
answers a repeat with 200 without accepting it again. `fail_next(n)` makes it answer an error to
the next n requests, before looking at them.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

TOLERANCE_SECONDS = 5 * 60


def hmac_verified(secret: str, headers: dict[str, str], body: bytes, now: float | None = None) -> bool:
    """The README's check with the standard library only: a fresh timestamp and a matching v1 signature."""
    msg_id, timestamp = headers.get("webhook-id", ""), headers.get("webhook-timestamp", "")
    if not timestamp.isdigit() or abs((time.time() if now is None else now) - int(timestamp)) > TOLERANCE_SECONDS:
        return False
    key = base64.b64decode(secret.removeprefix("whsec_"))
    expected = base64.b64encode(hmac.new(key, f"{msg_id}.{timestamp}.".encode() + body, hashlib.sha256).digest())
    return any(hmac.compare_digest(expected, signature.removeprefix("v1,").encode())
               for signature in headers.get("webhook-signature", "").split() if signature.startswith("v1,"))


def library_verified(secret: str, headers: dict[str, str], body: bytes) -> bool:
    try:
        Webhook(secret).verify(body, headers)
    except WebhookVerificationError:
        return False
    return True


@dataclass
class Received:
    headers: dict[str, str]  # names lower-cased
    body: bytes
    answered: int
    duplicate: bool = False


@dataclass
class WebhookReceiver:
    secret: str = ""
    requests: list[Received] = field(default_factory=list)
    seen_ids: set[str] = field(default_factory=set)
    _failures: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def fail_next(self, count: int, status: int = 500, headers: dict[str, str] | None = None) -> None:
        with self._lock:
            self._failures += [(status, headers or {})] * count

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/hooks/gradquiz"

    @property
    def accepted(self) -> list[Received]:
        """Requests that were verified and new: what the receiving system acted on."""
        return [r for r in self.requests if r.answered == 200 and not r.duplicate]

    def _handle(self, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str]]:
        with self._lock:
            if self._failures:
                status, extra = self._failures.pop(0)
                self.requests.append(Received(headers, body, status))
                return status, extra
            if not (library_verified(self.secret, headers, body) and hmac_verified(self.secret, headers, body)):
                self.requests.append(Received(headers, body, 400))
                return 400, {}
            duplicate = headers["webhook-id"] in self.seen_ids
            self.seen_ids.add(headers["webhook-id"])
            self.requests.append(Received(headers, body, 200, duplicate))
            return 200, {}

    def __enter__(self) -> WebhookReceiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                status, extra = receiver._handle({k.lower(): v for k, v in self.headers.items()}, body)
                self.send_response(status)
                for name, value in extra.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
