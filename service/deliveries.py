"""What the outbound runner sends, put together where it is started (`flask worker` runs it as a
thread, `flask outbound` alone).

The runner (service/outbound/runner.py) claims, sends and retries any kind of delivery it is
given; the kinds build on it: LTI score passbacks (service/lti/passback.py) and webhook events
(service/outbound/webhooks.py). Naming them here, above both, keeps service/outbound/ free of
any import of the LTI code. Course rosters (service/lti/roster.py) are read from the LMSs beside
them, by a syncer of their own, and courses' exercises from their git repositories
(service/gitsync/sync.py) by another.
"""

from __future__ import annotations

from .config import Settings
from .gitsync.sync import GitSyncer, JobDispatcher
from .lti.passback import ScorePassbacks
from .lti.roster import RosterSyncer
from .outbound.runner import DeliveryKind, OutboundRunner
from .outbound.webhooks import WebhookDeliveries


def delivery_kinds(settings: Settings) -> list[DeliveryKind]:
    """Every kind of delivery the service sends, in the order the runner serves them."""
    return [ScorePassbacks(settings), WebhookDeliveries(settings)]


def outbound_runner(settings: Settings) -> OutboundRunner:
    """The runner that sends every kind of delivery."""
    return OutboundRunner(settings, delivery_kinds(settings))


def roster_syncer(settings: Settings) -> RosterSyncer:
    """The syncer that reads the courses' rosters from their LMSs when due."""
    return RosterSyncer(settings)


def git_syncer(settings: Settings, dispatcher: JobDispatcher) -> GitSyncer:
    """The syncer that runs the courses' queued git syncs; the proofs it queues go to the grading
    workers through `dispatcher` (the caller's: service/jobs/ imports this module, not the reverse)."""
    return GitSyncer(settings, dispatcher)
