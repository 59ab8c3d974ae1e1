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

from .page_security import secure_page

VENDOR_DIR = Path(__file__).resolve().parent / "static" / "vendor"

blp = Blueprint("frontend", __name__)


def _secure(response: Response) -> Response:
    return secure_page(response)


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
