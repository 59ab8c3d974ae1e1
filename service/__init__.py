"""gradquiz: exercises on PyTorch custom autograd functions, graded and stored.

`create_app` builds the web app. The web process never imports torch: grading code lives in
`service.grading` and runs in worker processes.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping
from typing import Any

from flask import Flask, Request, Response, current_app, request
from flask.sessions import SessionInterface

from .auth import init_client_cache
from .catalog.archive import ARCHIVE_TYPES
from .config import Settings
from .database import Database
from .errors import problem_abort, register_error_handlers
from .extensions import ProblemApi, close_db_session, cors
from .jobs.dispatch import dispatcher_for
from .logs import init_request_ids
from .metrics import init_app as init_metrics
from .page_security import no_sniffing
from .ratelimit import init_rate_limits
from .resources.course_exercises import UPLOAD_ENDPOINTS

API_VERSION = "1.0.0"
JSON_BODY_METHODS = {"POST", "PUT", "PATCH"}


class App(Flask):
    """Flask, with its check for async views and hooks made by the function's code flags: Flask
    asks inspect.iscoroutinefunction of a request's view and each of its 15 hooks at every
    request, about 9% of a cached GET's CPU. Plain functions and methods (all of ours) are
    returned as they are, as Flask returns them; anything else goes to Flask's own check."""

    def ensure_sync(self, func: Callable[..., Any]) -> Callable[..., Any]:
        code = getattr(getattr(func, "__func__", func), "__code__", None)
        if code is not None and not code.co_flags & inspect.CO_COROUTINE:
            return func
        return super().ensure_sync(func)


class NoSessions(SessionInterface):
    """No cookie session: every request authenticates itself (a key or token in a header; the LTI
    launch's state has its own cookie), and reading Flask's signed cookie costs each request."""

    def open_session(self, app: Flask, request: Request) -> None:
        return None  # Flask then gives the request a NullSession, which refuses writes

    def save_session(self, app: Flask, session: Any, response: Response) -> None:
        return None


# Deeper bodies are refused before any parser recurses into them (no exercise needs more than a few
# levels; Python's json module would otherwise raise RecursionError, a 500, near depth 1000).
MAX_JSON_DEPTH = 32


def json_depth_exceeds(document: object, limit: int) -> bool:
    """Whether `document` (parsed JSON) nests arrays or objects more than `limit` deep."""
    stack = [(document, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, (list, dict)):
            if depth > limit:
                return True
            stack.extend((child, depth + 1) for child in (node.values() if isinstance(node, dict) else node))
    return False


def _archive_upload() -> bool:
    """Whether the request uploads an archive of exercise folders (not JSON). Uploads of exercise
    files (JSON or archives) may be larger than MAX_REQUEST_BYTES: UPLOAD_MAX_BYTES."""
    if request.endpoint not in UPLOAD_ENDPOINTS:
        return False
    request.max_content_length = current_app.config["SETTINGS"].upload_max_bytes
    return request.mimetype in ARCHIVE_TYPES


def _check_json_body() -> None:
    # webargs would read a form or text body as "no fields" and answer with confusing
    # missing-field errors; say what is wrong instead.
    if request.method not in JSON_BODY_METHODS:  # first: every GET comes through here
        return
    if request.routing_exception is not None:  # an unknown route or method: 404/405 come first
        return
    if _archive_upload():
        return
    # A POST without a body (an action such as a retry) has no media type to check.
    has_body = bool(request.content_length) or "chunked" in request.headers.get("Transfer-Encoding", "")
    if not request.path.startswith("/api/") or not has_body:
        return
    if not request.is_json:
        problem_abort(415, "Send the request body as JSON with 'Content-Type: application/json'.")
    try:
        document = json.loads(request.get_data(cache=True))
    except RecursionError:
        document = None  # deeper than Python's parser goes: far past the limit
    except ValueError:
        return  # not JSON: webargs answers with its 400
    else:
        if not json_depth_exceeds(document, MAX_JSON_DEPTH):
            return
    problem_abort(400, f"The JSON body nests arrays or objects more than {MAX_JSON_DEPTH} levels deep.",
                  title="Request body nested too deeply")


def create_app(config: Mapping[str, Any] | None = None) -> Flask:
    """Build the app. `config` may hold Settings field names (e.g. database_url) or Flask keys."""
    config = dict(config or {})
    overrides = {k: config.pop(k) for k in list(config) if k in Settings.__dataclass_fields__}
    settings = Settings.from_env(**overrides)

    # No /static route: the dashboard's files (service/static/admin) are served by its blueprint,
    # with its Content-Security-Policy, and nowhere else.
    app = App(__name__, static_folder=None)
    app.session_interface = NoSessions()
    app.config.update(
        SETTINGS=settings,
        SECRET_KEY=settings.secret_key,
        MAX_CONTENT_LENGTH=settings.max_request_bytes,
        TESTING=settings.env == "testing",
        API_TITLE="gradquiz",
        API_VERSION=API_VERSION,
        OPENAPI_VERSION="3.1.0",
        OPENAPI_URL_PREFIX="/api",
        OPENAPI_JSON_PATH="v1/openapi.json",
        # No OPENAPI_SWAGGER_UI_*: /api/docs is service/frontend.py's, Swagger UI from this origin.
        API_SPEC_OPTIONS={
            "info": {"description": "Exercises on PyTorch custom autograd functions, graded and stored. "
                                    "Errors are application/problem+json (RFC 9457)."},
            "components": {"securitySchemes": {"bearerAuth": {"type": "http", "scheme": "bearer"}}},
        },
        **config,
    )
    # First of the before_request hooks: every later log line and error carries the request id.
    init_request_ids(app)
    app.extensions["gradquiz.db"] = Database(settings.sqlalchemy_url, settings.database_pool_size)
    app.extensions["gradquiz.dispatcher"] = dispatcher_for(settings)
    app.teardown_appcontext(close_db_session)
    api = ProblemApi(app)
    register_error_handlers(app)
    init_rate_limits(app)
    init_metrics(app)
    if settings.cors_origins:
        cors.init_app(app, resources={r"/api/*": {"origins": list(settings.cors_origins)}},
                      expose_headers=["Location", "X-Pagination", "Retry-After", "Idempotent-Replayed", "X-Request-Id"],
                      allow_headers=["Authorization", "Content-Type", "Idempotency-Key", "X-Request-Id"], max_age=600)
    app.before_request(_check_json_body)
    app.after_request(no_sniffing)

    from . import frontend, learn
    from .cli import register_cli
    from .resources import dashboard, exercises, lti, lti_registration, register_blueprints

    register_blueprints(api)
    exercises.init_exercise_caches(app)
    init_client_cache(app)
    # Browser and platform pages, outside the OpenAPI document.
    app.register_blueprint(lti.blp)
    app.register_blueprint(lti_registration.blp)  # /lti/register, LTI Dynamic Registration
    lti_registration.init_registration_slots(app)
    app.register_blueprint(dashboard.blp)
    app.register_blueprint(frontend.blp)
    app.register_blueprint(learn.blp)  # the learner's pages, /learn
    # What an LTI launch opens (resources/lti.py; handed over here, as service.learn builds on
    # service.resources): render_exercise_page(slug, *, launch=handoff).
    app.extensions["gradquiz.exercise_page"] = learn.render_exercise_page
    app.extensions["gradquiz.assignment_page"] = learn.render_assignment_page  # (launch=handoff)
    register_cli(app)
    return app
