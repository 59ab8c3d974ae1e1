"""Fixtures of the git sync's tests: an app that may sync from 127.0.0.1, a course and its staff
key, a git server on loopback (git http-backend) asking for a deploy token, the syncer."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from service.auth import create_client
from service.config import Settings
from service.extensions import db_session
from service.gitsync.sync import GitSyncer
from service.jobs.dispatch import dispatcher_for
from service.models import Course, Role
from service.services.courses import make_key
from tests.git_server import GitServer, Repository
from tests.gitsync.support import DEPLOY_TOKEN, GIT_HOST, CourseStaff


@pytest.fixture
def bare_app(make_app):
    """Every app of these tests may sync from the loopback git server (`app` builds on it)."""
    return make_app(git_allowed_hosts=(GIT_HOST,))


@pytest.fixture
def course(app) -> CourseStaff:
    with app.app_context():
        session = db_session()
        client, _client_key = create_client(session, "lms-git", Role.CLIENT)
        row = Course(client_id=client.id, external_id="course-git", title="Autograd, the git way")
        session.add(row)
        session.flush()
        _key, key = make_key(session, row, "tests", "tests")
        session.commit()
        return CourseStaff(row.id, key)


@pytest.fixture
def git_server(tmp_path) -> Iterator[GitServer]:
    with GitServer(tmp_path / "served", token=DEPLOY_TOKEN) as server:
        yield server


@pytest.fixture
def repository(git_server, tmp_path) -> Repository:
    """The course's repository on the server, empty, its working copy in tmp_path."""
    return git_server.repository("course", tmp_path / "work")


@pytest.fixture
def syncer(database_url) -> GitSyncer:
    """The supervisor's git syncer on the test database (run_once runs what is queued)."""
    settings = Settings.from_env({}, database_url=database_url, env="testing", git_allowed_hosts=(GIT_HOST,))
    return GitSyncer(settings, dispatcher_for(settings))
