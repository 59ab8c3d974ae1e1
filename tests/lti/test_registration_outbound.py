"""Dynamic Registration under the outbound policy (service/outbound/http.py): the URLs a registration
link's holder names reach no address the operator did not allow, what answered is never quoted
back, a slow server is cut off at the deadline, a link's failed tries are few, and slow
registrations cannot take every thread of a real gunicorn."""

from __future__ import annotations

import ipaddress
import json
import logging
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote

import pytest

from service.models import Role
from service.outbound.http import AddressRefused, DeadlinePassed, OutboundPolicy, send
from service.resources.lti_registration import SLOTS
from tests.helpers import bearer

from .platform import TestPlatform
from .support import open_registration, registration_link

PROJECT_ROOT = Path(__file__).resolve().parents[2]
LOOPBACK = (ipaddress.ip_network("127.0.0.0/8"),)


def _register(client, link_url: str, config_url: str):
    return client.get(f"{link_url}&openid_configuration={quote(config_url, safe='')}")


class Trickle:
    """A server on 127.0.0.1 that answers every request one byte at a time, a byte every `every`
    seconds, until it is stopped."""

    def __init__(self, every: float = 0.5) -> None:
        self.every, self.stopped = every, threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0), backlog=128)
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/.well-known/openid-configuration"
        self.connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._trickle, args=(conn,), daemon=True).start()

    def _trickle(self, conn: socket.socket) -> None:
        with conn:
            conn.recv(65536)
            try:
                for byte in b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Slow: " + b"x" * 100_000:
                    if self.stopped.wait(self.every):
                        return
                    conn.sendall(bytes([byte]))
            except OSError:
                return

    def stop(self) -> None:
        self.stopped.set()
        self.listener.close()


@pytest.fixture
def trickle() -> Iterator[Trickle]:
    server = Trickle()
    yield server
    server.stop()


# -- the policy's addresses ---------------------------------------------------------------------

REFUSED = ["127.0.0.1", "127.8.9.10", "0.0.0.0", "::", "::1", "::ffff:127.0.0.1", "64:ff9b::7f00:1", "2002:7f00:1::",
           "10.1.2.3", "172.16.0.1", "192.168.1.1", "100.64.0.1", "169.254.169.254", "169.254.1.1", "fe80::1",
           "fd00:ec2::254", "fc00::1", "224.0.0.1", "ff02::1", "ff0e::1", "240.0.0.1", "255.255.255.255",
           "198.18.0.1", "192.0.2.1", "::ffff:169.254.169.254"]


@pytest.mark.parametrize("address", REFUSED)
def test_the_policy_refuses_every_address_that_is_not_public(address):
    assert OutboundPolicy((), deadline_seconds=1).refusal(ipaddress.ip_address(address)) is not None


@pytest.mark.parametrize("address", ["93.184.215.14", "2606:4700::6810:84e5", "::ffff:93.184.215.14"])
def test_the_policy_lets_public_addresses_through(address):
    assert OutboundPolicy((), deadline_seconds=1).refusal(ipaddress.ip_address(address)) is None


def test_an_allowed_network_is_reached_but_metadata_never():
    allowing = OutboundPolicy(tuple(ipaddress.ip_network(n) for n in ("10.0.0.0/8", "169.254.0.0/16", "fc00::/7")),
                              deadline_seconds=1)
    assert allowing.refusal(ipaddress.ip_address("10.1.2.3")) is None
    assert allowing.refusal(ipaddress.ip_address("169.254.1.1")) is None
    for metadata in ("169.254.169.254", "fd00:ec2::254", "::ffff:169.254.169.254"):
        assert allowing.refusal(ipaddress.ip_address(metadata)) == "a cloud metadata address"
    assert allowing.refusal(ipaddress.ip_address("127.0.0.1")) is not None  # not listed


@pytest.mark.parametrize("url", ["https://0x7f000001/", "https://2130706433/", "https://127.1/", "https://localhost/",
                                 "https://[::1]/", "https://[::ffff:7f00:1]/", "http://93.184.215.14/"])
def test_the_policy_checks_the_addresses_a_host_resolves_to(url):
    with pytest.raises(AddressRefused):
        OutboundPolicy((), deadline_seconds=1).check(url)


def test_a_trickling_answer_ends_at_the_deadline(trickle):
    started = time.monotonic()
    with pytest.raises(DeadlinePassed):
        send("GET", trickle.url, OutboundPolicy(LOOPBACK, deadline_seconds=1.5))
    assert 1.4 < time.monotonic() - started < 2.5


# -- the registration ----------------------------------------------------------------------------

INTERNAL = ["https://127.0.0.1:6379/", "http://127.0.0.1:5432/", "https://0x7f000001:9101/metrics", "https://[::1]/",
            "https://[::ffff:127.0.0.1]/", "https://169.254.169.254/latest/meta-data/", "https://[fd00:ec2::254]/",
            "https://10.0.0.1/", "https://localhost:8000/"]


@pytest.mark.parametrize("config_url", INTERNAL)
def test_a_registration_reaches_no_address_that_is_not_public(make_app, app, client_key_for, config_url):
    strict = make_app(outbound_allowed_networks=())  # as in production: nothing but public addresses
    client = strict.test_client()
    admin = client_key_for(strict, "admin", Role.ADMIN)
    refused = _register(client, registration_link(client, admin)["url"], config_url)
    assert refused.status_code == 400 and refused.mimetype == "application/problem+json"
    assert refused.json["title"] == "The LMS's address is refused"
    assert "OpenID configuration URL is not one gradquiz may reach" in refused.json["detail"]


class Internal(BaseHTTPRequestHandler):
    """An internal service answering JSON, on 127.0.0.2 (not the allowed 127.0.0.1)."""

    seen: list[str] = []

    def do_POST(self) -> None:
        Internal.seen.append(self.headers.get("Authorization", ""))
        body = json.dumps({"internal": "secret-internal-data", "client_id": "x"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


def test_an_internal_registration_endpoint_gets_no_post(make_app, app, platform, admin_key):
    internal = ThreadingHTTPServer(("127.0.0.2", 0), Internal)
    threading.Thread(target=internal.serve_forever, daemon=True).start()
    Internal.seen = []
    try:
        allowing = make_app(outbound_allowed_networks=("127.0.0.1/32",))  # the LMS's address, no other
        client = allowing.test_client()
        platform.openid_configuration_overrides = {
            "registration_endpoint": f"http://127.0.0.2:{internal.server_address[1]}/register"}
        refused = open_registration(client, platform, registration_link(client, admin_key)["url"], headers={})
    finally:
        internal.shutdown()
        internal.server_close()
    assert refused.status_code == 502 and refused.json["title"] == "The LMS's address is refused"
    assert "registration endpoint is not one gradquiz may reach" in refused.json["detail"]
    assert Internal.seen == []  # no POST, so no registration token, reached it
    assert "secret-internal-data" not in refused.get_data(as_text=True)


def test_a_trickling_configuration_ends_at_the_deadline(make_app, app, admin_key, trickle):
    client = make_app(outbound_timeout_seconds=1.5).test_client()
    started = time.monotonic()
    refused = _register(client, registration_link(client, admin_key)["url"], trickle.url)
    assert time.monotonic() - started < 3
    assert refused.status_code == 502 and "gave no answer within 1.5 seconds" in refused.json["detail"]


def test_a_link_is_used_up_after_its_failed_tries_each_logged_and_counted(app, make_app, client, admin_key, caplog):
    from prometheus_client import REGISTRY

    from service.lti.registration import MAX_FAILED_TRIES

    def failures() -> float:
        return REGISTRY.get_sample_value("gradquiz_lti_registration_failures_total",
                                         {"step": "configuration", "reason": "no_answer"}) or 0.0

    caplog.set_level(logging.INFO)
    link = registration_link(client, admin_key)
    before = failures()
    for n in range(MAX_FAILED_TRIES):
        # Counted with the link: the same count whichever process (another app here) answers the try.
        answering = client if n % 2 else make_app().test_client()
        refused = _register(answering, link["url"], "http://127.0.0.1:9/config")
        assert refused.status_code == 502 and "gave no answer" in refused.json["detail"]
    assert failures() - before == MAX_FAILED_TRIES
    code = link["url"].split("code=")[1]
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert logged.count(f"LTI registration through link {link['id']} failed") == MAX_FAILED_TRIES
    assert f"link {link['id']} is used up" in logged and code not in logged
    with TestPlatform() as platform:  # the LMS fixed: too late, the link is used up
        again = open_registration(client, platform, link["url"], headers={})
        assert again.status_code == 403 and platform.openid_configuration_requests == []
    [listed] = client.get("/api/v1/admin/lti/registration-links", headers=bearer(admin_key)).json
    assert listed["used_at"] and listed["platform"] is None and listed["failed_tries"] == MAX_FAILED_TRIES


def test_past_the_registrations_a_process_makes_at_once_one_more_gets_503_at_once(make_app, app, admin_key, platform):
    busy = make_app(outbound_web_calls=1)
    client = busy.test_client()
    link = registration_link(client, admin_key)
    with busy.extensions[SLOTS].hold():  # one registration waits on its LMS
        refused = open_registration(client, platform, link["url"], headers={})
    assert refused.status_code == 503 and refused.mimetype == "application/problem+json"
    assert refused.headers["Retry-After"] == "10"
    assert platform.openid_configuration_requests == []
    assert open_registration(client, platform, link["url"], headers={}).status_code == 201  # the link was not used


# -- a real gunicorn -----------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, timeout: float) -> int:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


@pytest.fixture
def gunicorn(app, database_url, tmp_path) -> Iterator[str]:
    """The API under gunicorn with the shipped gunicorn.conf.py (2 workers x 16 threads), a 2 s
    outbound deadline and loopback allowed."""
    port = _free_port()
    env = {**os.environ, "BIND": f"127.0.0.1:{port}", "DATABASE_URL": database_url, "ENV": "testing",
           "OUTBOUND_TIMEOUT_SECONDS": "2", "OUTBOUND_ALLOWED_NETWORKS": "127.0.0.0/8",
           "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics"), "LOG_FORMAT": "text"}
    env.pop("WEB_CONCURRENCY", None), env.pop("WEB_THREADS", None)
    server = subprocess.Popen([sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py", "wsgi:app"], cwd=PROJECT_ROOT,
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(200):
            try:
                if _get(base + "/healthz", 1) == 200:
                    break
            except OSError:
                time.sleep(0.1)
        else:
            pytest.fail("gunicorn did not start")
        yield base
    finally:
        server.terminate()
        server.wait(30)


@pytest.mark.backends("postgresql")
def test_slow_registrations_leave_the_api_answering(gunicorn, client, admin_key, trickle):
    link = registration_link(client, admin_key)["url"].replace("http://localhost", gunicorn)
    register = f"{link}&openid_configuration={quote(trickle.url, safe='')}"
    with ThreadPoolExecutor(64) as pool:
        started = time.monotonic()
        registrations = [pool.submit(_get, register, 30) for _ in range(64)]
        time.sleep(0.5)  # every registration sent, the first ones waiting on the trickle
        for _ in range(3):
            for path in ("/healthz", "/api/v1/exercises"):
                asked = time.monotonic()
                assert _get(gunicorn + path, 5) == 200, path
                assert time.monotonic() - asked < 1.0, path
        statuses = [r.result() for r in registrations]
    # None waited past the deadline (plus a queue's worth); the ones past the bound were refused at once.
    assert time.monotonic() - started < 10
    assert set(statuses) <= {502, 503, 403} and 503 in statuses, statuses
    assert trickle.connections <= 2 * 4  # two processes, four registrations each at most
