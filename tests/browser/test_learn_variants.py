"""The learner's page in the learner's variant, in Chromium: a page opened with a token in the
fragment (the shared detail embedded) asks the API for the learner's variant and shows the choices
in that learner's order; a page opened without a token shows the shared order."""

from __future__ import annotations

from sqlalchemy import select

from service.catalog import load_catalog
from service.config import PROJECT_ROOT
from service.extensions import db_session
from service.learner_tokens import LEARNER, LearnerScope, issue_learner_token
from service.models import ApiClient
from service.variants import choice_order, variant_key

MULTI = "apply-call-forms"
SPEC = next(e.spec for e in load_catalog(PROJECT_ROOT / "exercises")[0] if e.slug == MULTI)


def _client_id(live_server) -> int:
    with live_server.app.app_context():
        return db_session().scalar(select(ApiClient.id).where(ApiClient.name == "lms-one"))


def _shown(page) -> list[str]:
    page.wait_for_selector("#exercise form.quiz input")
    return page.locator("#exercise form.quiz input").evaluate_all("inputs => inputs.map(i => i.value)")


def test_the_page_shows_each_learner_their_own_order(page, live_server):
    client_id = _client_id(live_server)
    secret = live_server.app.config["SECRET_KEY"]
    orders = {}
    for learner in ("sam", "kim", "lee", "ray"):
        token = issue_learner_token(secret, LearnerScope(client_id=client_id, learner=learner, exercise=MULTI,
                                                         role=LEARNER, link_id=None), 3600)
        page.goto(f"{live_server.url}/learn/{MULTI}#token={token}")
        orders[learner] = _shown(page)
        assert tuple(orders[learner]) == choice_order(secret, variant_key(client_id, learner), MULTI, SPEC)
    assert len({tuple(order) for order in orders.values()}) > 1
    page.evaluate("sessionStorage.clear()")
    page.goto(f"{live_server.url}/learn/{MULTI}")
    assert _shown(page) == [c["id"] for c in SPEC["choices"]]
