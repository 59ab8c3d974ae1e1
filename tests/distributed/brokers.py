"""Brokers the Celery tests can restart: a private Redis server, a RabbitMQ virtual host."""

from __future__ import annotations

import socket
import subprocess
import time
import uuid
from pathlib import Path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_port(port: int, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port}")


class PrivateRedis:
    """A redis-server of the test's own on a free port; like the CI machine's, it keeps nothing
    on disk, so a restart loses every queued message."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.port = folder, free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.folder)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_port(self.port)

    def restart(self) -> None:
        self.stop()
        self.start()

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None


class RabbitVhost:
    """A fresh virtual host on the CI machine's RabbitMQ (127.0.0.1:5672, guest/guest).

    A restart stops and starts the RabbitMQ application (every connection drops; durable
    queues and persistent messages stay), as a broker restart does."""

    def __init__(self) -> None:
        self.vhost = f"gradquiz-test-{uuid.uuid4().hex[:8]}"
        self.url = f"amqp://guest:guest@127.0.0.1:5672/{self.vhost}"

    @staticmethod
    def ctl(*args: str) -> None:
        subprocess.run(["rabbitmqctl", "-q", *args], check=True, capture_output=True, timeout=60)

    def start(self) -> None:
        self.ctl("add_vhost", self.vhost)
        self.ctl("set_permissions", "-p", self.vhost, "guest", ".*", ".*", ".*")

    def restart(self) -> None:
        self.ctl("stop_app")
        self.ctl("start_app")
        self.ctl("await_startup")
        wait_for_port(5672)

    def stop(self) -> None:
        self.ctl("delete_vhost", self.vhost)
