"""The launch in an LMS frame whose browser keeps no cookie of the tool: the state and nonce kept
in the platform's storage (IMS "OIDC Login with LTI Client Side postMessages"), over HTTP here
(tests/browser/test_lti_frame.py runs the pages' script in Chromium). Also the state cookie's
attributes and the launched page's frame-ancestors."""

from __future__ import annotations

import html
import json
import re

import pytest

from service.lti.launch import STATE_COOKIE
from service.models import LtiNonce, LtiResourceLink
from tests.helpers import count_rows

from .platform import STORAGE_FRAME
from .support import LAUNCH_URL, QUIZ, launch_handoff, rejection

SAME_ORIGIN = {"Sec-Fetch-Site": "same-origin"}


def _config(response) -> dict:
    page = response.get_data(as_text=True)
    match = re.search(r'<script type="application/json" id="gradquiz-lti-storage">(.*?)</script>', page, re.S)
    return json.loads(html.unescape(match.group(1)))


def _storage_login(client, platform, target=STORAGE_FRAME):
    response = client.get("/lti/login", query_string=platform.login_initiation(LAUNCH_URL, lti_storage_target=target))
    assert response.status_code == 200, response.get_data(as_text=True)
    return response


def _scripts_are_files_or_data(page: str) -> None:
    for tag in re.findall(r"<script\b[^>]*>", page):
        assert 'src="/lti/storage.js"' in tag or 'type="application/json"' in tag, tag


def test_with_platform_storage_the_login_is_a_page_that_stores_state_and_nonce(client, platform, lms):
    response = _storage_login(client, platform)
    config = _config(response)
    location = config["redirect"]
    query = dict(re.findall(r"[?&](state|nonce)=([^&]+)", location))
    assert config["step"] == "login" and config["target"] == STORAGE_FRAME
    assert config["platform_origin"] == platform.issuer  # the authorization endpoint's origin
    assert config["state_key"] == "lti_state_" + config["state"] and config["nonce_key"] == "lti_nonce_" + config["nonce"]
    assert location.startswith(platform.login_url) and query["nonce"] == config["nonce"]
    # The page runs only this site's script file, posts nowhere else, and is not kept.
    policy = response.headers["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "default-src 'none'" in policy and "frame-ancestors" not in policy
    assert response.headers["Cache-Control"] == "no-store"
    _scripts_are_files_or_data(response.get_data(as_text=True))
    # The state cookie is set too: browsers that keep it need no storage.
    assert STATE_COOKIE in response.headers["Set-Cookie"]
    script = client.get("/lti/storage.js")
    assert script.status_code == 200 and script.mimetype == "text/javascript"
    assert script.headers["X-Content-Type-Options"] == "nosniff"
    assert "lti.put_data" in script.get_data(as_text=True)


@pytest.mark.parametrize("target", ["", "a b", "x" * 101, "<script>", "frame;name"])
def test_a_storage_target_that_names_no_frame_is_ignored(client, platform, lms, target):
    response = client.get("/lti/login", query_string=platform.login_initiation(LAUNCH_URL, lti_storage_target=target))
    assert response.status_code == 302


def test_the_state_cookie_is_partitioned_secure_http_only_and_cross_site(client, platform, lms):
    for response in (client.get("/lti/login", query_string=platform.login_initiation(LAUNCH_URL)),
                     _storage_login(client, platform)):
        header = next(h for h in response.headers.getlist("Set-Cookie") if h.startswith(STATE_COOKIE + "="))
        attributes = {part.strip().split("=")[0].lower() for part in header.split(";")[1:]}
        assert {"secure", "httponly", "partitioned", "samesite", "path", "max-age"} <= attributes, header
        assert "SameSite=None" in header and "Path=/lti/" in header
        assert re.fullmatch(r"[0-9a-f]{64}", header.split(";")[0].split("=", 1)[1])  # a digest of the state


def _launch_without_cookie(app, client, platform, **claims):
    """Log in with storage, then come back from the platform in a browser that kept no cookie."""
    config = _config(_storage_login(client, platform))
    auth = platform.authorize(config["redirect"], custom={"exercise": QUIZ}, **claims)
    assert auth.form["lti_storage_target"] == STORAGE_FRAME
    cookieless = app.test_client()
    check = cookieless.post("/lti/launch", data=auth.form)
    return config, auth, cookieless, check


def test_a_launch_without_the_cookie_gets_a_page_that_reads_the_platforms_storage(app, client, platform, lms):
    config, auth, browser, check = _launch_without_cookie(app, client, platform)
    assert check.status_code == 200, check.get_data(as_text=True)
    page = check.get_data(as_text=True)
    read = _config(check)
    assert (read["step"], read["target"], read["platform_origin"]) == ("launch", STORAGE_FRAME, platform.issuer)
    assert (read["state_key"], read["nonce_key"]) == (config["state_key"], config["nonce_key"])
    assert 'action="/lti/launch"' in page and html.escape(auth.form["id_token"]) in page
    _scripts_are_files_or_data(page)
    assert check.headers["Referrer-Policy"] == "same-origin"  # its post back names this origin
    # Nothing is verified or written before the storage has answered.
    assert count_rows(app, LtiNonce) == 0 and count_rows(app, LtiResourceLink) == 0

    # The page posts back what the platform's storage held: the launch goes on to the exercise.
    stored = {**auth.form, "lti_storage_state": auth.form["state"], "lti_storage_nonce": config["nonce"]}
    launched = browser.post("/lti/launch", data=stored, headers=SAME_ORIGIN)
    handoff = launch_handoff(launched)
    assert handoff["exercise"] == QUIZ and handoff["learner"] == "learner-1"
    assert count_rows(app, LtiNonce) == 1
    # Used once.
    assert "already used" in rejection(browser.post("/lti/launch", data=stored, headers=SAME_ORIGIN))


@pytest.mark.parametrize("headers", [
    {"Sec-Fetch-Site": "cross-site"},
    {"Sec-Fetch-Site": "same-site"},
    {"Sec-Fetch-Site": "none"},
    {"Origin": "https://attacker.example"},
    {"Origin": "null"},
    {},
])
def test_stored_values_are_taken_only_from_the_tools_own_page(app, client, platform, lms, headers):
    """A form on another site could post anything as 'what the storage held': login CSRF."""
    config, auth, browser, _check = _launch_without_cookie(app, client, platform)
    stored = {**auth.form, "lti_storage_state": auth.form["state"], "lti_storage_nonce": config["nonce"]}
    assert "own launch page" in rejection(browser.post("/lti/launch", data=stored, headers=headers))
    assert count_rows(app, LtiNonce) == 0 and count_rows(app, LtiResourceLink) == 0


def test_without_sec_fetch_site_the_origin_header_must_be_the_tools(app, client, platform, lms):
    config, auth, browser, _check = _launch_without_cookie(app, client, platform)
    stored = {**auth.form, "lti_storage_state": auth.form["state"], "lti_storage_nonce": config["nonce"]}
    assert launch_handoff(browser.post("/lti/launch", data=stored, headers={"Origin": "http://localhost"}))["exercise"] == QUIZ


@pytest.mark.parametrize("wrong", ["state", "nonce", "empty", "another login"])
def test_storage_that_does_not_hold_this_launchs_state_is_refused(app, client, platform, lms, wrong):
    config, auth, browser, _check = _launch_without_cookie(app, client, platform)
    other = _config(_storage_login(client, platform))  # another login's state and nonce
    values = {"state": (auth.form["state"][:-2] + "xx", config["nonce"]),
              "nonce": (auth.form["state"], config["nonce"][:-2] + "xx"),
              "empty": ("", ""),
              "another login": (other["state"], other["nonce"])}[wrong]
    stored = {**auth.form, "lti_storage_state": values[0], "lti_storage_nonce": values[1]}
    assert "browser that started it" in rejection(browser.post("/lti/launch", data=stored, headers=SAME_ORIGIN))
    assert count_rows(app, LtiNonce) == 0 and count_rows(app, LtiResourceLink) == 0


def test_a_launch_without_cookie_or_storage_is_refused(app, client, platform, lms):
    auth = platform.authorize(_config(_storage_login(client, platform))["redirect"], custom={"exercise": QUIZ})
    form = {k: v for k, v in auth.form.items() if k != "lti_storage_target"}
    assert "browser that started it" in rejection(app.test_client().post("/lti/launch", data=form))
    # A state this tool never issued gets no storage page either.
    forged = dict(auth.form, state=auth.form["state"][:-3] + "xyz")
    assert "state" in rejection(app.test_client().post("/lti/launch", data=forged))


def test_with_the_cookie_the_launch_needs_no_storage_page(app, client, platform, lms):
    config = _config(_storage_login(client, platform))
    auth = platform.authorize(config["redirect"], custom={"exercise": QUIZ})
    assert launch_handoff(client.post("/lti/launch", data=auth.form))["exercise"] == QUIZ


def test_the_launched_page_is_the_exercise_page_framed_by_the_platform_only(app, client, platform, lms):
    config = _config(_storage_login(client, platform))
    return_url = "https://courses.example.edu/course/7/modules"
    auth = platform.authorize(config["redirect"], custom={"exercise": QUIZ},
                              overrides={"https://purl.imsglobal.org/spec/lti/claim/launch_presentation": {
                                  "document_target": "iframe", "return_url": return_url}})
    response = client.post("/lti/launch", data=auth.form)
    handoff = launch_handoff(response)
    page = response.get_data(as_text=True)
    assert 'id="gradquiz-exercise"' in page  # the learner's page (service/learn), not a placeholder
    policy = dict(d.strip().split(" ", 1) for d in response.headers["Content-Security-Policy"].split(";"))
    assert policy["frame-ancestors"].split() == sorted({platform.issuer, "https://courses.example.edu"})
    assert policy["script-src"] == "'self'"
    assert "X-Frame-Options" not in response.headers
    assert response.headers["Cache-Control"] == "no-store"
    # The token is in the page, never in a URL; it works, and is renewed at the URL the page is given.
    assert handoff["token"] not in response.headers.get("Location", "")
    assert handoff["refresh_url"] == "http://localhost/api/v1/learner-tokens/refresh"
    assert handoff["expires_in"] == 3600 and isinstance(handoff["expires_at"], int)
    renewed = client.post("/api/v1/learner-tokens/refresh", headers={"Authorization": f"Bearer {handoff['token']}"})
    assert renewed.status_code == 200 and renewed.json["exercises"] == [QUIZ]
    attempt = client.post(f"/api/v1/exercises/{QUIZ}/attempts", json={"answer": "none-each"},
                          headers={"Authorization": f"Bearer {renewed.json['token']}"})
    assert attempt.status_code == 201 and attempt.json["learner"] == "learner-1"
