"""Platforms (LMSs) an admin registers, and the platform JWKS each launch is verified against."""

from __future__ import annotations

import json
import secrets
import threading
import time
from dataclasses import dataclass, replace
from typing import Any

import jwt
from sqlalchemy import select
from sqlalchemy.orm import Session

from ..auth import create_client
from ..models import LtiPlatform, Role
from ..models.base import utcnow
from ..outbound.http import HttpError, OutboundPolicy, send

PLATFORM_FIELDS = ("name", "issuer", "client_id", "deployment_ids", "auth_login_url", "auth_token_url", "jwks_url")


class PlatformExists(Exception):
    pass


def register(session: Session, values: dict[str, Any], *, approved: bool = True) -> LtiPlatform:
    """A new platform, with the API client its learners' attempts belong to (it has no usable
    key: a platform reaches the API only through its launches' learner tokens). Not `approved`:
    pending, refused at login until an admin approves it."""
    if find(session, values["issuer"], values["client_id"]) is not None:
        raise PlatformExists(f"{values['issuer']} with client id {values['client_id']} is already registered")
    client, _unused_key = create_client(session, f"lti:{values['name']}:{secrets.token_hex(3)}", Role.CLIENT)
    now = utcnow()
    platform = LtiPlatform(**{name: values[name] for name in PLATFORM_FIELDS}, api_client=client,
                           created_at=now, approved_at=now if approved else None)
    session.add(platform)
    session.flush()
    return platform


def update(platform: LtiPlatform, values: dict[str, Any]) -> None:
    for name in PLATFORM_FIELDS:
        if name in values and name not in ("issuer", "client_id"):
            setattr(platform, name, values[name])
    platform_keys.forget(platform.id)


def approve(platform: LtiPlatform) -> None:
    """A pending platform may launch from now on (an approved one stays as it is)."""
    if platform.approved_at is None:
        platform.approved_at = utcnow()


def disable(platform: LtiPlatform) -> None:
    """No more launches or score passbacks; its learners' attempts stay."""
    platform.disabled_at = utcnow()
    platform.api_client.revoked_at = platform.disabled_at  # its learner tokens stop working too


def find(session: Session, issuer: str, client_id: str) -> LtiPlatform | None:
    return session.scalar(select(LtiPlatform).where(LtiPlatform.issuer == issuer, LtiPlatform.client_id == client_id))


class UnknownKey(Exception):
    pass


@dataclass
class _CachedKeys:
    jwks_url: str
    keys: dict[str, jwt.PyJWK]
    fetched_at: float


class PlatformKeys:
    """The platforms' signing keys, fetched from their JWKS URLs and cached per process.

    An id_token signed with a kid not in the cache makes one refetch (the platform rotated its
    key), at most once per REFETCH_SECONDS per platform, so forged kids cannot make the service
    hammer a platform."""

    CACHE_SECONDS = 3600
    REFETCH_SECONDS = 10.0
    TIMEOUT_SECONDS = 5

    def __init__(self) -> None:
        self._cache: dict[int, _CachedKeys] = {}
        self._lock = threading.Lock()

    def key(self, platform: LtiPlatform, kid: str, policy: OutboundPolicy) -> jwt.PyJWK:
        with self._lock:
            cached = self._cache.get(platform.id)
        now = time.monotonic()
        fresh = (cached is not None and cached.jwks_url == platform.jwks_url
                 and now - cached.fetched_at < self.CACHE_SECONDS)
        if fresh and cached is not None:
            if kid in cached.keys:
                return cached.keys[kid]
            if now - cached.fetched_at < self.REFETCH_SECONDS:
                raise UnknownKey(f"the platform's JWKS has no key {kid!r}")
        cached = self._fetch(platform, policy)
        if kid not in cached.keys:
            raise UnknownKey(f"the platform's JWKS has no key {kid!r}")
        return cached.keys[kid]

    def _fetch(self, platform: LtiPlatform, policy: OutboundPolicy) -> _CachedKeys:
        try:
            response = send("GET", platform.jwks_url, replace(policy, deadline_seconds=min(
                policy.deadline_seconds, self.TIMEOUT_SECONDS)), headers={"Accept": "application/json"})
            if not response.ok:
                raise UnknownKey(f"the platform's JWKS URL answered {response.status}")
            keys = jwt.PyJWKSet.from_dict(json.loads(response.body)).keys
        except (HttpError, ValueError, jwt.PyJWKSetError) as exc:
            raise UnknownKey(f"the platform's JWKS could not be read: {exc}") from None
        cached = _CachedKeys(platform.jwks_url, {k.key_id: k for k in keys if k.key_id}, time.monotonic())
        with self._lock:
            self._cache[platform.id] = cached
        return cached

    def forget(self, platform_id: int) -> None:
        with self._lock:
            self._cache.pop(platform_id, None)


platform_keys = PlatformKeys()
