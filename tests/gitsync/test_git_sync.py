"""A course synced from a git repository served on loopback by `git http-backend`, as the workers'
supervisor runs it: fetched with the deploy token, each folder read and saved, proven, published;
a pushed fix republished, a broken push leaving the last version live, a removed folder
unpublished, a revert publishing the old version again. The token never shows in a log or a record."""

from __future__ import annotations

import base64
import json
import logging
import os
import threading
import time
from datetime import timedelta

import pytest
from sqlalchemy import select, update

from service.config import Settings
from service.extensions import db_session
from service.gitsync.sync import GitSyncer
from service.jobs.dispatch import DatabaseDispatcher
from service.models import Exercise, ExerciseProof, ExerciseVersion, GitSync
from service.models.base import utcnow
from tests.gitsync.support import DEPLOY_TOKEN, EXERCISES, GIT_HOST, signed
from tests.helpers import bearer

QUIZ = "backward-none-for-bounds"  # a single-choice quiz of the catalog: proven at once, no sandbox
TAKEN = "backward-none-fill-blank"  # a slug of the catalog


def _configure(app, course, url: str, token: str | None = DEPLOY_TOKEN, **body) -> dict:
    response = app.test_client().put(f"/api/v1/courses/{course.course_id}/git", headers=bearer(course.key),
                                     json={"url": url, "token": token, **body})
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def _sync_now(app, course, syncer) -> dict:
    """Sync now, the syncer runs it (as its thread would), the record as staff read it."""
    queued = app.test_client().post(f"/api/v1/courses/{course.course_id}/git/sync", headers=bearer(course.key))
    assert queued.status_code == 202
    assert syncer.run_once() == 1
    return _last_sync(app, course)


def _last_sync(app, course) -> dict:
    response = app.test_client().get(f"/api/v1/courses/{course.course_id}/git/syncs", headers=bearer(course.key))
    assert response.status_code == 200
    return response.get_json()[0]


def _outcomes(sync: dict) -> dict[str, tuple[str, int | None]]:
    return {e["slug"]: (e["outcome"], e["version"]) for e in sync["exercises"]}


def _exercise(app, slug: str) -> tuple[Exercise, list[ExerciseVersion]]:
    with app.app_context():
        exercise = db_session().scalar(select(Exercise).where(Exercise.slug == slug))
        versions = list(db_session().scalars(select(ExerciseVersion).where(ExerciseVersion.exercise_id == exercise.id)
                                             .order_by(ExerciseVersion.number)))
        return exercise, versions


def test_a_sync_publishes_the_valid_exercises_and_says_what_is_wrong_with_each_other(
        app, course, git_server, repository, syncer, caplog):
    caplog.set_level(logging.DEBUG)
    repository.copy_exercise(EXERCISES / QUIZ, "exercises", "bounds-quiz")
    repository.copy_exercise(EXERCISES / QUIZ, "exercises", TAKEN)
    repository.copy_exercise(EXERCISES / QUIZ, "exercises", "linked-quiz")
    (repository.work / "exercises/linked-quiz/secret.txt").symlink_to("/etc/passwd")
    repository.copy_exercise(EXERCISES / QUIZ, "exercises", "typo-quiz")
    spec = (repository.work / "exercises/typo-quiz/exercise.toml").read_text()
    repository.write("exercises/typo-quiz/exercise.toml", spec.replace("difficulty = 2", "dificulty = 2"))
    repository.write("README.md", "Our course's exercises.\n")
    commit = repository.push("the course's first exercises")
    _configure(app, course, git_server.url("course"), path="exercises")

    sync = _sync_now(app, course, syncer)
    assert sync["status"] == "done" and sync["commit"] == commit and sync["error"] is None
    outcomes = _outcomes(sync)
    assert outcomes == {"bounds-quiz": ("published", 1), TAKEN: ("invalid", None), "linked-quiz": ("invalid", None),
                        "typo-quiz": ("invalid", None)}
    problems = {e["slug"]: e["problems"] for e in sync["exercises"]}
    assert "taken" in problems[TAKEN][0]["message"]
    assert problems["linked-quiz"][0]["file"] == "secret.txt"  # in the folder, as a proof names files
    assert "symbolic link" in problems["linked-quiz"][0]["message"]
    assert any("dificulty" in p["field"] or "difficulty" in p["field"] for p in problems["typo-quiz"])

    exercise, versions = _exercise(app, "bounds-quiz")
    assert exercise.course_id == course.course_id and exercise.published and exercise.current_version == 1
    assert [(v.source, v.note, v.proof_status) for v in versions] == [("git", f"git {commit}", "passed")]
    catalog, _ = _exercise(app, TAKEN)
    assert catalog.course_id is None  # the catalog's exercise is untouched

    # The token went to the git server, in a header, and nowhere else.
    assert git_server.authorizations
    assert all(base64.b64decode(a.removeprefix("Basic ")).decode().endswith(":" + DEPLOY_TOKEN)
               for a in git_server.authorizations)
    assert DEPLOY_TOKEN not in caplog.text and DEPLOY_TOKEN not in json.dumps(sync)
    assert DEPLOY_TOKEN not in repr([vars(r) for r in caplog.records])

    # Nothing pushed since: unchanged. The folder removed: unpublished. Put back: the same version, live again.
    repository.push("nothing changed")
    assert _outcomes(_sync_now(app, course, syncer))["bounds-quiz"] == ("unchanged", 1)
    repository.remove("exercises/bounds-quiz")
    repository.push("bounds-quiz retired")
    assert _outcomes(_sync_now(app, course, syncer))["bounds-quiz"] == ("removed", 1)
    assert not _exercise(app, "bounds-quiz")[0].published
    repository.copy_exercise(EXERCISES / QUIZ, "exercises", "bounds-quiz")
    repository.push("bounds-quiz is back")
    assert _outcomes(_sync_now(app, course, syncer))["bounds-quiz"] == ("published", 1)
    exercise, versions = _exercise(app, "bounds-quiz")
    assert exercise.published and len(versions) == 1


def test_a_wrong_token_fails_the_sync_and_says_so_without_the_token(app, course, git_server, repository, syncer,
                                                                    caplog):
    caplog.set_level(logging.DEBUG)
    repository.copy_exercise(EXERCISES / QUIZ, "", "bounds-quiz")
    repository.push("first")
    wrong = "wrong-token-" + DEPLOY_TOKEN[::-1]
    _configure(app, course, git_server.url("course"), token=wrong)
    sync = _sync_now(app, course, syncer)
    assert sync["status"] == "failed" and sync["exercises"] == []
    assert "deploy token" in sync["error"]
    assert wrong not in json.dumps(sync) and wrong not in caplog.text


def test_a_missing_branch_fails_the_sync_naming_it(app, course, git_server, repository, syncer):
    repository.copy_exercise(EXERCISES / QUIZ, "", "bounds-quiz")
    repository.push("first")
    _configure(app, course, git_server.url("course"), branch="spring-term")
    sync = _sync_now(app, course, syncer)
    assert sync["status"] == "failed" and "spring-term" in sync["error"]


def test_a_host_no_longer_allowed_is_refused_before_git_runs(app, course, git_server, repository, database_url):
    repository.copy_exercise(EXERCISES / QUIZ, "", "bounds-quiz")
    repository.push("first")
    _configure(app, course, git_server.url("course"))
    elsewhere = GitSyncer(Settings.from_env({}, database_url=database_url, env="testing",
                                            git_allowed_hosts=("git.example.edu",)), DatabaseDispatcher())
    sync = _sync_now(app, course, elsewhere)
    assert sync["status"] == "failed"
    assert sync["error"] == ("The host 127.0.0.1 is not one this server may sync from (allowed: git.example.edu).")
    assert git_server.authorizations == []  # nothing reached the server


def test_an_address_the_outbound_policy_refuses_is_refused_before_git_runs(app, course, git_server, repository,
                                                                           database_url):
    repository.copy_exercise(EXERCISES / QUIZ, "", "bounds-quiz")
    repository.push("first")
    _configure(app, course, git_server.url("course"))
    public_only = GitSyncer(Settings.from_env({}, database_url=database_url, env="testing",
                                              git_allowed_hosts=(GIT_HOST,), outbound_allowed_networks=()),
                            DatabaseDispatcher())
    sync = _sync_now(app, course, public_only)
    assert sync["status"] == "failed" and sync["error"].startswith("The repository's host is refused")
    assert git_server.authorizations == []


def test_a_repository_past_the_size_cap_is_cut_off(app, course, git_server, repository, database_url):
    repository.copy_exercise(EXERCISES / QUIZ, "", "bounds-quiz")
    repository.write("data/noise.bin", os.urandom(300_000).hex())  # incompressible
    repository.push("a large file")
    _configure(app, course, git_server.url("course"))
    capped = GitSyncer(Settings.from_env({}, database_url=database_url, env="testing", git_allowed_hosts=(GIT_HOST,),
                                         git_sync_max_bytes=256 * 1024), DatabaseDispatcher())
    sync = _sync_now(app, course, capped)
    assert sync["status"] == "failed" and "more than 256 KiB" in sync["error"]
    assert not _exercises_of(app, course)


def test_a_fetch_past_its_deadline_is_stopped(app, course, git_server, repository, database_url):
    repository.copy_exercise(EXERCISES / QUIZ, "", "bounds-quiz")
    repository.push("first")
    _configure(app, course, git_server.url("course"))
    git_server.delay_seconds = 3.0
    hasty = GitSyncer(Settings.from_env({}, database_url=database_url, env="testing", git_allowed_hosts=(GIT_HOST,),
                                        git_sync_timeout_seconds=1), DatabaseDispatcher())
    started = time.monotonic()
    sync = _sync_now(app, course, hasty)
    assert time.monotonic() - started < 2.5
    assert sync["status"] == "failed" and sync["error"] == "Fetching the repository took longer than 1 s."
    assert not _exercises_of(app, course)


def _exercises_of(app, course) -> list[str]:
    with app.app_context():
        return list(db_session().scalars(select(Exercise.slug).where(Exercise.course_id == course.course_id)))


def _wait_for(app, course, slug: str, *, not_outcome: str = "proving", seconds: float = 120.0) -> dict:
    """The last sync's outcome for `slug` once its proof is done (the worker proves it)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        entry = next(e for e in _last_sync(app, course)["exercises"] if e["slug"] == slug)
        if entry["outcome"] != not_outcome:
            return entry
        time.sleep(0.2)
    raise AssertionError(f"{slug} still {not_outcome} after {seconds} s")


def _push_and_notify(app, course, repository, syncer, secret: str, message: str) -> str:
    commit = repository.push(message)
    body = json.dumps({"ref": "refs/heads/main", "after": commit}).encode()
    response = app.test_client().post(f"/api/v1/git-webhooks/{course.course_id}", data=body,
                                      headers=signed(secret, body))
    assert response.status_code == 202, response.get_json()
    assert syncer.run_once() == 1
    return commit


@pytest.mark.backends("postgresql")
def test_a_code_exercise_is_proven_published_fixed_by_a_push_and_a_broken_push_keeps_the_last_version(
        app, course, git_server, repository, syncer, worker):
    slug = "square-course"
    repository.copy_exercise(EXERCISES / "square-function", "", slug)
    repository.push("SquareFn")
    secret = _configure(app, course, git_server.url("course"))["webhook_secret"]
    first = _sync_now(app, course, syncer)
    assert _outcomes(first)[slug] == ("proving", 1)
    assert _wait_for(app, course, slug)["outcome"] == "published"
    exercise, _ = _exercise(app, slug)
    assert exercise.published and exercise.current_version == 1

    # A fix pushed (the prompt reworded), the host's signed webhook: version 2 proven and live.
    spec = (repository.work / slug / "exercise.toml").read_text()
    repository.write(f"{slug}/exercise.toml", spec.replace("elementwise", "element by element"))
    _push_and_notify(app, course, repository, syncer, secret, "clearer prompt")
    assert _outcomes(_last_sync(app, course))[slug] == ("proving", 2)
    assert _wait_for(app, course, slug)["outcome"] == "published"
    exercise, versions = _exercise(app, slug)
    assert exercise.published and exercise.current_version == 2 and versions[-1].published_at is not None

    # A broken reference pushed (backward forgets the factor 2): its proof fails, version 2 stays live.
    reference = (repository.work / slug / "reference.py").read_text()
    repository.write(f"{slug}/reference.py", reference.replace("grad_output * 2 * x", "grad_output * x"))
    _push_and_notify(app, course, repository, syncer, secret, "oops")
    failed = _wait_for(app, course, slug)
    assert failed["outcome"] == "proof_failed" and failed["version"] == 3 and failed["problems"]
    assert any(p["file"] == "reference.py" for p in failed["problems"]), failed["problems"]
    exercise, versions = _exercise(app, slug)
    assert exercise.published and exercise.current_version == 2 and versions[-1].proof_status == "failed"


def test_a_push_waits_for_the_proofs_of_the_last_sync(app, course, git_server, repository, syncer):
    repository.copy_exercise(EXERCISES / "square-function", "", "square-course")
    repository.push("SquareFn")
    _configure(app, course, git_server.url("course"))
    assert _outcomes(_sync_now(app, course, syncer))["square-course"] == ("proving", 1)  # no worker runs here
    queued = app.test_client().post(f"/api/v1/courses/{course.course_id}/git/sync", headers=bearer(course.key))
    assert queued.status_code == 202
    assert syncer.run_once() == 0  # its proof is still queued
    with app.app_context():
        db_session().execute(update(ExerciseProof).values(status="done"))
        db_session().commit()
    assert syncer.run_once() == 1


def test_the_syncer_thread_runs_what_is_queued_and_a_lease_keeps_one_sync_per_course(app, course, git_server,
                                                                                     repository, syncer):
    repository.copy_exercise(EXERCISES / QUIZ, "", "bounds-quiz")
    repository.push("first")
    _configure(app, course, git_server.url("course"))
    with app.app_context():
        # A sync of the course running elsewhere, its lease alive: the queued one waits for it.
        now = utcnow()
        db_session().add(GitSync(course_id=course.course_id, requested_by="another syncer", status="running",
                                 started_at=now, lease_until=now + timedelta(minutes=5), exercises=[]))
        db_session().commit()
    queued = app.test_client().post(f"/api/v1/courses/{course.course_id}/git/sync", headers=bearer(course.key))
    assert syncer.claim(utcnow()) is None
    with app.app_context():
        # That syncer died: past its lease, its sync is taken again, then the queued one.
        db_session().execute(update(GitSync).where(GitSync.status == "running")
                             .values(lease_until=utcnow() - timedelta(seconds=1)))
        db_session().commit()
    stop = threading.Event()
    thread = syncer.start_thread(stop)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and _last_sync(app, course)["status"] != "done":
            time.sleep(0.1)
    finally:
        stop.set()
        thread.join(timeout=30)
    syncs = app.test_client().get(f"/api/v1/courses/{course.course_id}/git/syncs", headers=bearer(course.key)).get_json()
    assert [(s["id"] == queued.get_json()["id"], s["status"]) for s in syncs] == [(True, "done"), (False, "done")]
    assert _outcomes(syncs[0])["bounds-quiz"] == ("unchanged", 1)  # the retaken sync published it first
