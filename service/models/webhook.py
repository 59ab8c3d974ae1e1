"""Webhook endpoints an API client registered, and the events delivered to them."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from .attempt import AttemptEvent
from .base import Base, utcnow
from .delivery import OutboundDelivery


class WebhookEndpoint(Base):
    __tablename__ = "webhook_endpoints"

    id: Mapped[int] = mapped_column(primary_key=True)
    client_id: Mapped[int] = mapped_column(ForeignKey("api_clients.id"), index=True)
    url: Mapped[str] = mapped_column(String(2048))
    # The signing secret, sealed with SECRET_KEY (service/sealing.py): signing needs the secret
    # itself, so it cannot be stored as a hash like API keys are.
    sealed_secret: Mapped[str] = mapped_column(Text)
    description: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    # Deleted endpoints are kept (their delivery log stays readable) and receive nothing more.
    disabled_at: Mapped[datetime | None]


class WebhookDelivery(OutboundDelivery, Base):
    """One event for one endpoint; its `event_id` is the id receivers deduplicate on."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        UniqueConstraint("endpoint_id", "event_id"),
        Index("ix_webhook_deliveries_due", "status", "next_attempt_at"),
    )

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    endpoint_id: Mapped[int] = mapped_column(ForeignKey("webhook_endpoints.id"))
    event_id: Mapped[int] = mapped_column(ForeignKey("attempt_events.id"), index=True)

    endpoint: Mapped[WebhookEndpoint] = relationship()
    event: Mapped[AttemptEvent] = relationship()
