"""API clients: LMS integrations, frontends and admins, each with a hashed key."""

from __future__ import annotations

import enum
from datetime import datetime

from sqlalchemy import String
from sqlalchemy.orm import Mapped, mapped_column

from .base import Base, utcnow


class Role(str, enum.Enum):
    CLIENT = "client"
    # Reads every attempt, statistics and exports; regrades, overrides, publishes exercises.
    INSTRUCTOR = "instructor"
    # All an instructor may, and the service's own setup: LTI platforms, keys, failed jobs.
    ADMIN = "admin"


class ApiClient(Base):
    __tablename__ = "api_clients"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    role: Mapped[str] = mapped_column(String(16))
    # SHA-256 of the whole key: keys are 256-bit random, so a slow hash would add nothing.
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    # The key's first characters, safe to show, so an operator can tell keys apart.
    key_prefix: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    revoked_at: Mapped[datetime | None]

    @property
    def is_admin(self) -> bool:
        return self.role == Role.ADMIN.value

    @property
    def is_staff(self) -> bool:
        """An instructor or an admin: may use the grading dashboard's API."""
        return self.role in (Role.ADMIN.value, Role.INSTRUCTOR.value)
