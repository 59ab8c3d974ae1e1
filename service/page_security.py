"""The headers of the service's own pages (the dashboard, the API docs, the learner pages, the LTI
exercise picker): one policy, no inline script or style, nothing from another origin; and the one
header every response carries (no_sniffing)."""

from __future__ import annotations

from typing import TypeVar

from werkzeug.wrappers import Response as BaseResponse

R = TypeVar("R", bound=BaseResponse)


def content_security_policy(frame_ancestors: str = "'none'") -> str:
    return "; ".join([
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        f"frame-ancestors {frame_ancestors}",
    ])


#: The policy of pages nobody may frame (the dashboard, the API docs).
CONTENT_SECURITY_POLICY = content_security_policy()


def secure_page(response: R, *, cache_control: str = "no-cache", frame_ancestors: str = "'none'") -> R:
    """The policy and its companions on a page or one of its files. `cache_control`: the files
    have no content hash in their names, so they are revalidated every time (ETag makes it cheap)
    and a deploy never pairs a new page with an old script."""
    response.headers["Content-Security-Policy"] = content_security_policy(frame_ancestors)
    response.headers["Referrer-Policy"] = "no-referrer"
    if frame_ancestors == "'none'":
        response.headers["X-Frame-Options"] = "DENY"
    response.headers["Cache-Control"] = cache_control
    return response


def no_sniffing(response: R) -> R:
    """Every response (JSON, problems, pages, files): a browser takes its Content-Type as given and
    never guesses another (a JSON body holding learner text run as a script or a page)."""
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response
