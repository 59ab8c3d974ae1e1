"""Pages and files built by frontend/: the front-end files at /vendor/, the API docs at /api/docs.

frontend/build.mjs writes service/static/vendor/ (committed; `make static` rebuilds it) from the
npm packages frontend/package-lock.json pins: Swagger UI is swagger-ui-dist's prebuilt bundle,
copied byte for byte, and its initializer is frontend/src/api-docs.js. Nothing is loaded from
another origin: /api/docs has the dashboard's Content-Security-Policy (own origin only, no inline
script), so a page that tried would be stopped by the browser.
"""

from __future__ import annotations

from pathlib import Path

from flask import Blueprint, Response, current_app, render_template, send_from_directory, url_for

VENDOR_DIR = Path(__file__).resolve().parent / "static" / "vendor"

# The dashboard's policy (service/resources/dashboard.py), directive for directive: Swagger UI
# needs no more (its styles are a file, its icons data: URLs, its requests go to this origin).
CONTENT_SECURITY_POLICY = "; ".join([
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
])

blp = Blueprint("frontend", __name__)


def _secure(response: Response) -> Response:
    response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["X-Frame-Options"] = "DENY"
    # No content hash in the files' names: revalidate every time (ETag makes it cheap), so a deploy
    # never pairs a new page with an old script.
    response.headers["Cache-Control"] = "no-cache"
    return response


@blp.route("/api/docs")
def api_docs() -> Response:
    """Swagger UI on the OpenAPI document (served by flask-smorest at /api/v1/openapi.json)."""
    html = render_template("api_docs.html", title=f"{current_app.config['API_TITLE']} API",
                           spec_url=url_for("api-docs.openapi_json"))
    return _secure(Response(html, mimetype="text/html"))


@blp.route("/vendor/<path:filename>")
def vendor(filename: str) -> Response:
    # send_from_directory refuses paths that leave the folder (404).
    return _secure(send_from_directory(VENDOR_DIR, filename, max_age=0))
