"""The test platform, and its registration with the tool, for every LTI test."""

from __future__ import annotations

import pytest

from service.lti.platforms import platform_keys
from service.lti.tokens import access_tokens
from tests.helpers import bearer

from .platform import TestPlatform
from .support import trust_tool_keys


@pytest.fixture
def platform():
    with TestPlatform() as running:
        yield running
    # The tool keeps tokens per process by token URL and client id: a later test's platform may
    # get this one's port, and refuse (401) a token it never issued.
    access_tokens.forget(running.token_url, running.client_id)


@pytest.fixture
def registration(app, client, platform, admin_key) -> dict:
    """The test platform registered with the tool (the platform's row), trusting the tool's current JWKS."""
    response = client.post("/api/v1/admin/lti/platforms", headers=bearer(admin_key),
                           json={"name": "Test LMS", **platform.registration()})
    assert response.status_code == 201, response.json
    trust_tool_keys(client, platform)
    platform_keys.forget(response.json["id"])
    return response.json


@pytest.fixture
def lms(registration):
    """The test platform's registration with the tool (a module may name `lms` what it needs of it)."""
    return registration


@pytest.fixture
def registered_platform(registration, platform) -> TestPlatform:
    """The test platform, registered with the tool."""
    return platform
