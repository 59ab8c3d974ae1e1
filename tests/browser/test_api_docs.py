"""/api/docs in a real headless Chromium: Swagger UI from the service's own origin renders the
OpenAPI document's operations and calls the API, under the page's Content-Security-Policy.

The `page` fixture (conftest.py) aborts and fails on any request to another origin, any
uncaught error and any CSP violation.
"""

from __future__ import annotations

from tests.browser.conftest import SCREENSHOTS
from tests.browser.support import expect

HTTP_METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}


def operations(spec: dict) -> list[tuple[str, str]]:
    return [(method.upper(), path) for path, item in spec["paths"].items() for method in item if method in HTTP_METHODS]


def test_api_docs_render_every_operation_from_this_origin(page, live_server):
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    spec = live_server.api().get("/api/v1/openapi.json").json
    expected = operations(spec)
    assert len(expected) > 20, expected

    page.goto("/api/docs")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text(spec["info"]["title"])
    blocks = page.locator(".opblock")
    # Tags open by default: one block per operation (a tag-less operation is listed under "default").
    expect(blocks).to_have_count(len(expected))
    shown = {(block.locator(".opblock-summary-method").inner_text().strip(),
              block.locator(".opblock-summary-path").get_attribute("data-path"))
             for block in blocks.all()}
    assert shown == set(expected)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENSHOTS / "test_api_docs-first-view.png")  # to look at

    # "Try it out" on the exercise list: Swagger UI calls the API on this origin (connect-src 'self').
    listing = page.locator(".opblock-get").filter(has=page.locator('[data-path="/api/v1/exercises"]'))
    listing.locator(".opblock-summary-control").click()
    listing.locator(".try-out__btn").click()
    listing.locator(".execute").click()
    expect(listing.locator(".live-responses-table tbody .response-col_status").first).to_have_text("200")
    expect(listing.locator(".live-responses-table .microlight").first).to_contain_text('"slug"')

    # Everything came from this server: the page, Swagger UI's files, the document and the call.
    assert requested, "no request recorded"
    assert [url for url in requested if not url.startswith(live_server.url + "/")] == []
    for path in ("/api/docs", "/vendor/swagger-ui/swagger-ui-bundle.js", "/vendor/swagger-ui/swagger-ui.css",
                 "/vendor/api-docs.js", "/api/v1/openapi.json"):
        assert live_server.url + path in requested, path
    assert any(url.startswith(live_server.url + "/api/v1/exercises") for url in requested)
