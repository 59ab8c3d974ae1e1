"""Secrets the service must read back (webhook signing secrets, the LTI tool's private keys),
stored encrypted with a key derived from SECRET_KEY.

API keys are stored as hashes; these cannot be, because signing needs the secret itself. A
database dump alone then reveals none of them. Changing SECRET_KEY makes them unreadable:
rotate the LTI key and re-create webhook endpoints after such a change.
"""

from __future__ import annotations

import base64

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

__all__ = ["InvalidToken", "open_sealed", "seal"]


def _fernet(secret_key: str) -> Fernet:
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"gradquiz sealed secrets").derive(
        secret_key.encode())
    return Fernet(base64.urlsafe_b64encode(key))


def seal(secret_key: str, plaintext: bytes) -> str:
    return _fernet(secret_key).encrypt(plaintext).decode()


def open_sealed(secret_key: str, sealed: str) -> bytes:
    """The plaintext; InvalidToken if it was sealed with another SECRET_KEY or altered."""
    return _fernet(secret_key).decrypt(sealed.encode())
