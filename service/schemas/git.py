"""A course's git repository as its staff set and read it, and the syncs' records (service/gitsync/)."""

from __future__ import annotations

from marshmallow import Schema, fields, validate

from ..gitsync.fetch import BRANCH_PATTERN, FOLDER_PATTERN
from ..gitsync.sync import Outcome
from .request import RequestSchema, http_url

OUTCOMES = [Outcome.UNCHANGED, Outcome.PROVING, Outcome.PUBLISHED, Outcome.PROOF_FAILED, Outcome.INVALID,
            Outcome.REMOVED]
SYNC_STATUSES = ["queued", "running", "done", "failed"]


class GitRepoSetSchema(RequestSchema):
    url = http_url("The repository's https:// URL (plain http:// only to a host the operator allows on a "
                   "network the server may reach: a git server for tests). Its host must be in the server's "
                   "GIT_ALLOWED_HOSTS; no user name or password in it (give `token`).")
    branch = fields.String(load_default="main", validate=validate.Regexp(BRANCH_PATTERN.pattern), metadata={
        "description": "The branch synced (default main)"})
    path = fields.String(load_default="", validate=validate.Regexp(FOLDER_PATTERN.pattern), metadata={
        "description": "The folder inside the repository holding the exercise folders (default: its root)"})
    token = fields.String(allow_none=True, validate=validate.Length(min=1, max=1000),
                          load_only=True, metadata={
        "description": "A deploy token for a private repository (write-only: stored sealed, never returned). "
                       "`user:token` sends that user name (GitLab deploy tokens); a token alone is sent as "
                       "x-access-token's password (GitHub). Left out on a change: the stored one stays (unless "
                       "the URL changes); null: forgotten."})


class GitSyncExerciseSchema(Schema):
    slug = fields.String(required=True)
    outcome = fields.String(required=True, validate=validate.OneOf(OUTCOMES), metadata={
        "description": "unchanged (its current published version); proving (saved as a draft version, published "
                       "when its proof passes); published; proof_failed (the last published version stays); "
                       "invalid (format problems, or a slug taken elsewhere: nothing saved); removed (its "
                       "folder is gone: unpublished)"})
    version = fields.Integer(required=True, allow_none=True)
    problems = fields.List(fields.Dict(), required=True, metadata={
        "description": "What is wrong, each {file, field, message, line}"})


class GitSyncSchema(Schema):
    id = fields.Integer(required=True)
    requested_by = fields.String(required=True, metadata={"description": "webhook, or the staff member who asked"})
    status = fields.String(required=True, validate=validate.OneOf(SYNC_STATUSES))
    queued_at = fields.DateTime(required=True)
    started_at = fields.DateTime(required=True, allow_none=True)
    finished_at = fields.DateTime(required=True, allow_none=True)
    commit = fields.String(required=True, allow_none=True, metadata={"description": "The commit synced"})
    error = fields.String(required=True, allow_none=True, metadata={"description": "Why the sync failed"})
    exercises = fields.List(fields.Nested(GitSyncExerciseSchema), required=True)


class GitRepoSchema(Schema):
    url = fields.String(required=True)
    branch = fields.String(required=True)
    path = fields.String(required=True)
    has_token = fields.Boolean(required=True)
    webhook_url = fields.String(required=True, metadata={
        "description": "Where the git host sends push events (content type application/json)"})
    webhook_secret = fields.String(metadata={
        "description": "The push webhook's secret: shown once, when the repository is first set or the secret "
                       "rotated (GitHub/Gitea: the webhook's Secret; GitLab: its Secret token)"})
    last_sync = fields.Nested(GitSyncSchema, required=True, allow_none=True)


class WebhookAckSchema(Schema):
    queued = fields.Boolean(required=True, metadata={
        "description": "Whether a sync was queued (false: a push to another branch, or not a push)"})
    sync_id = fields.Integer(allow_none=True)
