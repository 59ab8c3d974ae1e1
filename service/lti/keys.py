"""The tool's RSA key pairs: made on first use, rotated on request, published as a JWKS.

The newest unretired key signs the tool's JWTs (deep-linking responses, AGS client
assertions). A rotated-out key stays in the JWKS for LTI_RETIRED_KEY_SECONDS, so a platform
that cached the old JWKS, or holds a JWT the old key signed, can still verify it.
"""

from __future__ import annotations

import secrets
import time
import uuid
from datetime import timedelta
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from ..config import Settings
from ..models import LtiToolKey
from ..models.base import utcnow
from ..sealing import open_sealed, seal

KEY_BITS = 2048
SIGNED_JWT_SECONDS = 300


def _new_key(settings: Settings) -> LtiToolKey:
    private_key = rsa.generate_private_key(public_exponent=65537, key_size=KEY_BITS)
    kid = secrets.token_urlsafe(12)
    jwk = jwt.algorithms.RSAAlgorithm.to_jwk(private_key.public_key(), as_dict=True)
    pem = private_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
    return LtiToolKey(kid=kid, sealed_private_key=seal(settings.secret_key, pem),
                      public_jwk={**jwk, "kid": kid, "alg": "RS256", "use": "sig"}, created_at=utcnow())


def signing_key(session: Session, settings: Settings) -> LtiToolKey:
    """The key that signs now; made (and committed) on first use."""
    key = session.scalar(select(LtiToolKey).where(LtiToolKey.retired_at.is_(None)).order_by(LtiToolKey.id.desc()))
    if key is not None:
        return key
    # Two first uses at once make two keys: both are published, and the newer one signs.
    key = _new_key(settings)
    session.add(key)
    session.commit()
    return key


def rotate(session: Session, settings: Settings) -> LtiToolKey:
    """A new signing key; the previous ones are retired (still published for a while)."""
    now = utcnow()
    for key in session.scalars(select(LtiToolKey).where(LtiToolKey.retired_at.is_(None))):
        key.retired_at = now
    key = _new_key(settings)
    session.add(key)
    session.commit()
    return key


def published_keys(session: Session, settings: Settings) -> list[LtiToolKey]:
    retired_since = utcnow() - timedelta(seconds=settings.lti_retired_key_seconds)
    return list(session.scalars(select(LtiToolKey).where(
        or_(LtiToolKey.retired_at.is_(None), LtiToolKey.retired_at > retired_since)).order_by(LtiToolKey.id)))


def jwks(session: Session, settings: Settings) -> dict[str, Any]:
    signing_key(session, settings)  # a platform may fetch the JWKS before any launch
    return {"keys": [key.public_jwk for key in published_keys(session, settings)]}


def sign(session: Session, settings: Settings, claims: dict[str, Any]) -> str:
    """A JWT signed RS256 with the signing key, valid for SIGNED_JWT_SECONDS, with a fresh jti."""
    key = signing_key(session, settings)
    now = int(time.time())
    private_pem = open_sealed(settings.secret_key, key.sealed_private_key)
    payload = {"iat": now, "exp": now + SIGNED_JWT_SECONDS, "jti": str(uuid.uuid4()), **claims}
    return jwt.encode(payload, private_pem, algorithm="RS256", headers={"kid": key.kid})
