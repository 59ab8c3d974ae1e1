"""/api/docs over plain HTTP: a page that names only this origin, under a strict policy.

The page, its scripts and its stylesheet are the service's own (service/frontend.py, and
service/static/vendor/ built by frontend/build.mjs); the browser test (tests/browser/
test_api_docs.py) shows Swagger UI rendering from them.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from service import create_app
from service.frontend import VENDOR_DIR
from service.page_security import CONTENT_SECURITY_POLICY as DASHBOARD_POLICY

URL_ATTRIBUTES = {"src", "href", "action", "formaction", "data", "poster", "srcset", "data-spec-url"}


class Page(HTMLParser):
    """The page's URLs, scripts, inline styles and event handlers."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[tuple[str, str, str]] = []  # (tag, attribute, value)
        self.scripts: list[dict[str, str | None]] = []
        self.inline: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in URL_ATTRIBUTES and value is not None:
                self.urls.append((tag, name, value))
            if name.startswith("on") or name == "style":
                self.inline.append(f"<{tag} {name}=…>")
        if tag == "script":
            self.scripts.append(dict(attrs))
            self._in_script = True
        if tag == "style":
            self.inline.append("<style>")

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script and data.strip():
            self.inline.append(f"inline script: {data.strip()[:40]}")


def directives(policy: str) -> dict[str, set[str]]:
    parsed = {}
    for directive in filter(None, (part.strip() for part in policy.split(";"))):
        name, *values = directive.split()
        parsed[name] = set(values)
    return parsed


@pytest.fixture(scope="module")
def docs():
    # The page and its files read no table: an empty database is enough, and one backend.
    return create_app({"database_url": "sqlite://", "env": "testing"}).test_client()


@pytest.fixture(scope="module")
def page(docs):
    response = docs.get("/api/docs")
    assert response.status_code == 200
    assert response.mimetype == "text/html"
    parsed = Page()
    parsed.feed(response.get_data(as_text=True))
    return response, parsed


def test_the_page_has_the_dashboards_strict_policy(page):
    response, _ = page
    policy = directives(response.headers["Content-Security-Policy"])
    assert policy == directives(DASHBOARD_POLICY)
    assert policy["script-src"] == {"'self'"} and policy["style-src"] == {"'self'"}
    assert policy["default-src"] == {"'self'"} and policy["connect-src"] == {"'self'"}
    assert not any("unsafe" in value or "*" in value for values in policy.values() for value in values)
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["X-Frame-Options"] == "DENY"


def test_the_page_names_no_other_origin_and_runs_no_inline_code(page):
    response, parsed = page
    html = response.get_data(as_text=True)
    assert not re.search(r"https?:|//", html.replace("<!doctype html>", "")), "an absolute URL in the page"
    assert parsed.inline == []
    for tag, attribute, value in parsed.urls:
        assert value == "data:," or (value.startswith("/") and not value.startswith("//")), (tag, attribute, value)
    assert [script.get("src") for script in parsed.scripts] == [
        "/vendor/swagger-ui/swagger-ui-bundle.js", "/vendor/api-docs.js"]


def test_everything_the_page_names_is_served_here(docs, page):
    _, parsed = page
    served = 0
    for _tag, attribute, value in parsed.urls:
        if value.startswith("data:"):
            continue
        response = docs.get(value)
        assert response.status_code == 200, value
        if attribute == "data-spec-url":  # the OpenAPI document Swagger UI renders
            assert response.is_json and response.json["openapi"].startswith("3.1"), value
            continue
        served += 1
        # Byte for byte the committed files of service/static/vendor/ (tests/unit/test_frontend_bundle.py).
        assert response.get_data() == (VENDOR_DIR / value.removeprefix("/vendor/")).read_bytes(), value
        assert response.headers["X-Content-Type-Options"] == "nosniff"
        expected_type = {".js": "text/javascript", ".css": "text/css"}[value[value.rindex("."):]]
        assert response.mimetype == expected_type, value
        if expected_type == "text/css":
            # A stylesheet could still fetch fonts or images from elsewhere: only data: URLs.
            css = response.get_data(as_text=True)
            assert "@import" not in css
            urls = re.findall(r"url\(\s*['\"]?([^'\")\s]*)", css)
            assert urls and all(url.startswith("data:") for url in urls), {u[:30] for u in urls}
    assert served == 3


def test_the_vendor_files_stay_in_their_folder(docs):
    assert docs.get("/vendor/manifest.json").status_code == 200
    for path in ("/vendor/../frontend.py", "/vendor/%2e%2e/frontend.py", "/vendor/%2e%2e/admin/app.js",
                 "/vendor/swagger-ui/missing.js", "/static/vendor/api-docs.js"):
        assert docs.get(path).status_code == 404, path
