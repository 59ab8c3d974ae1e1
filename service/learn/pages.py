"""What every learner page shares: its headers (the policy, caching)."""

from __future__ import annotations

from flask import Response, current_app

from ..page_security import secure_page

# The pages call the public API at this path of their own origin (the page's connect-src).
API_BASE = "/api/v1"

# Framing: LMSs show tools in iframes, and a frontend may embed the page; the token is never a
# cookie, so a page in a foreign frame acts only with the token that frame handed it.
DEFAULT_FRAME_ANCESTORS = "*"


def frame_ancestors() -> str:
    return str(current_app.config.get("LEARN_FRAME_ANCESTORS", DEFAULT_FRAME_ANCESTORS))


def page_response(html: str, status: int = 200, *, private: bool = False) -> Response:
    response = Response(html, status=status, mimetype="text/html")
    # The dashboard's policy, but frameable (LEARN_FRAME_ANCESTORS in the app's config). A page
    # that holds a learner token is never stored; the others are revalidated each time.
    return secure_page(response, cache_control="no-store" if private else "no-cache", frame_ancestors=frame_ancestors())

