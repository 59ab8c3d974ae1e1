"""What every learner page shares: its headers (the policy, caching) and the 404 page."""

from __future__ import annotations

from flask import Response, current_app, render_template

# The pages call the public API at this path of their own origin (the page's connect-src).
API_BASE = "/api/v1"

# Framing: LMSs show tools in iframes, and a frontend may embed the page; the token is never a
# cookie, so a page in a foreign frame acts only with the token that frame handed it.
DEFAULT_FRAME_ANCESTORS = "*"


def content_security_policy() -> str:
    """The dashboard's policy, but frameable (LEARN_FRAME_ANCESTORS in the app's config)."""
    ancestors = current_app.config.get("LEARN_FRAME_ANCESTORS", DEFAULT_FRAME_ANCESTORS)
    return "; ".join([
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        f"frame-ancestors {ancestors}",
    ])


def page_response(html: str, status: int = 200, *, private: bool = False) -> Response:
    response = Response(html, status=status, mimetype="text/html")
    response.headers["Content-Security-Policy"] = content_security_policy()
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    # A page that holds a learner token is never stored; the others are revalidated each time.
    response.headers["Cache-Control"] = "no-store" if private else "no-cache"
    return response


def not_found_page(message: str) -> Response:
    return page_response(render_template("learn/not_found.html", message=message), 404)
