"""LTI 1.3 against a test platform on localhost: real RSA keys, signed JWTs, JWKS, token and
AGS endpoints over HTTP. The whole flow (login, launch, deep link, attempt, score posted) and
the attacks a launch must refuse."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
import time
import uuid
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from sqlalchemy import select

from service.config import PROJECT_ROOT
from service.extensions import db_session
from service.lti import claims as c
from service.lti.launch import STATE_COOKIE, cookie_value
from service.lti.platforms import platform_keys
from service.models import (
    OVERRIDDEN_EVENT,
    REGRADED_EVENT,
    Attempt,
    AttemptEvent,
    LtiNonce,
    LtiResourceLink,
    LtiToolKey,
    ScorePassback,
    VariantPreparation,
)
from service.models.base import utcnow
from service.services import progress
from service.services.events import record_attempt_event
from tests.helpers import bearer, count_rows

from .platform import INSTRUCTOR_ROLES
from .support import (
    LAUNCH_URL,
    QUIZ,
    RIGHT,
    WRONG,
    context_claim,
    delivered_after_one_failure,
    expected_score,
    iso_millis,
    launch_handoff,
    lti_launch,
    lti_login,
    make_passbacks_due,
    passback_runner,
    rejection,
    submitted_hours_ago,
    trust_tool_keys,
)


def test_the_tool_tells_an_lms_admin_its_urls_and_publishes_only_public_keys(client, admin_key, client_key):
    urls = client.get("/api/v1/admin/lti/tool", headers=bearer(admin_key)).json
    assert urls == {"login_url": "http://localhost/lti/login", "launch_url": LAUNCH_URL,
                    "deep_linking_url": LAUNCH_URL, "jwks_url": "http://localhost/lti/jwks"}
    assert client.get("/api/v1/admin/lti/tool", headers=bearer(client_key)).status_code == 403
    keys = client.get("/lti/jwks").json["keys"]
    assert len(keys) == 1 and keys[0]["alg"] == "RS256" and keys[0]["kid"]
    assert not {"d", "p", "q", "dp", "dq", "qi"} & set(keys[0])  # nothing private


def test_whole_flow_deep_link_then_launch_attempt_and_score_in_the_gradebook(app, client, platform, lms):
    # The instructor adds two exercises with Deep Linking.
    picker = lti_launch(client, platform, message_type=c.DEEP_LINKING_REQUEST, roles=INSTRUCTOR_ROLES,
                     sub="teacher-1")
    assert picker.status_code == 200, picker.get_data(as_text=True)
    page = picker.get_data(as_text=True)
    assert f'value="{QUIZ}"' in page
    picker_token = html.unescape(re.search(r'name="picker" value="([^"]+)"', page).group(1))
    returned = client.post("/lti/deep-link", data={"picker": picker_token, "exercise": [QUIZ, "clamp-function"]})
    assert returned.status_code == 200
    form = returned.get_data(as_text=True)
    assert f'action="{platform.issuer}/deep_link_return"' in form
    response_jwt = html.unescape(re.search(r'name="JWT" value="([^"]+)"', form).group(1))
    deep_link = platform.read_deep_linking_response(response_jwt)  # verified with the tool's JWKS
    items = deep_link[c.CONTENT_ITEMS]
    dates = {"gradquiz_available_from": "$ResourceLink.available.startDateTime",
             "gradquiz_due_at": "$ResourceLink.submission.endDateTime"}  # asked at each launch
    assert [item["custom"] for item in items] == [{"exercise": QUIZ, **dates}, {"exercise": "clamp-function", **dates}]
    assert all(item["url"] == LAUNCH_URL and item["lineItem"]["scoreMaximum"] == 100 for item in items)

    # A learner opens the first link: the tool hands the frontend a learner token.
    handoff = launch_handoff(lti_launch(client, platform, custom=items[0]["custom"], sub="student-7"))
    assert handoff["exercise"] == QUIZ and handoff["learner"] == "student-7" and handoff["role"] == "learner"
    token = handoff["token"]

    # With the token, the frontend uses the normal API: the learner's id comes from the token.
    # The runner sends the score that counts (best, the exercise's policy) to the line item.
    for answer in (RIGHT, WRONG):
        attempt = client.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=bearer(token), json={"answer": answer})
        assert attempt.status_code == 201, attempt.json
        assert attempt.json["learner"] == "student-7"
        assert passback_runner(app).run_once() == 1
    history = client.get("/api/v1/learners/student-7/attempts", headers=bearer(token))
    assert history.status_code == 200 and len(history.json["attempts"]) == 2

    assert [s["lineitem"] for s in platform.scores] == [platform.lineitem_url()] * 2
    for sent in platform.scores:
        assert sent["body"]["userId"] == "student-7"
        assert sent["body"]["scoreGiven"] == 100 and sent["body"]["scoreMaximum"] == 100
        assert sent["body"]["activityProgress"] == "Submitted"
        assert sent["body"]["gradingProgress"] == "FullyGraded"
    # One access token, fetched with a client assertion the platform verified against the JWKS.
    granted = [r for r in platform.token_requests if r["status"] == 200]
    assert len(granted) == 1 and granted[0]["claims"]["iss"] == platform.client_id
    assert platform.rejected == []


def test_passback_retries_after_a_platform_error_and_admins_see_its_state(app, client, platform, lms, admin_key):
    token = launch_handoff(lti_launch(client, platform, custom={"exercise": QUIZ}))["token"]
    attempt = client.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=bearer(token), json={"answer": RIGHT})
    assert attempt.status_code == 201, attempt.json
    platform.fail_next_scores = 1
    runner = passback_runner(app)
    runner.run_once()
    failing = client.get("/api/v1/admin/lti/passbacks", headers=bearer(admin_key)).json
    assert [(p["status"], p["tries"], p["last_status_code"]) for p in failing] == [("pending", 1, 500)]
    assert failing[0]["attempt"] == attempt.json["id"] and failing[0]["learner"] == "learner-1"
    with app.app_context():  # the backoff (tiny here) has passed
        db_session().execute(ScorePassback.__table__.update().values(next_attempt_at=utcnow()))
        db_session().commit()
    runner.run_once()
    done = client.get(f"/api/v1/admin/lti/passbacks?attempt={attempt.json['id']}", headers=bearer(admin_key)).json
    assert [(p["status"], p["tries"], p["last_status_code"]) for p in done] == [("delivered", 2, 204)]
    assert done[0]["sent_score"]["userId"] == "learner-1"
    assert len(platform.scores) == 1


def test_learner_token_is_scoped_to_its_learner_and_exercise(app, client, platform, lms, client_key):
    token = launch_handoff(lti_launch(client, platform, custom={"exercise": QUIZ}, sub="alice"))["token"]
    other = launch_handoff(lti_launch(client, platform, custom={"exercise": QUIZ}, sub="bob",
                             resource_link_id="link-1"))["token"]
    mine = client.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=bearer(token), json={"answer": WRONG})
    assert mine.status_code == 201, mine.json
    assert client.post("/api/v1/exercises/clamp-fn/attempts", headers=bearer(token),
                       json={"code": "x = 1"}).status_code == 403
    assert client.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=bearer(token),
                       json={"answer": RIGHT, "learner": "bob"}).status_code == 403
    assert client.get("/api/v1/learners/bob/attempts", headers=bearer(token)).status_code == 403
    assert client.get("/api/v1/admin/failed-jobs", headers=bearer(token)).status_code == 403
    # Runs: its learner's own, and at its exercise only.
    assert client.post("/api/v1/runs", headers=bearer(token), json={"code": "x = 1", "wait": 0}).status_code == 202
    assert client.post("/api/v1/runs", headers=bearer(token),
                       json={"code": "x = 1", "exercise": "clamp-function", "wait": 0}).status_code == 403
    assert client.get(f"/api/v1/attempts/{mine.json['id']}", headers=bearer(token)).status_code == 200
    assert client.get(f"/api/v1/attempts/{mine.json['id']}", headers=bearer(other)).status_code == 404
    # Another client's API key does not see the platform's learners either.
    assert client.get(f"/api/v1/attempts/{mine.json['id']}", headers=bearer(client_key)).status_code == 404
    forged = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    assert client.get("/api/v1/learners/alice/attempts", headers=bearer(forged)).status_code == 401


def test_an_instructors_attempts_send_no_score(app, client, platform, lms):
    handoff = launch_handoff(lti_launch(client, platform, custom={"exercise": QUIZ}, roles=INSTRUCTOR_ROLES, sub="teacher"))
    assert handoff["role"] == "instructor"
    response = client.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=bearer(handoff["token"]), json={"answer": RIGHT})
    assert response.status_code == 201, response.json
    assert count_rows(app, ScorePassback) == 0


def _nonce_and_state(location: str) -> tuple[str, str]:
    query = parse_qs(urlsplit(location).query)
    return query["nonce"][0], query["state"][0]


ATTACKS = {
    "bad signature": (dict(key=rsa.generate_private_key(public_exponent=65537, key_size=2048)), "signature"),
    "unknown kid": (dict(kid="not-a-platform-key"), "signing key is unknown"),
    "expired": (dict(exp_in=-300, iat_offset=-600), "expired"),
    "wrong audience": (dict(overrides={"aud": "another-tool", "azp": "another-tool"}), "not for this tool"),
    "wrong azp": (dict(overrides={"azp": "another-tool"}), "azp"),
    "wrong issuer": (dict(overrides={"iss": "https://evil.example"}), "issuer"),
    "unknown deployment": (dict(overrides={c.DEPLOYMENT_ID: "deployment-x"}), "deployment-x"),
    "missing deployment": (dict(remove=(c.DEPLOYMENT_ID,)), "deployment_id"),
    "missing sub": (dict(remove=("sub",)), "'sub'"),
    "missing nonce": (dict(remove=("nonce",)), "'nonce'"),
    "missing roles": (dict(remove=(c.ROLES,)), "roles"),
    "missing resource link": (dict(remove=(c.RESOURCE_LINK,)), "resource_link"),
    "missing message type": (dict(remove=(c.MESSAGE_TYPE,)), "Message type"),
    "wrong message type": (dict(message_type="LtiSubmissionReviewRequest"), "not supported"),
    "wrong version": (dict(overrides={c.VERSION: "1.1"}), "LTI 1.3.0"),
    "another nonce": (dict(overrides={"nonce": "chosen-by-attacker"}), "nonce"),
    "deep link for a learner": (dict(message_type=c.DEEP_LINKING_REQUEST), "Only instructors"),
}


@pytest.mark.parametrize("attack", ATTACKS)
def test_attacks_on_the_launch_are_refused_with_no_session(app, client, platform, lms, attack):
    claims, reason = ATTACKS[attack]
    nonce, state = _nonce_and_state(lti_login(client, platform))
    id_token = platform.id_token(nonce=nonce, custom={"exercise": QUIZ}, **claims)
    response = client.post("/lti/launch", data={"id_token": id_token, "state": state})
    assert reason in rejection(response)
    assert count_rows(app, LtiResourceLink) == 0 and count_rows(app, LtiNonce) == 0


def test_a_replayed_launch_is_refused(app, client, platform, lms):
    auth = platform.authorize(lti_login(client, platform), custom={"exercise": QUIZ})
    assert client.post("/lti/launch", data=auth.form).status_code == 200
    # Even with the browser's state cookie captured too, the id_token's nonce is used up.
    client.set_cookie(STATE_COOKIE, cookie_value(auth.form["state"]), path="/lti/")
    assert "already used" in rejection(client.post("/lti/launch", data=auth.form))
    assert count_rows(app, LtiNonce) == 1


def test_the_state_must_come_back_to_the_browser_that_logged_in(app, client, platform, lms):
    auth = platform.authorize(lti_login(client, platform), custom={"exercise": QUIZ})
    other_browser = app.test_client()
    assert "browser" in rejection(other_browser.post("/lti/launch", data=auth.form))
    forged_state = dict(auth.form, state=auth.form["state"][:-3] + "xyz")
    assert "state" in rejection(client.post("/lti/launch", data=forged_state))
    assert count_rows(app, LtiNonce) == 0


def test_a_link_naming_no_exercise_is_refused(client, platform, lms):
    assert "does not name an exercise" in rejection(lti_launch(client, platform))
    assert "not published" in rejection(lti_launch(client, platform, custom={"exercise": "no-such-exercise"}))


def test_platform_key_rotation_is_followed_and_unknown_kids_do_not_hammer_the_platform(client, platform, lms,
                                                                                        monkeypatch):
    assert lti_launch(client, platform, custom={"exercise": QUIZ}).status_code == 200
    fetched = platform.jwks_requests
    assert lti_launch(client, platform, custom={"exercise": QUIZ}).status_code == 200
    assert platform.jwks_requests == fetched  # cached
    for _ in range(3):  # unknown kids within REFETCH_SECONDS of a fetch: refused without a fetch
        nonce, state = _nonce_and_state(lti_login(client, platform))
        rejection(client.post("/lti/launch", data={"id_token": platform.id_token(nonce=nonce, kid="forged"),
                                                   "state": state}))
    assert platform.jwks_requests == fetched
    platform.rotate_key()
    monkeypatch.setattr(type(platform_keys), "REFETCH_SECONDS", 0.0)
    assert lti_launch(client, platform, custom={"exercise": QUIZ}).status_code == 200
    assert platform.jwks_requests == fetched + 1


def test_tool_key_rotation_keeps_the_old_key_published_for_a_while(app, client, platform, lms, admin_key):
    old_kid = client.get("/lti/jwks").json["keys"][0]["kid"]
    rotated = client.post("/api/v1/admin/lti/keys/rotate", headers=bearer(admin_key))
    assert rotated.status_code == 201
    kids = [k["kid"] for k in client.get("/lti/jwks").json["keys"]]
    assert kids == [old_kid, rotated.json["kid"]]
    trust_tool_keys(client, platform)
    # The new key signs: the platform verifies a deep-linking response by its kid.
    picker = lti_launch(client, platform, message_type=c.DEEP_LINKING_REQUEST, roles=INSTRUCTOR_ROLES)
    token = html.unescape(re.search(r'name="picker" value="([^"]+)"', picker.get_data(as_text=True)).group(1))
    form = client.post("/lti/deep-link", data={"picker": token, "exercise": QUIZ}).get_data(as_text=True)
    response_jwt = html.unescape(re.search(r'name="JWT" value="([^"]+)"', form).group(1))
    assert platform.read_deep_linking_response(response_jwt)
    import jwt

    assert jwt.get_unverified_header(response_jwt)["kid"] == rotated.json["kid"]
    with app.app_context():  # once LTI_RETIRED_KEY_SECONDS have passed, the old key is gone
        retention = timedelta(seconds=app.config["SETTINGS"].lti_retired_key_seconds + 1)
        db_session().execute(LtiToolKey.__table__.update().where(LtiToolKey.kid == old_kid)
                             .values(retired_at=utcnow() - retention))
        db_session().commit()
    assert [k["kid"] for k in client.get("/lti/jwks").json["keys"]] == [rotated.json["kid"]]


def test_platform_registration_by_admins(client, platform, lms, admin_key, client_key):
    again = client.post("/api/v1/admin/lti/platforms", headers=bearer(admin_key),
                        json={"name": "Again", **platform.registration()})
    assert again.status_code == 409 and again.mimetype == "application/problem+json"
    bad = client.post("/api/v1/admin/lti/platforms", headers=bearer(admin_key),
                      json={"name": "Bad", **platform.registration(), "client_id": "x", "jwks_url": "not a url"})
    assert bad.status_code == 422 and any(e["field"] == "json.jwks_url" for e in bad.json["errors"])
    assert client.post("/api/v1/admin/lti/platforms", headers=bearer(client_key),
                       json={"name": "Mine", **platform.registration()}).status_code == 403
    assert client.get("/api/v1/admin/lti/platforms").status_code == 401
    patched = client.patch(f"/api/v1/admin/lti/platforms/{lms['id']}", headers=bearer(admin_key),
                           json={"deployment_ids": ["deployment-1", "deployment-2"]})
    assert patched.status_code == 200 and patched.json["deployment_ids"] == ["deployment-1", "deployment-2"]
    token = launch_handoff(lti_launch(client, platform, custom={"exercise": QUIZ}))["token"]
    assert client.delete(f"/api/v1/admin/lti/platforms/{lms['id']}", headers=bearer(admin_key)).status_code == 204
    assert "disabled" in rejection(client.get("/lti/login", query_string=platform.login_initiation(LAUNCH_URL)))
    assert client.get("/api/v1/learners/learner-1/attempts", headers=bearer(token)).status_code == 401


def test_cli_registers_a_platform(app, platform):
    result = app.test_cli_runner().invoke(args=[
        "lti", "add-platform", "--name", "Moodle", "--issuer", platform.issuer, "--client-id", "abc",
        "--deployment-id", "1", "--login-url", platform.login_url, "--token-url", platform.token_url,
        "--jwks-url", platform.jwks_url])
    assert result.exit_code == 0, result.output
    listed = app.test_cli_runner().invoke(args=["lti", "platforms"])
    assert "Moodle" in listed.output and "abc" in listed.output and "active" in listed.output


def test_a_link_added_by_hand_gets_its_line_item_found_or_made(app, client, platform, lms):
    # No lineitem claim: a link the instructor added without Deep Linking, custom exercise set by hand.
    token = launch_handoff(lti_launch(client, platform, custom={"exercise": QUIZ}, lineitem=None,
                             resource_link_id="hand-made"))["token"]
    for _ in range(2):
        assert client.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=bearer(token),
                           json={"answer": RIGHT}).status_code == 201
        passback_runner(app).run_once()
    made = [item for item in platform.lineitems if item.get("resourceLinkId") == "hand-made"]
    assert len(made) == 1 and made[0]["scoreMaximum"] == 100 and made[0]["resourceId"] == QUIZ
    assert [s["lineitem"] for s in platform.scores] == [made[0]["id"]] * 2  # the second found it


def test_passbacks_wait_in_the_database_until_a_runner_process_sends_them(app, client, platform, lms,
                                                                          database_url):
    token = launch_handoff(lti_launch(client, platform, custom={"exercise": QUIZ}))["token"]
    assert client.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=bearer(token),
                       json={"answer": RIGHT}).status_code == 201
    assert platform.scores == []  # nothing is sent on the request's path
    env = {**os.environ, "DATABASE_URL": database_url, "ENV": "testing"}
    runner = subprocess.Popen([sys.executable, "-m", "flask", "--app", "wsgi", "outbound"], cwd=PROJECT_ROOT,
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not platform.scores and time.monotonic() < deadline and runner.poll() is None:
            time.sleep(0.05)
    finally:
        runner.terminate()
        _, stderr = runner.communicate(timeout=30)
    assert runner.returncode == 0, stderr[-2000:]
    assert [s["body"]["userId"] for s in platform.scores] == ["learner-1"]
    assert "Bearer" not in stderr  # the access token never reaches the log


def test_an_instructors_override_goes_to_the_gradebook_too(app, client, platform, lms, admin_key):
    token = launch_handoff(lti_launch(client, platform, custom={"exercise": QUIZ}))["token"]
    attempt = client.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=bearer(token), json={"answer": RIGHT}).json
    runner = passback_runner(app)
    runner.run_once()
    overridden = client.post(f"/api/v1/admin/attempts/{attempt['id']}/override", headers=bearer(admin_key),
                             json={"score": 0.5, "reason": "Copied from a classmate's submission."})
    assert overridden.status_code == 201, overridden.json
    runner.run_once()
    assert [s["body"]["scoreGiven"] for s in platform.scores] == [100, 50]
    # The reason is staff's: with no comment for the learner, the score goes alone.
    assert "comment" not in platform.scores[-1]["body"]
    assert "classmate" not in json.dumps(platform.scores)


def test_a_launch_of_one_course_reads_nothing_of_another_course_of_the_same_platform(app, client, platform, lms):
    """Issue 18's leak: a platform's courses share one API client. An instructor's launch in course
    c1 must not read, through any route a launch's token reaches, the attempts a learner made in
    course c2 at the same exercise; nor may that learner's own launch from c1 read them."""
    # bea is enrolled in both courses (the platform's sub is the same in every course of it).
    in_c2 = launch_handoff(lti_launch(client, platform, custom={"exercise": QUIZ}, sub="bea", resource_link_id="link-c2",
                             overrides=context_claim("c2")))["token"]
    b_attempt = client.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=bearer(in_c2) | {"Idempotency-Key": "k-1"},
                            json={"answer": RIGHT})
    assert b_attempt.status_code == 201, b_attempt.json
    b_id = b_attempt.json["id"]
    c2_teacher = launch_handoff(lti_launch(client, platform, custom={"exercise": QUIZ}, sub="prof-2", roles=INSTRUCTOR_ROLES,
                                  resource_link_id="link-c2", overrides=context_claim("c2")))["token"]
    # The same course (any of its links) sees it: the instructor's launch through another link of c2 too.
    c2_other_link = launch_handoff(lti_launch(client, platform, custom={"exercise": QUIZ}, sub="prof-2", roles=INSTRUCTOR_ROLES,
                                     resource_link_id="link-c2-week-2", overrides=context_claim("c2")))["token"]
    for token in (in_c2, c2_teacher, c2_other_link):
        assert client.get(f"/api/v1/attempts/{b_id}", headers=bearer(token)).status_code == 200
        history = client.get("/api/v1/learners/bea/attempts", headers=bearer(token)).json
        assert [a["id"] for a in history["attempts"]] == [b_id]
        assert [s["attempts"] for s in history["best_scores"]] == [1]

    c1_teacher = launch_handoff(lti_launch(client, platform, custom={"exercise": QUIZ}, sub="prof-1", roles=INSTRUCTOR_ROLES,
                                  resource_link_id="link-c1"))
    assert c1_teacher["role"] == "instructor"
    in_c1 = launch_handoff(lti_launch(client, platform, custom={"exercise": QUIZ}, sub="bea", resource_link_id="link-c1"))
    for token in (c1_teacher["token"], in_c1["token"]):
        detail = client.get(f"/api/v1/attempts/{b_id}", headers=bearer(token))
        assert detail.status_code == 404 and detail.mimetype == "application/problem+json", detail.json
        assert client.get(f"/api/v1/attempts/{b_id}?wait=1", headers=bearer(token)).status_code == 404
        for query in ({}, {"exercise": QUIZ}):
            history = client.get("/api/v1/learners/bea/attempts", headers=bearer(token), query_string=query)
            assert history.status_code == 200, history.json
            assert history.json["attempts"] == [] and history.json["best_scores"] == [], history.json
            assert b_id not in history.get_data(as_text=True)

    # Course c1 keeps its own: bea's attempt there, read by her and by c1's instructor, not by c2's.
    a_attempt = client.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=bearer(in_c1["token"]),
                            json={"answer": WRONG}).json["id"]
    for token in (c1_teacher["token"], in_c1["token"]):
        assert client.get(f"/api/v1/attempts/{a_attempt}", headers=bearer(token)).status_code == 200
        history = client.get("/api/v1/learners/bea/attempts", headers=bearer(token)).json
        assert [a["id"] for a in history["attempts"]] == [a_attempt]
        assert [(s["attempts"], s["best_score"]) for s in history["best_scores"]] == [(1, 0.0)]
    for token in (in_c2, c2_teacher):
        assert client.get(f"/api/v1/attempts/{a_attempt}", headers=bearer(token)).status_code == 404
        assert [a["id"] for a in client.get("/api/v1/learners/bea/attempts",
                                            headers=bearer(token)).json["attempts"]] == [b_id]

    # A retry's Idempotency-Key is the learner's in one course: the same key from c1 makes c1's attempt.
    again = client.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=bearer(in_c1["token"]) | {"Idempotency-Key": "k-1"},
                        json={"answer": RIGHT})
    assert again.status_code == 201 and "Idempotent-Replayed" not in again.headers and again.json["id"] != b_id

    # An instructor's try-out belongs to no course (it sends no grade): its instructor reads it from
    # any launch, no other instructor does.
    tried = client.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=bearer(c1_teacher["token"]),
                        json={"answer": RIGHT}).json["id"]
    assert client.get(f"/api/v1/attempts/{tried}", headers=bearer(c1_teacher["token"])).status_code == 200
    assert [a["id"] for a in client.get("/api/v1/learners/prof-1/attempts",
                                        headers=bearer(c1_teacher["token"])).json["attempts"]] == [tried]
    assert client.get(f"/api/v1/attempts/{tried}", headers=bearer(c2_teacher)).status_code == 404
    assert client.get("/api/v1/learners/prof-1/attempts", headers=bearer(c2_teacher)).json["attempts"] == []


def test_a_link_launched_without_a_context_is_a_course_of_its_own(app, client, platform, lms):
    """The context claim is optional: links whose launches carry none are not one shared course."""
    learner = launch_handoff(lti_launch(client, platform, custom={"exercise": QUIZ}, sub="cy", resource_link_id="lone-1",
                               remove=(c.CONTEXT,)))["token"]
    attempt = client.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=bearer(learner), json={"answer": RIGHT})
    assert attempt.status_code == 201, attempt.json
    same_link = launch_handoff(lti_launch(client, platform, custom={"exercise": QUIZ}, sub="prof", roles=INSTRUCTOR_ROLES,
                                 resource_link_id="lone-1", remove=(c.CONTEXT,)))["token"]
    assert client.get(f"/api/v1/attempts/{attempt.json['id']}", headers=bearer(same_link)).status_code == 200
    for link, claims in (("lone-2", {"remove": (c.CONTEXT,)}), ("link-1", {})):
        other = launch_handoff(lti_launch(client, platform, custom={"exercise": QUIZ}, sub="prof", roles=INSTRUCTOR_ROLES,
                                 resource_link_id=link, **claims))["token"]
        assert client.get(f"/api/v1/attempts/{attempt.json['id']}", headers=bearer(other)).status_code == 404
        assert client.get("/api/v1/learners/cy/attempts", headers=bearer(other)).json["attempts"] == []


# -- what a score carries (docs/lti.md, "What a score carries") -----------------------------------

def test_a_score_sent_hours_late_and_retried_says_when_the_learner_submitted(app, client, platform, lms):
    token = launch_handoff(lti_launch(client, platform, custom={"exercise": QUIZ}))["token"]
    attempt = client.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=bearer(token), json={"answer": RIGHT}).json
    submitted, graded = submitted_hours_ago(app, attempt["id"], 3)
    delivered_after_one_failure(app, platform)
    # The retry, three hours after the learner submitted: their submission time, the grade's time,
    # and the LMS's first submission of this attempt (the refused try made none).
    assert [s["body"] for s in platform.scores] == [expected_score("learner-1", 100, graded, submitted, True)]
    assert graded == submitted  # a quiz is graded as it is submitted
    assert platform.submissions == [{"lineitem": platform.lineitem_url(), "userId": "learner-1",
                                     "submitted_at": submitted}]


def test_a_regrade_and_an_override_move_the_timestamp_and_keep_the_submission(app, client, platform, lms,
                                                                              admin_key):
    token = launch_handoff(lti_launch(client, platform, custom={"exercise": QUIZ}))["token"]
    attempt = client.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=bearer(token), json={"answer": RIGHT}).json
    submitted, graded = submitted_hours_ago(app, attempt["id"], 5)
    runner = passback_runner(app)
    runner.run_once()
    with app.app_context():  # a regrade two hours later halves the grader's score, as regrades.py writes it
        session = db_session()
        row = session.get(Attempt, uuid.UUID(attempt["id"]))
        previous = progress.grade_snapshot(row)
        row.score = row.grader_score = 0.5
        regraded_at = utcnow() - timedelta(hours=3)
        record_attempt_event(session, attempt_id=row.id, client_id=row.client_id, lti_link_id=row.lti_link_id,
                             type=REGRADED_EVENT, at=regraded_at, previous=previous, attempt=row,
                             data={"status": row.status, "score": row.score, "correct": row.correct})
        session.commit()
    runner.run_once()
    comment = "Partial credit: the second gradient was right."
    overridden = client.post(f"/api/v1/admin/attempts/{attempt['id']}/override", headers=bearer(admin_key),
                             json={"score": 0.75, "reason": "Checked by hand after the forum thread.",
                                   "learner_comment": comment})
    assert overridden.status_code == 201, overridden.json
    runner.run_once()
    with app.app_context():
        override_at = db_session().scalar(select(AttemptEvent.created_at).where(
            AttemptEvent.attempt_id == uuid.UUID(attempt["id"]), AttemptEvent.type == OVERRIDDEN_EVENT))
    assert [s["body"] for s in platform.scores] == [
        expected_score("learner-1", 100, graded, submitted, True),
        expected_score("learner-1", 50, iso_millis(regraded_at), submitted, False),
        expected_score("learner-1", 75, iso_millis(override_at), submitted, False, comment=comment),
    ]
    assert len(platform.submissions) == 1 and platform.rejected == []


def test_an_older_score_after_a_newer_one_is_superseded_and_timestamps_never_go_back(app, client, platform, lms):
    token = launch_handoff(lti_launch(client, platform, custom={"exercise": QUIZ}))["token"]
    runner = passback_runner(app)
    first = client.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=bearer(token), json={"answer": RIGHT}).json
    with app.app_context():  # the first one's passback waits in its backoff
        db_session().execute(ScorePassback.__table__.update().values(next_attempt_at=utcnow() + timedelta(hours=1)))
        db_session().commit()
    second = client.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=bearer(token), json={"answer": WRONG}).json
    assert runner.run_once() == 1
    assert [s["body"]["scoreGiven"] for s in platform.scores] == [100]  # best: the first attempt's
    newest = platform.scores[-1]["body"]["timestamp"]
    make_passbacks_due(app)
    assert runner.run_once() == 1
    assert len(platform.scores) == 1  # the LMS has this score already, with a newer timestamp
    with app.app_context():
        superseded = db_session().scalar(select(ScorePassback).where(ScorePassback.attempt_id == uuid.UUID(first["id"])))
        assert superseded.status == "delivered" and superseded.sent_score is None
        assert superseded.last_error.startswith("superseded")
    # A third attempt graded by a process whose clock is an hour behind: its timestamp is not
    # older than the one the LMS has (which would refuse it).
    third = client.post(f"/api/v1/exercises/{QUIZ}/attempts", headers=bearer(token), json={"answer": RIGHT}).json
    submitted_hours_ago(app, third["id"], 1)
    assert runner.run_once() == 1
    stamps = [s["body"]["timestamp"] for s in platform.scores]
    assert stamps == [newest, newest] and platform.rejected == []
    assert second["id"] != third["id"]


def test_an_lti_launch_prepares_a_learners_variant_not_an_instructors(app, client, registered_platform):
    lti_launch(client, registered_platform, custom={"exercise": "clamp-function"}, sub="student-1")
    lti_launch(client, registered_platform, custom={"exercise": "clamp-function"}, sub="teacher-1", roles=INSTRUCTOR_ROLES)
    launch_handoff(lti_launch(client, registered_platform, custom={"exercise": QUIZ}, sub="student-2"))
    with app.app_context():
        prepared = db_session().scalars(select(VariantPreparation)).all()
    # One for the learner of the code exercise: an instructor does not submit, a quiz needs none.
    assert [(p.learner, p.status) for p in prepared] == [("student-1", "queued")]
