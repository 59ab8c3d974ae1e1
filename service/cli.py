"""`flask db …`, `flask exercises …`, `flask clients …`, `flask lti …`, `flask worker` and
`flask outbound` commands."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import click
from flask import Flask, current_app
from flask.cli import AppGroup
from sqlalchemy import select

from . import migrate
from .auth import create_client
from .catalog import ExerciseFile, sync_catalog
from .catalog.loader import exercise_folders, exercise_from_files, read_files
from .catalog.proof import ProofProblem, ProofReport, format_report, prove_many
from .catalog.sync import known_content
from .extensions import db_session
from .learner_ids import LEARNER_ID_ERROR, is_learner_id
from .learner_tokens import LearnerScope, mint_learner_token
from .logs import configure_logging
from .models import ApiClient, LtiPlatform, Role
from .models.base import utcnow
from .schemas.lti import PlatformSchema

db_cli = AppGroup("db", help="Database schema (Alembic migrations).")
exercises_cli = AppGroup("exercises", help="The exercise catalog under exercises/.")
clients_cli = AppGroup("clients", help="API clients and their keys.")
lti_cli = AppGroup("lti", help="LTI 1.3: the LMS platforms registered, the tool's signing key.")

# `make run`'s clients: (name, role, what its key is for). "development" is the admin's name since
# before the client key existed, so a checkout that made it keeps it.
DEV_CLIENTS = (("development-api", Role.CLIENT, "for the API"), ("development", Role.ADMIN, "for the dashboard"))
# `make run`'s learner link: a learner of the client key's client, signed in for a working day.
DEV_API_CLIENT, DEV_LEARNER, DEV_LINK_HOURS = "development-api", "developer", 8


def _settings():
    return current_app.config["SETTINGS"]


@db_cli.command("upgrade")
@click.argument("revision", default="head")
def db_upgrade(revision: str) -> None:
    """Apply migrations up to REVISION (default: the latest)."""
    migrate.upgrade(_settings().sqlalchemy_url, revision)
    click.echo(f"database at {revision}")


@db_cli.command("downgrade")
@click.argument("revision")
def db_downgrade(revision: str) -> None:
    """Revert migrations down to REVISION ('base' for an empty database)."""
    migrate.downgrade(_settings().sqlalchemy_url, revision)


def _catalog_root(folder: str | None, *, refused: str = "") -> Path:
    root = Path(folder or _settings().exercises_dir)
    if not root.is_dir():  # a wrong setting: syncing nothing would unpublish every exercise
        raise click.ClickException(f"{root}: not a directory{refused}")
    return root


def _shown(path: Path) -> str:
    """A path as the author reaches it from here: relative to the working directory if inside."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _problem_line(folder: Path, problem: ProofProblem) -> str:
    """`path:line: field: message`, for an editor to jump to."""
    path = _shown(folder / problem.file)
    return f"{path}:{problem.line}: {problem.field}: {problem.message}" if problem.line else \
        f"{path}: {problem.field}: {problem.message}"


def _prove(items: list[tuple[str, dict[str, bytes]]]) -> dict[str, tuple[ExerciseFile | None, ProofReport]]:
    """The proof of each exercise (slug, files), on every core; a judge is opened only when a code
    exercise is to be proven (a quiz needs none)."""
    slots = os.cpu_count() or 1
    code = any((found := exercise_from_files(slug, files)[0]) is not None and found.spec["kind"] == "code"
               for slug, files in items)
    if not code:
        return prove_many(None, items, slots=slots)
    from .jobs.worker import open_judge

    with open_judge(_settings(), slots=slots) as judge:
        return prove_many(judge, items, slots=slots)


def _lesson_problems(root: Path, slugs: list[str]) -> dict[str, list[str]]:
    """The built-in catalog's lesson placement, as lines by slug: a folder of exercises beside a
    lesson/ (the repository's layout) is the catalog; any other folder has no lesson to be placed
    in (course exercises are not in the lessons). lesson/lesson.toml and the lessons it is
    followed by place them (learn.lesson.placement_problems)."""
    from .learn.lesson import placement_problems

    lesson = root.parent / "lesson" / "lesson.toml"
    if not lesson.is_file():
        return {}
    found: dict[str, list[str]] = {}
    for p in placement_problems(lesson, slugs):
        where = _shown(p.file or lesson)  # a following lesson's own lesson.toml, where it is at fault
        found.setdefault(p.slug, []).append(f"{where}:{p.line}: {p.slug}: {p.message}" if p.line
                                            else f"{where}: {p.slug}: {p.message}")
    return found


@exercises_cli.command("validate")
@click.option("--dir", "folder", type=click.Path(file_okay=False), help="Default: EXERCISES_DIR")
@click.option("--slug", "slugs", multiple=True, help="Prove this exercise only (repeat for several)")
def exercises_validate(folder: str | None, slugs: tuple[str, ...]) -> None:
    """Check and prove every exercise: the format, then the reference on its own checks, each
    wrong/*.py failing as it declares, the starter running, a quiz's answers consistent (docs/
    authoring.md, "Proof"). Prints `path:line: field: message` per problem; exits 1 if any."""
    started = time.perf_counter()
    root = _catalog_root(folder)
    folders = {path.name: path for path in exercise_folders(root)}
    unknown = [slug for slug in slugs if slug not in folders]
    if unknown:
        raise click.ClickException(f"no exercise folder {', '.join(unknown)} in {root}")
    items = [(slug, read_files(path)) for slug, path in folders.items() if not slugs or slug in slugs]
    proven = _prove(items)
    lines = [_problem_line(root / slug, p) for slug, (_, report) in proven.items() for p in report.problems]
    failing = sum(1 for _, report in proven.values() if not report.passed)
    if not slugs:
        placement = _lesson_problems(root, list(folders))
        lines += [line for found in placement.values() for line in found]
        failing += len(placement.keys() - {slug for slug, (_, report) in proven.items() if not report.passed})
    for line in lines:
        click.echo(line)
    seconds = time.perf_counter() - started
    if lines:
        click.echo(f"{len(lines)} problem{'s' if len(lines) > 1 else ''} in {failing} of {len(items)} exercises "
                   f"({seconds:.1f} s)")
        raise click.exceptions.Exit(1)
    click.echo(f"{len(items)} exercise{'s' if len(items) != 1 else ''} valid and proven in {seconds:.1f} s")


@exercises_cli.command("sync")
@click.option("--dir", "folder", type=click.Path(file_okay=False), help="Default: EXERCISES_DIR")
def exercises_sync(folder: str | None) -> None:
    """Load the exercises into the database. Content that is new is proven first (unchanged ones
    are not proven again), and only a proven version becomes current: an exercise whose files are
    invalid or whose proof fails is named with its file and field and keeps serving its last
    proven version (a new one is not created). One bad exercise does not stop the service
    (`flask exercises validate` is the check that fails)."""
    root = _catalog_root(folder, refused=": nothing synced")
    items = {path.name: read_files(path) for path in exercise_folders(root)}
    loaded = {slug: exercise_from_files(slug, files) for slug, files in items.items()}
    invalid: set[str] = set()
    for slug, (exercise, problems) in loaded.items():
        if exercise is None:
            invalid.add(slug)
            for line in (_problem_line(root / slug, p) for p in format_report(problems).problems):
                click.echo(line, err=True)
    sources = [exercise for exercise, _ in loaded.values() if exercise is not None]
    session = db_session()
    known = known_content(session, sources)
    session.rollback()  # no transaction stays open while the proofs run (seconds)
    proven = _prove([(e.slug, items[e.slug]) for e in sources if e.slug not in known])
    failed = {slug for slug, (_, report) in proven.items() if not report.passed}
    for slug in sorted(failed):
        for problem in proven[slug][1].problems:
            click.echo(_problem_line(root / slug, problem), err=True)
    report = sync_catalog(session, [e for e in sources if e.slug not in failed], invalid=invalid | failed,
                          proofs={slug: report.to_json() for slug, (_, report) in proven.items() if report.passed})
    session.commit()
    click.echo(f"exercises: {report}" + (f"; {len(proven)} proven" if proven else ""))
    for slug in sorted(invalid | failed):
        if slug in invalid:
            state = "keeps its last valid version" if slug in report.kept else "not synced (no valid version yet)"
            click.echo(f"{slug}: invalid, {state}", err=True)
        else:
            state = "keeps its last proven version" if slug in report.kept else "not synced (no proven version yet)"
            click.echo(f"{slug}: its proof fails, {state}", err=True)
    for found in _lesson_problems(root, list(items)).values():
        for line in found:
            click.echo(f"warning: {line}", err=True)


@clients_cli.command("create")
@click.argument("name")
@click.option("--role", type=click.Choice([r.value for r in Role]), default=Role.CLIENT.value, show_default=True)
def clients_create(name: str, role: str) -> None:
    """Create a client and print its key, once: it is stored only as a hash."""
    session = db_session()
    if session.scalar(select(ApiClient).where(ApiClient.name == name)):
        raise click.ClickException(f"a client named {name!r} exists already")
    client, key = create_client(session, name, Role(role))
    session.commit()
    click.echo(f"client {client.name} ({client.role}) created; its key, shown this once:")
    click.echo(key)


@clients_cli.command("ensure-dev")
def clients_ensure_dev() -> None:
    """Create the development clients if missing (used by `make run`): a client key to try the API
    with, and an admin key for the dashboard, kept off the API examples (an admin reads every
    learner's attempts). Each key is printed when made, once: only its hash is stored."""
    session = db_session()
    for name, role, use in DEV_CLIENTS:
        if session.scalar(select(ApiClient).where(ApiClient.name == name)):
            click.echo(f"development {role.value} key ({use}): created earlier and shown then "
                       f"(make another: .venv/bin/flask --app wsgi clients create NAME --role {role.value})")
            continue
        _client, key = create_client(session, name, role)
        session.commit()
        click.echo(f"development {role.value} key ({use}, shown this once): {key}")


@clients_cli.command("dev-link")
@click.option("--base-url", default="http://127.0.0.1:8000", show_default=True,
              help="The service's address as the browser reaches it (make run: http://$BIND)")
@click.option("--learner", default=DEV_LEARNER, show_default=True, help="The learner the link signs in")
@click.option("--hours", type=click.IntRange(1, 24), default=DEV_LINK_HOURS, show_default=True,
              help="How long the link works (at most LEARNER_SESSION_MAX_SECONDS)")
def clients_dev_link(base_url: str, learner: str, hours: int) -> None:
    """Print a link to the lesson signed in as a development learner (used by `make run`): a learner
    token of the development client, for every exercise of the catalog, in the address's fragment
    (/learn#token=...&learner=..., which the page reads and never sends to a server). Refused when
    ENV=production: a link that signs anyone in belongs on a development machine alone."""
    settings = _settings()
    if settings.env == "production":
        raise click.ClickException("refused with ENV=production: a development learner link signs in whoever opens it. "
                                   "Learners sign in through their LMS, or POST /api/v1/learner-tokens (docs/api.md).")
    if not is_learner_id(learner):
        raise click.BadParameter(LEARNER_ID_ERROR, param_hint="--learner")
    session = db_session()
    client = session.scalar(select(ApiClient).where(ApiClient.name == DEV_API_CLIENT))
    if client is None:
        client, key = create_client(session, DEV_API_CLIENT, Role.CLIENT)
        session.commit()
        click.echo(f"development client key (for the API, shown this once): {key}")
    if client.revoked_at is not None:
        raise click.ClickException(f"the client {DEV_API_CLIENT} is revoked: no learner link")
    issued = mint_learner_token(current_app.config["SECRET_KEY"], LearnerScope(client.id, learner, None),
                                hours * 3600, settings.learner_session_max_seconds)
    link = f"{base_url.rstrip('/')}/learn#" + urlencode({"token": issued.token, "learner": learner})
    click.echo(f"Learner:      {link}")
    click.echo(f"              (signed in as {learner} at every exercise for {round(issued.expires_in / 3600)} hours; "
               "each make run prints a new link)")


@clients_cli.command("revoke")
@click.argument("name")
def clients_revoke(name: str) -> None:
    """Revoke a client's key at once (its attempts stay); make a new client for a new key."""
    session = db_session()
    client = session.scalar(select(ApiClient).where(ApiClient.name == name))
    if client is None:
        raise click.ClickException(f"no client named {name!r}")
    if client.revoked_at is None:
        client.revoked_at = utcnow()
        session.commit()
    click.echo(f"client {name} revoked")


@clients_cli.command("list")
def clients_list() -> None:
    """Name, role and key prefix of every client (keys themselves are not stored)."""
    for client in db_session().scalars(select(ApiClient).order_by(ApiClient.id)):
        state = "revoked" if client.revoked_at else "active"
        click.echo(f"{client.name}\t{client.role}\t{client.key_prefix}…\t{state}")


@lti_cli.command("add-platform")
@click.option("--name", required=True, help="How admins call this LMS")
@click.option("--issuer", required=True, help="The platform's issuer (iss)")
@click.option("--client-id", required=True, help="The client id the platform gave this tool")
@click.option("--deployment-id", "deployment_ids", required=True, multiple=True, help="Repeat for several")
@click.option("--login-url", "auth_login_url", required=True, help="The platform's OIDC authorization URL")
@click.option("--token-url", "auth_token_url", required=True, help="The platform's OAuth2 token URL")
@click.option("--jwks-url", required=True, help="The platform's public keyset URL")
def lti_add_platform(**values: Any) -> None:
    """Register an LMS with the values from its LTI 1.3 tool registration."""
    from .lti import platforms

    session = db_session()
    errors = PlatformSchema().validate({**values, "deployment_ids": list(values["deployment_ids"])})
    if errors:
        raise click.ClickException(f"invalid values: {errors}")
    try:
        platform = platforms.register(session, {**values, "deployment_ids": list(values["deployment_ids"])})
    except platforms.PlatformExists as exc:
        raise click.ClickException(str(exc)) from None
    session.commit()
    click.echo(f"platform {platform.id} ({platform.name}) registered")


@lti_cli.command("platforms")
def lti_platforms() -> None:
    """Id, name, issuer, client id and state of every registered platform."""
    for platform in db_session().scalars(select(LtiPlatform).order_by(LtiPlatform.id)):
        click.echo(f"{platform.id}\t{platform.name}\t{platform.issuer}\t{platform.client_id}\t{platform.status}")


@lti_cli.command("registration-link")
@click.option("--label", required=True, help="Whom or which LMS it is for")
@click.option("--hours", type=click.IntRange(1, 720), default=72, show_default=True, help="How long it works")
@click.option("--base-url", help="The service's address as the LMS reaches it (default: PUBLIC_URL)")
def lti_registration_link(label: str, hours: int, base_url: str | None) -> None:
    """Make a registration URL for an LMS admin to paste into the LMS (LTI Dynamic Registration);
    it works once, for --hours, and is shown this once."""
    from urllib.parse import urlencode

    from .lti import registration

    base = (base_url or _settings().public_url).rstrip("/")
    if not base.startswith(("https://", "http://")):
        raise click.ClickException("give --base-url (or set PUBLIC_URL): the service's address as the LMS reaches it")
    if not 1 <= len(label) <= 100:
        raise click.ClickException("--label must be 1 to 100 characters")
    session = db_session()
    link, code = registration.make_link(session, label, hours)
    session.commit()
    click.echo(f"{base}/lti/register?{urlencode({'code': code})}")
    click.echo(f"(link {link.id}: works once, until {link.expires_at:%Y-%m-%d %H:%M} UTC)", err=True)


@lti_cli.command("approve")
@click.argument("platform_id", type=int)
def lti_approve(platform_id: int) -> None:
    """Approve a pending platform (registered itself while LTI_REGISTRATION_APPROVAL is on)."""
    from .lti import platforms

    platform = db_session().get(LtiPlatform, platform_id)
    if platform is None or platform.disabled_at is not None:
        raise click.ClickException(f"no active or pending platform {platform_id}")
    platforms.approve(platform)
    db_session().commit()
    click.echo(f"platform {platform.id} ({platform.name}) is active")


@lti_cli.command("rotate-key")
def lti_rotate_key() -> None:
    """Make a new tool signing key; the old one stays in the JWKS for LTI_RETIRED_KEY_SECONDS."""
    from .lti import keys

    key = keys.rotate(db_session(), _settings())
    click.echo(f"new signing key {key.kid}")


@click.command("outbound")
def outbound_command() -> None:
    """Send score passbacks and webhook deliveries, read course rosters from the LMSs, run the
    courses' git syncs and fold new grades into the statistics (`flask worker` does all of it
    too), until stopped."""
    import signal
    import threading

    from .deliveries import git_syncer, outbound_runner, roster_syncer
    from .jobs.counters import CounterFolder
    from .jobs.dispatch import dispatcher_for

    settings = _settings()
    configure_logging(settings.log_format, "outbound")
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    CounterFolder(settings).start_thread(stop)
    roster_syncer(settings).start_thread(stop)
    git_syncer(settings, dispatcher_for(settings)).start_thread(stop)
    outbound_runner(settings).serve(stop)


@click.command("worker")
@click.option("--processes", type=click.IntRange(1, 64), default=None,
              help="Worker processes (default: GRADING_WORKERS)")
def worker_command(processes: int | None) -> None:
    """Grade code attempts and runs, one warm judge per process. GRADING_BACKEND=database: claim
    them from the database; celery: take them from CELERY_BROKER_URL (run it on many machines)."""
    from .jobs.worker import supervise

    settings = _settings()
    supervise(settings, processes or settings.grading_workers)


def register_cli(app: Flask) -> None:
    for group in (db_cli, exercises_cli, clients_cli, lti_cli):
        app.cli.add_command(group)
    app.cli.add_command(worker_command)
    app.cli.add_command(outbound_command)
