"""LTI Dynamic Registration against the test LMS (tests/lti/platform.py): an admin makes a
registration link, the LMS opens it with its OpenID configuration and registration token, the
tool registers itself over real HTTP and stores the platform, and then the LMS launches."""

from __future__ import annotations

import html
import json
import logging
import re
from datetime import datetime, timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from sqlalchemy import func, select, update

from service.extensions import db_session
from service.lti import claims as c
from service.lti.registration import TOOL_CONFIGURATION
from service.models import LtiPlatform, LtiRegistrationLink
from service.models.base import utcnow
from tests.helpers import bearer

from .support import LAUNCH_URL, QUIZ, launch_handoff, lti_launch, lti_login, open_registration, registration_link

CLOSE = "org.imsglobal.lti.close"


def _platforms(app) -> list[LtiPlatform]:
    with app.app_context():
        return list(db_session().scalars(select(LtiPlatform).order_by(LtiPlatform.id)))


def _platform_count(app) -> int:
    with app.app_context():
        return db_session().scalar(select(func.count()).select_from(LtiPlatform))


def test_an_lms_registers_the_tool_with_an_admins_link_and_launches_at_once(app, client, platform, admin_key, caplog):
    caplog.set_level(logging.DEBUG)
    link = registration_link(client, admin_key)
    query = parse_qs(urlsplit(link["url"]).query)
    assert link["url"].startswith("http://localhost/lti/register?") and list(query) == ["code"]

    page = open_registration(client, platform, link["url"])

    assert page.status_code == 201, page.get_data(as_text=True)
    # Neither the link's code nor the LMS's registration token reaches a log; the registration does.
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert query["code"][0] not in logged and platform.registration_token not in logged
    assert f"registered itself through registration link {link['id']}" in logged
    # The configuration was read with the registration token (Canvas asks for it there too).
    assert platform.openid_configuration_requests == [{"authorization": f"Bearer {platform.registration_token}"}]
    [sent] = platform.registrations  # /register checked the bearer and the required members
    assert sent["initiate_login_uri"] == "http://localhost/lti/login"
    assert sent["redirect_uris"] == [LAUNCH_URL] and sent["jwks_uri"] == "http://localhost/lti/jwks"
    assert set(sent["scope"].split()) == {c.SCOPE_LINEITEM, c.SCOPE_SCORE, c.SCOPE_MEMBERSHIPS}
    tool = sent[TOOL_CONFIGURATION]
    assert tool["domain"] == "localhost" and tool["target_link_uri"] == LAUNCH_URL
    assert {"sub", "name", "given_name", "family_name"} <= set(tool["claims"])
    messages = {message["type"]: message for message in tool["messages"]}
    assert set(messages) == {c.RESOURCE_LINK_REQUEST, c.DEEP_LINKING_REQUEST}
    assert messages[c.DEEP_LINKING_REQUEST]["placements"] == ["ContentArea"]  # the one the LMS lists

    [stored] = _platforms(app)
    assert (stored.issuer, stored.client_id, stored.deployment_ids) == (platform.issuer, platform.client_id,
                                                                        [platform.deployment_id])
    assert (stored.auth_login_url, stored.auth_token_url, stored.jwks_url) == (
        platform.login_url, platform.token_url, platform.jwks_url)
    assert stored.name == f"gradquiz-tests at {urlsplit(platform.issuer).netloc}" and stored.status == "active"
    used = client.get("/api/v1/admin/lti/registration-links", headers=bearer(admin_key)).json
    assert [(row["id"], row["platform"]) for row in used] == [(link["id"], stored.id)] and used[0]["used_at"]
    assert "url" not in used[0] and "code" not in json.dumps(used)

    # The LMS launches the tool as it would one an admin registered by hand.
    handoff = launch_handoff(lti_launch(client, platform, sub="student-9", custom={"exercise": QUIZ}))
    assert handoff["learner"] == "student-9" and handoff["role"] == "learner" and handoff["exercise"] == QUIZ


def test_the_page_asks_the_lms_to_close_its_dialog(client, platform, admin_key):
    page = open_registration(client, platform, registration_link(client, admin_key)["url"])
    text = page.get_data(as_text=True)
    assert page.status_code == 201 and page.mimetype == "text/html"
    assert "gradquiz is registered" in text and html.escape(platform.issuer) in text
    origins = json.loads(html.unescape(re.search(
        r'<script type="application/json" id="gradquiz-close-origins">(.*?)</script>', text, re.S).group(1)))
    assert origins == [platform.issuer]  # its configuration's, issuer's and authorization endpoint's origin
    assert f'subject: "{CLOSE}"' in text and "window.opener || " in text
    # The only script is this page's own (its nonce), the page may be framed by the LMS's, the code in its
    # address is sent nowhere (no referrer), and the page is not kept.
    nonce = re.search(r"script-src 'nonce-([^']+)'", page.headers["Content-Security-Policy"]).group(1)
    assert text.count(f'<script nonce="{nonce}">') == 1 and "frame-ancestors" not in page.headers["Content-Security-Policy"]
    assert "X-Frame-Options" not in page.headers
    assert page.headers["Referrer-Policy"] == "no-referrer" and page.headers["Cache-Control"] == "no-store"


def test_a_link_works_once_until_it_expires_or_is_withdrawn(app, client, platform, admin_key):
    first = registration_link(client, admin_key)
    assert open_registration(client, platform, first["url"]).status_code == 201
    again = open_registration(client, platform, first["url"])
    assert again.status_code == 403 and "was used already or has expired" in again.get_data(as_text=True)
    assert "close-origins" not in again.get_data(as_text=True)  # the dialog stays, saying why

    expired, withdrawn = registration_link(client, admin_key), registration_link(client, admin_key)
    with app.app_context():
        db_session().execute(update(LtiRegistrationLink).where(LtiRegistrationLink.id == expired["id"])
                             .values(expires_at=utcnow() - timedelta(seconds=1)))
        db_session().commit()
    assert client.delete(f"/api/v1/admin/lti/registration-links/{withdrawn['id']}",
                         headers=bearer(admin_key)).status_code == 204
    forged = "http://localhost/lti/register?code=not-a-code-an-admin-made"
    for url in (expired["url"], withdrawn["url"], forged, "http://localhost/lti/register"):
        refused = open_registration(client, platform, url, headers={})
        assert refused.status_code == 403 and refused.mimetype == "application/problem+json", url
        assert refused.json["title"] == "This registration link does not work"
    assert len(platform.registrations) == 1 and len(platform.openid_configuration_requests) == 1  # no call made
    assert _platform_count(app) == 1


def test_a_link_lasts_as_long_as_the_admin_asks(client, admin_key):
    link = registration_link(client, admin_key, valid_hours=2)
    lasts = datetime.fromisoformat(link["expires_at"]) - datetime.fromisoformat(link["created_at"])
    assert lasts == timedelta(hours=2)
    for body in ({"label": ""}, {"label": "x", "valid_hours": 0}, {"label": "x", "valid_hours": 721}, {}):
        refused = client.post("/api/v1/admin/lti/registration-links", headers=bearer(admin_key), json=body)
        assert refused.status_code == 422 and refused.mimetype == "application/problem+json", body


def test_with_approval_on_the_platform_waits_for_an_admin(make_app, app, platform, admin_key):
    approving = make_app(lti_registration_approval=True)  # the same database, the setting on
    client = approving.test_client()
    page = open_registration(client, platform, registration_link(client, admin_key)["url"])
    assert page.status_code == 201 and "waiting for approval" in page.get_data(as_text=True)
    assert "close-origins" in page.get_data(as_text=True)  # the LMS's part is done: its dialog closes
    [listed] = client.get("/api/v1/admin/lti/platforms", headers=bearer(admin_key)).json
    assert listed["status"] == "pending" and listed["approved_at"] is None

    refused = client.get("/lti/login", query_string=platform.login_initiation(LAUNCH_URL))
    assert refused.status_code == 401 and "waits for an administrator of gradquiz to approve it" in refused.json["detail"]

    approved = client.post(f"/api/v1/admin/lti/platforms/{listed['id']}/approve", headers=bearer(admin_key))
    assert approved.status_code == 200 and approved.json["status"] == "active" and approved.json["approved_at"]
    handoff = launch_handoff(lti_launch(client, platform, sub="student-3", custom={"exercise": QUIZ}))
    assert handoff["learner"] == "student-3"

    # Approval is no way back for a platform an admin disabled.
    assert client.delete(f"/api/v1/admin/lti/platforms/{listed['id']}", headers=bearer(admin_key)).status_code == 204
    again = client.post(f"/api/v1/admin/lti/platforms/{listed['id']}/approve", headers=bearer(admin_key))
    assert again.status_code == 409 and again.mimetype == "application/problem+json"
    assert client.get(f"/api/v1/admin/lti/platforms/{listed['id']}", headers=bearer(admin_key)).json["status"] == "disabled"


def test_a_launch_started_before_approval_is_refused_too(make_app, app, platform, admin_key):
    """A state issued while the platform was active cannot carry a launch of it once it is pending:
    verify_launch checks the platform again (here: set pending behind the tool's back)."""
    client = app.test_client()
    assert open_registration(client, platform, registration_link(client, admin_key)["url"]).status_code == 201
    auth = platform.authorize(lti_login(client, platform))
    with app.app_context():
        db_session().execute(update(LtiPlatform).values(approved_at=None))
        db_session().commit()
    refused = client.post("/lti/launch", data=auth.form)
    assert refused.status_code == 401 and "approve" in refused.json["detail"]


def test_registering_again_updates_the_platform_and_keeps_every_deployment(app, client, platform, admin_key):
    assert open_registration(client, platform, registration_link(client, admin_key)["url"]).status_code == 201
    platform.deployment_id = "deployment-2"  # the LMS deploys the tool again, under the same client id
    page = open_registration(client, platform, registration_link(client, admin_key)["url"])
    assert page.status_code == 200 and "registration is updated" in page.get_data(as_text=True)
    [stored] = _platforms(app)
    assert stored.deployment_ids == ["deployment-1", "deployment-2"]
    # Launched from deployment-2.
    assert launch_handoff(lti_launch(client, platform, custom={"exercise": QUIZ}))["learner"] == "learner-1"


def test_registering_again_does_not_enable_a_platform_an_admin_disabled(app, client, platform, admin_key):
    assert open_registration(client, platform, registration_link(client, admin_key)["url"]).status_code == 201
    [stored] = _platforms(app)
    assert client.delete(f"/api/v1/admin/lti/platforms/{stored.id}", headers=bearer(admin_key)).status_code == 204
    page = open_registration(client, platform, registration_link(client, admin_key)["url"])
    assert page.status_code == 200 and "disabled" in page.get_data(as_text=True)
    assert [p.status for p in _platforms(app)] == ["disabled"]
    refused = client.get("/lti/login", query_string=platform.login_initiation(LAUNCH_URL))
    assert refused.status_code == 401 and "disabled" in refused.json["detail"]


def test_a_moodle_style_configuration_is_read(app, client, platform, admin_key):
    """Moodle 3.10 lists messages_supported as plain names; an LMS without NRPS is not asked for it."""
    platform.product_family_code = "moodle"
    config = platform.openid_configuration()
    platform.openid_configuration_overrides = {
        "scopes_supported": [c.SCOPE_LINEITEM, c.SCOPE_SCORE],
        "https://purl.imsglobal.org/spec/lti-platform-configuration": {
            **config["https://purl.imsglobal.org/spec/lti-platform-configuration"],
            "messages_supported": ["LtiResourceLink", "LtiDeepLinkingRequest"]}}
    assert open_registration(client, platform, registration_link(client, admin_key)["url"]).status_code == 201
    [sent] = platform.registrations
    assert set(sent["scope"].split()) == {c.SCOPE_LINEITEM, c.SCOPE_SCORE}
    messages = {message["type"]: message for message in sent[TOOL_CONFIGURATION]["messages"]}
    assert set(messages) == {c.RESOURCE_LINK_REQUEST, c.DEEP_LINKING_REQUEST}
    assert "placements" not in messages[c.DEEP_LINKING_REQUEST]
    assert _platforms(app)[0].name.startswith("Moodle at 127.0.0.1:")


# What the LMS answered is never quoted (its issuer, its page): the refusal names what is wrong.
NOT_A_CONFIGURATION = "did not answer with an OpenID configuration (a JSON object of at most 256 KiB)"
BAD_CONFIGURATIONS = {
    "issuer of another origin": ({"issuer": "https://elsewhere.example"}, None,
                                 "names an issuer which is not of the configuration's own origin"),
    "no registration endpoint": ({"registration_endpoint": None}, None, "registration_endpoint is missing"),
    "no jwks_uri": ({"jwks_uri": None}, None, "jwks_uri is missing"),
    "a token endpoint that is no URL": ({"token_endpoint": "ftp://x"}, None,
                                        "token_endpoint is missing or is not an http(s) URL"),
    "not JSON": ({}, "<!doctype html><title>Log in</title>", NOT_A_CONFIGURATION),
    "no issuer": ({"issuer": None}, None, "has no issuer"),
    "too large": ({"x-padding": "x" * 300_000}, None, NOT_A_CONFIGURATION),
}


@pytest.mark.parametrize("case", BAD_CONFIGURATIONS)
def test_a_bad_openid_configuration_is_refused_and_nothing_is_stored(app, client, platform, admin_key, case):
    overrides, page, detail = BAD_CONFIGURATIONS[case]
    platform.openid_configuration_overrides, platform.openid_configuration_page = overrides, page
    link = registration_link(client, admin_key)
    refused = open_registration(client, platform, link["url"], headers={})
    assert refused.status_code == 502 and refused.mimetype == "application/problem+json"
    assert detail in refused.json["detail"], refused.json
    assert "elsewhere.example" not in refused.json["detail"] and "Log in" not in refused.json["detail"]
    shown = open_registration(client, platform, link["url"])  # the same, as the page in the LMS's dialog shows it
    assert shown.status_code == 502 and detail in html.unescape(shown.get_data(as_text=True))
    assert "close-origins" not in shown.get_data(as_text=True)
    assert platform.registrations == [] and _platform_count(app) == 0
    # The link was not used up: once the LMS is fixed, the same link registers it.
    platform.openid_configuration_overrides, platform.openid_configuration_page = {}, None
    assert open_registration(client, platform, link["url"]).status_code == 201


def test_an_unreachable_configuration_or_a_refused_registration_stores_nothing(app, client, platform, admin_key):
    link = registration_link(client, admin_key)
    unreachable = client.get(link["url"] + "&openid_configuration=http%3A%2F%2F127.0.0.1%3A9%2Fconfig")
    assert unreachable.status_code == 502
    assert "OpenID configuration URL gave no answer within 10 seconds" in unreachable.json["detail"]
    missing = client.get(link["url"])
    assert missing.status_code == 400 and "openid_configuration" in missing.json["detail"]

    wrong_token = platform.registration_url(link["url"]).replace(platform.registration_token, "expired-token")
    refused = client.get(wrong_token)
    assert refused.status_code == 502 and "The LMS did not accept the registration" in refused.json["detail"]
    # Neither the LMS's status nor its own words: the reply is no window on what answered.
    assert "401" not in refused.json["detail"] and "registration token" in refused.json["detail"]
    assert "missing or wrong" not in refused.json["detail"]
    assert platform.registrations == [] and _platform_count(app) == 0
    assert "expired-token" not in json.dumps(refused.json)


def test_without_a_deployment_the_platform_is_stored_and_says_what_is_missing(app, client, platform, admin_key):
    platform.deployment_id = ""  # an LMS that names no deployment in its answer
    page = open_registration(client, platform, registration_link(client, admin_key)["url"])
    assert page.status_code == 201 and "The LMS named no deployment" in page.get_data(as_text=True)
    assert _platforms(app)[0].deployment_ids == []


def test_an_operator_makes_a_link_and_approves_with_the_cli(make_app, app, platform):
    approving = make_app(lti_registration_approval=True)
    cli = approving.test_cli_runner()
    made = cli.invoke(args=["lti", "registration-link", "--label", "Moodle", "--hours", "1",
                            "--base-url", "http://localhost/"])
    assert made.exit_code == 0, made.output
    url = made.stdout.strip()
    assert url.startswith("http://localhost/lti/register?code=")
    assert cli.invoke(args=["lti", "registration-link", "--label", "Moodle"]).exit_code != 0  # no PUBLIC_URL: says so

    assert open_registration(approving.test_client(), platform, url).status_code == 201
    [stored] = _platforms(app)
    listed = cli.invoke(args=["lti", "platforms"]).output
    assert stored.name in listed and listed.rstrip().endswith("pending")
    approved = cli.invoke(args=["lti", "approve", str(stored.id)])
    assert approved.exit_code == 0 and "active" in cli.invoke(args=["lti", "platforms"]).output


def test_two_registrations_racing_for_one_link_store_one(app):
    """Both passed the link's check before either stored: the second to store is refused (409) and
    its platform goes with its transaction."""
    from service.lti.registration import PlatformConfiguration, Registered, RegistrationRefused, make_link, store

    lms = "https://racing-lms.example"
    config = PlatformConfiguration(issuer=lms, registration_endpoint=lms + "/register", authorization_endpoint=lms + "/auth",
                                   token_endpoint=lms + "/token", jwks_uri=lms + "/jwks", product=None, messages=None,
                                   scopes_supported=None, account_name=None)
    with app.app_context():
        session = db_session()
        link, _code = make_link(session, "race", 1)
        session.commit()
        store(session, link.id, config, Registered("first", "d1"), approval=False)
        session.commit()
        with pytest.raises(RegistrationRefused) as refused:
            store(session, link.id, config, Registered("second", "d1"), approval=False)
        session.rollback()
        assert refused.value.status == 409
        assert [p.client_id for p in session.scalars(select(LtiPlatform))] == ["first"]
