"""Settings read from the environment, validated once at start-up.

One class holds every setting so that a reader finds them all in one place; `Settings.from_env`
is the only code that reads `os.environ`.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import secrets
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, ClassVar

from limits import parse_many

from .grading.sandbox import LAYERS  # stdlib only: the web process may import it

PROJECT_ROOT = Path(__file__).resolve().parent.parent
INSTANCE_DIR = PROJECT_ROOT / "instance"
# Where a deployment without SECRET_KEY keeps the one it made (instance_secret_key).
SECRET_KEY_FILE = "secret_key"
GRADING_BACKENDS = ("database", "celery")
BROKER_SCHEMES = ("redis://", "rediss://", "amqp://", "amqps://", "pyamqp://")


class ConfigError(Exception):
    """A setting is missing or malformed; the message names it in one line."""


def _bool(name: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off", ""}:
        return False
    raise ConfigError(f"{name} must be true or false, got {raw!r}")


def _int(name: str, raw: str, minimum: int = 1) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise ConfigError(f"{name} must be at least {minimum}, got {value}")
    return value


def _float(name: str, raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number, got {raw!r}") from None
    if not value > 0:
        raise ConfigError(f"{name} must be above 0, got {raw}")
    return value


def _list(_name: str, raw: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in raw.split(",") if item.strip())


def default_database_url() -> str:
    return f"sqlite:///{INSTANCE_DIR / 'gradquiz.sqlite3'}"


def instance_secret_key(folder: Path) -> str:
    """The SECRET_KEY of a deployment that sets none (`make run`, and any `flask` command, worker or
    gunicorn started from the same checkout): kept in the instance folder, made at the first start.
    Every process of the deployment reads the same one, and sessions, learner tokens and sealed
    secrets outlive a restart. Never logged or printed."""
    path = folder / SECRET_KEY_FILE
    try:
        secret = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        secret = _new_instance_secret_key(path)
    except OSError as exc:
        raise ConfigError(f"SECRET_KEY is not set and {path} cannot be read ({exc.strerror})") from None
    except UnicodeDecodeError:
        secret = ""
    if len(secret) < 32:
        raise ConfigError(f"SECRET_KEY is not set and {path} holds no usable secret: delete it to make a new one")
    return secret


def _new_instance_secret_key(path: Path) -> str:
    """A random secret in a new file at `path`, owner-only (0600). It is written whole under a
    temporary name, then linked to `path`, which fails if another process starting at the same
    moment made it first: then theirs is the secret, and no process ever reads half a file."""
    secret = secrets.token_urlsafe(48)
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        try:
            os.fchmod(descriptor, 0o600)
            with os.fdopen(descriptor, "w", encoding="ascii") as file:
                file.write(secret + "\n")
                file.flush()
                os.fsync(file.fileno())
            os.link(temporary, path)
        except FileExistsError:
            return instance_secret_key(path.parent)
        finally:
            os.unlink(temporary)
    except OSError as exc:
        raise ConfigError(f"SECRET_KEY is not set and {path} cannot be created ({exc.strerror})") from None
    return secret


@dataclass(frozen=True)
class Settings:
    """Every setting of the service. Environment variable = field name upper-cased."""

    # "development" (the default: embedded SQLite) or "production" (or "testing").
    env: str = "development"
    database_url: str = field(default_factory=default_database_url)
    # Signs learner tokens, staff sessions and LTI state; seals stored secrets. Required when
    # ENV=production; otherwise, unset: instance_secret_key (one made at the first start).
    secret_key: str = ""
    # Origins allowed to call the API from a browser, comma-separated; empty: CORS off.
    cors_origins: tuple[str, ...] = ()
    # Largest request body accepted, in bytes; larger bodies get 413.
    max_request_bytes: int = 256 * 1024
    exercises_dir: str = str(PROJECT_ROOT / "exercises")
    # Where rate-limit counters live: memory:// (per web process) or redis://host:6379 (shared).
    rate_limit_storage: str = "memory://"
    # Attempts and sandbox runs ("try it yourself") one caller may submit: an API key, or one
    # learner of an LMS platform (learner token). Moving windows, in `limits` syntax: "600/minute;20/second".
    attempts_rate_limit: str = "600/minute"
    runs_rate_limit: str = "60/minute"
    # Course exercises (issue 34): saves and proofs one course may ask for (each exercise saved, each
    # proof asked again), whoever of its staff asks: a moving window, in `limits` syntax.
    proofs_rate_limit: str = "30/minute"
    # An upload of exercise files (JSON or a .zip/.tar.gz archive): the body's bytes, the archive's
    # bytes once uncompressed, its files, and how many times its compressed size an entry over 64
    # KiB may be (a zip bomb). Past any of them: refused, nothing written.
    upload_max_bytes: int = 2 * 1024 * 1024
    upload_max_uncompressed_bytes: int = 8 * 1024 * 1024
    upload_max_files: int = 200
    upload_max_ratio: int = 100
    # Seconds each web process keeps an exercise's detail response (GET /api/v1/exercises/{slug}):
    # a sync or publish shows within that time. Default: 5, and 0 (no cache) when ENV=testing.
    exercise_cache_seconds: int | None = None
    # Seconds each web process keeps an API key's client once looked up: a revoked key stops
    # working within that time. Default: 5, and 0 (no cache) when ENV=testing.
    api_key_cache_seconds: int | None = None
    # Database connections each process keeps open. gunicorn.conf.py sets it to WEB_THREADS for the
    # web processes (unless set): past the pool, each request opened and closed a connection (a new
    # PostgreSQL backend, its prepared statements lost), 574 in a bench run at 5 for 16 threads.
    database_pool_size: int = 5
    # Log lines: "json" (one object per line, with the request id) or "text".
    log_format: str = "json"
    # Grading worker processes `flask worker` (and `make run`) starts.
    grading_workers: int = 2
    # How long a worker's claim on a job lasts; a job whose worker died is graded again after it.
    # Must exceed the longest grade (the sandbox's wall-clock limit, 10 s by default).
    grading_lease_seconds: int = 60
    # Claims of one job before it is stored as an internal error.
    grading_max_tries: int = 3
    # Seeds the hidden grading inputs; default: derived from SECRET_KEY.
    grading_secret: str = ""
    # How often `flask worker` folds new attempt events into the statistics counters: the most
    # the statistics lag the grades by when the folder keeps up.
    counters_fold_seconds: float = 0.5
    # Caps on every grade (an exercise may ask for less): wall clock, memory, captured output.
    grading_timeout_seconds: int = 10
    grading_memory_mb: int = 1024
    grading_output_kib: int = 64
    # Whether the sandbox can run torch.library custom ops (their runs get opcheck's tests): the
    # grading worker's zygote then preloads what they import (torch._dynamo, AOTAutograd), about
    # 100 MB more per worker. Off: code that defines a custom op is answered that custom ops are off.
    grading_custom_ops: bool = True
    # Sandbox layers around submitted code (service/grading/sandbox.py), comma-separated;
    # "all" (the default): every layer the machine supports.
    sandbox_layers: tuple[str, ...] = ("all",)
    # Layers without which a worker refuses to start; default: every wanted layer when
    # ENV=production, none otherwise (a development machine may lack some: the worker says which).
    sandbox_required: tuple[str, ...] | None = None
    # How code attempts and runs reach the workers: "database" (the embedded default: workers
    # claim them from the database) or "celery" (workers on many machines, CELERY_BROKER_URL).
    grading_backend: str = "database"
    # The Celery broker: redis://host:6379/0 or amqp://user:password@host:5672//.
    celery_broker_url: str = ""
    # How often a Celery worker looks for jobs whose task was never sent, was lost by the broker
    # or whose worker died; a job is sent again at most once per GRADING_LEASE_SECONDS.
    grading_sweep_seconds: int = 5
    # Bearer token Prometheus sends to GET /metrics; without it, /metrics is open in development
    # and off (404) in production.
    metrics_token: str = ""
    # host:port where a grading worker serves its own Prometheus metrics; empty: none.
    worker_metrics_bind: str = "127.0.0.1:9101"
    # The service's address as LMSs and browsers reach it (https://gradquiz.example.edu), for
    # the LTI URLs it hands out; empty: taken from each request (fine without a proxy).
    public_url: str = ""
    # Where an LTI launch sends the browser: the frontend's URL, given the learner token in its
    # fragment (#token=…&exercise=…); empty: the service's own launch page.
    lti_frontend_url: str = ""
    # Lifetime of a learner token (from an LTI launch or POST /api/v1/learner-tokens).
    learner_token_seconds: int = 3600
    # How long a learner's session lasts from its first token: POST /api/v1/learner-tokens/refresh
    # renews a token until then, never after (the learner launches again).
    learner_session_max_seconds: int = 12 * 3600
    # How long the dashboard session an instructor's LTI launch opens for their course lasts (it is
    # not renewed: the instructor launches again).
    staff_session_seconds: int = 4 * 3600
    # Whether an LMS that registers itself through a registration link (LTI Dynamic Registration)
    # waits, pending, for an admin's approval before its first launch. Off: the link, which only an
    # admin can make and which works once, is the approval (docs/lti.md#dynamic-registration).
    lti_registration_approval: bool = False
    # How long a rotated-out tool key stays in the JWKS (platforms cache the JWKS).
    lti_retired_key_seconds: int = 86400
    # Score passback and webhook deliveries: tries before a delivery is marked failed, the
    # first retry's delay (each next one is 3x longer, at most 6 h). OUTBOUND_TIMEOUT_SECONDS:
    # the deadline of each request the service makes (resolving, connecting, sending, every read).
    outbound_max_tries: int = 12
    outbound_retry_seconds: float = 10.0
    outbound_timeout_seconds: float = 10.0
    # Networks (CIDR, comma-separated) the service may reach although they are not public: an LMS
    # or webhook receiver on the campus network (10.20.0.0/16), a local one (127.0.0.0/8). Every
    # other loopback, private, link-local or reserved address is refused, and cloud metadata
    # addresses always; plain http goes only to these networks (service/outbound/http.py).
    # Default: none in production; loopback and the private networks in development and testing.
    outbound_allowed_networks: tuple[str, ...] | None = None
    # LTI Dynamic Registrations each web process makes at once (each waits on the LMS's answers);
    # one past it gets 503 with Retry-After at once. Well below WEB_THREADS, so that slow servers
    # cannot hold every thread.
    outbound_web_calls: int = 4
    # How often each course's roster is read again from the LMS (NRPS; an instructor's launch
    # reads it sooner): service/lti/roster.py.
    roster_sync_seconds: int = 6 * 3600
    # Git hosts courses may sync their exercises from (service/gitsync/), comma-separated names or
    # name:port (github.com,gitlab.example.edu); empty: git sync is off. The resolved address must
    # also pass OUTBOUND_ALLOWED_NETWORKS' policy, and plain http:// is allowed only to such a
    # network (a git server on loopback for tests). GIT_SYNC_TIMEOUT_SECONDS: one fetch's wall
    # clock; GIT_SYNC_MAX_BYTES: the fetched repository's size on disk (cut off past it).
    git_allowed_hosts: tuple[str, ...] = ()
    git_sync_timeout_seconds: int = 120
    git_sync_max_bytes: int = 64 * 1024 * 1024
    # Push webhooks one course may send (POST /api/v1/git-webhooks/{course_id}), in `limits` syntax.
    git_webhooks_rate_limit: str = "30/minute"

    REQUIRED_IN_PRODUCTION: ClassVar[tuple[str, ...]] = ("database_url", "secret_key")
    # How an environment string becomes each field's type (annotations are strings here).
    PARSERS: ClassVar[dict[str, Any]] = {"int": _int, "int | None": lambda name, raw: _int(name, raw, minimum=0), "float": _float,
                                         "bool": _bool, "bool | None": _bool,
                                         "tuple[str, ...]": _list, "tuple[str, ...] | None": _list}

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Read settings from `environ` (default: the process environment), then apply overrides."""
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for f in fields(cls):
            raw = environ.get(f.name.upper())
            if raw is None:
                continue
            parser = cls.PARSERS.get(str(f.type))
            values[f.name] = parser(f.name.upper(), raw) if parser else raw
        if "WEBHOOK_ALLOW_PRIVATE" in environ:
            raise ConfigError("WEBHOOK_ALLOW_PRIVATE is replaced by OUTBOUND_ALLOWED_NETWORKS (the networks every "
                              "outbound request may reach): docs/operations.md")
        env_name = values.get("env", overrides.get("env", cls.env))
        if env_name == "production":
            for name in cls.REQUIRED_IN_PRODUCTION:
                if name not in values and name not in overrides:
                    raise ConfigError(f"{name.upper()} is required when ENV=production")
        elif "secret_key" not in values and "secret_key" not in overrides:
            values["secret_key"] = instance_secret_key(INSTANCE_DIR)
        settings = replace(cls(**values), **overrides)
        settings.validate()
        return settings

    def validate(self) -> None:  # noqa: C901
        if self.env not in {"development", "production", "testing"}:
            raise ConfigError(f"ENV must be development, production or testing, got {self.env!r}")
        if not self.database_url.startswith(("sqlite", "postgres")):
            raise ConfigError("DATABASE_URL must be a sqlite:// or postgresql:// URL")
        if not self.secret_key:
            raise ConfigError("SECRET_KEY must not be empty")
        if self.env == "production" and len(self.secret_key) < 32:
            raise ConfigError("SECRET_KEY must be at least 32 characters when ENV=production")
        for name, layers in (("SANDBOX_LAYERS", self.sandbox_layers), ("SANDBOX_REQUIRED", self.sandbox_required or ())):
            unknown = [layer for layer in layers if layer not in (*LAYERS, "all")]
            if unknown:
                raise ConfigError(f"{name} names unknown layers {', '.join(unknown)} (known: all, {', '.join(LAYERS)})")
        if self.grading_backend not in GRADING_BACKENDS:
            raise ConfigError(f"GRADING_BACKEND must be one of {', '.join(GRADING_BACKENDS)}, got {self.grading_backend!r}")
        if self.grading_backend == "celery" and not self.celery_broker_url.startswith(BROKER_SCHEMES):
            raise ConfigError("GRADING_BACKEND=celery needs CELERY_BROKER_URL, a redis:// or amqp:// URL")
        if not 1 <= self.grading_timeout_seconds <= 30:
            raise ConfigError("GRADING_TIMEOUT_SECONDS must be from 1 to 30")
        if self.grading_lease_seconds <= self.grading_timeout_seconds:
            # A lease shorter than a grade would hand a job that is still being graded to another worker.
            raise ConfigError("GRADING_LEASE_SECONDS must exceed GRADING_TIMEOUT_SECONDS")
        for name in ("attempts_rate_limit", "runs_rate_limit", "proofs_rate_limit", "git_webhooks_rate_limit"):
            try:
                parse_many(getattr(self, name))
            except ValueError:
                raise ConfigError(f"{name.upper()} must be like '600/minute' or '600/minute;20/second', "
                                  f"got {getattr(self, name)!r}") from None
        if not self.rate_limit_storage.startswith(("memory://", "redis://", "rediss://", "redis+sentinel://")):
            raise ConfigError("RATE_LIMIT_STORAGE must be memory:// or a redis:// URL")
        if self.log_format not in {"json", "text"}:
            raise ConfigError(f"LOG_FORMAT must be json or text, got {self.log_format!r}")
        if self.public_url and not self.public_url.startswith(("https://", "http://")):
            raise ConfigError("PUBLIC_URL must be an http(s):// URL")
        if self.lti_frontend_url and not self.lti_frontend_url.startswith(("https://", "http://")):
            raise ConfigError("LTI_FRONTEND_URL must be an http(s):// URL")
        if self.learner_session_max_seconds < self.learner_token_seconds:
            raise ConfigError("LEARNER_SESSION_MAX_SECONDS must be at least LEARNER_TOKEN_SECONDS")
        for network in self.outbound_allowed_networks or ():
            try:
                ipaddress.ip_network(network, strict=False)
            except ValueError:
                raise ConfigError(f"OUTBOUND_ALLOWED_NETWORKS must list networks like 10.20.0.0/16, got {network!r}") from None

    @property
    def wanted_layers(self) -> tuple[str, ...] | None:
        """The sandbox layers to apply; None: every layer the machine supports."""
        return None if "all" in self.sandbox_layers else self.sandbox_layers

    @property
    def required_layers(self) -> tuple[str, ...]:
        """Layers without which a worker refuses to start."""
        if self.sandbox_required is not None:
            return LAYERS if "all" in self.sandbox_required else self.sandbox_required
        if self.env != "production":
            return ()
        return self.wanted_layers or LAYERS

    def _cache_ttl(self, seconds: int | None) -> int:
        """A per-process cache's lifetime: as set, else 5 s, and none in tests (they change the
        database behind the app's back and expect to see it at once)."""
        if seconds is not None:
            return seconds
        return 0 if self.env == "testing" else 5

    @property
    def exercise_cache_ttl(self) -> int:
        return self._cache_ttl(self.exercise_cache_seconds)

    @property
    def api_key_cache_ttl(self) -> int:
        return self._cache_ttl(self.api_key_cache_seconds)

    @property
    def grading_seed(self) -> bytes:
        """The secret the judge seeds hidden inputs with: never given to submitted code."""
        if self.grading_secret:
            return self.grading_secret.encode()
        return hmac.new(self.secret_key.encode(), b"gradquiz grading inputs", hashlib.sha256).digest()

    @property
    def sqlalchemy_url(self) -> str:
        """The URL for SQLAlchemy: a plain postgresql:// URL means psycopg 3, said explicitly."""
        url = self.database_url
        if url.startswith("postgres://"):
            url = "postgresql://" + url[len("postgres://"):]
        if url.startswith("postgresql://"):
            url = "postgresql+psycopg://" + url[len("postgresql://"):]
        return url
