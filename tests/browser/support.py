"""Helpers of the browser tests: Playwright's expect, a screenshot, the dashboard's sign-in, an attempt
sent through the API."""

from __future__ import annotations

from pathlib import Path

from tests.browser.conftest import SCREENSHOTS
from tests.helpers import bearer


def expect(target):
    """Playwright's auto-waiting assertions (imported here so that a missing package fails in the
    fixture, with what to install)."""
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(target)


def shot(page, name: str, element=None) -> Path:
    """build/screenshots/<name>.png: the whole page, or one element of a long one."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    if element is not None:
        element.screenshot(path=path)
    else:
        page.screenshot(path=path, full_page=True)
    return path


def submit_attempt(api, key: str, slug: str, learner: str, **body) -> dict:
    response = api.post(f"/api/v1/exercises/{slug}/attempts", json={"learner": learner, **body}, headers=bearer(key))
    assert response.status_code in (201, 202), response.json
    return response.json


def sign_in(page, key: str) -> None:
    page.goto("/admin")
    page.fill("#api-key", key)
    page.click("#signin-submit")
    page.wait_for_selector("#topbar:not([hidden])")
