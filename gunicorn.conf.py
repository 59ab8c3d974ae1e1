"""gunicorn settings for the API; each can be overridden from the environment."""

import gc
import os

from gunicorn.glogging import Logger

from service.metrics import use_multiprocess_dir

bind = os.environ.get("BIND", "127.0.0.1:8000")
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
# Threads let a worker hold a long-polling request (?wait=) without blocking the others.
worker_class = "gthread"
threads = int(os.environ.get("WEB_THREADS", "16"))
# Each thread may hold a database connection: the pool keeps as many open (service/config.py).
os.environ.setdefault("DATABASE_POOL_SIZE", str(threads))
timeout = int(os.environ.get("WEB_TIMEOUT", "60"))
graceful_timeout = 20
keepalive = 5
# Build the app once in the master, so a configuration error stops start-up with one line.
preload_app = True
# The app writes the access lines itself (service/logs.py: with the request id, never a header or
# query string); gunicorn's own lines go to the same handler, set up when wsgi.py is loaded.
logconfig_dict = {
    "version": 1,
    "disable_existing_loggers": False,
    "root": {"level": "WARNING", "handlers": []},
    "loggers": {
        "gunicorn.error": {"level": "INFO", "handlers": [], "propagate": True},
        "gunicorn.access": {"level": "CRITICAL", "handlers": [], "propagate": False},
    },
}


class AppWritesTheAccessLog(Logger):
    """gunicorn's logger without its access lines: with a logconfig_dict it built each line's atoms
    (headers, a formatted time) for a logger that drops them, on every request."""

    def access(self, resp, req, environ, request_time):
        pass


logger_class = AppWritesTheAccessLog
max_requests = 10000
max_requests_jitter = 1000
# Every worker writes its metrics to files in this directory and /metrics sums them: set before
# preload_app builds the app, and before anything imports prometheus_client (service/metrics.py).
use_multiprocess_dir()


def pre_fork(server, worker):
    # The app the master loaded (preload_app) lives as long as the workers: out of the garbage
    # collector, a worker's full collection does not walk its 200,000 objects (an 85 ms pause of
    # every thread, about every 2,000 quiz POSTs), nor write to their pages (copy-on-write).
    gc.freeze()


def post_fork(server, worker):
    # Connections opened in the master must not be shared by the forked workers.
    from service.database import dispose_engines

    dispose_engines()


def child_exit(server, worker):
    # A dead worker's gauge files must stop counting as live.
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)
