"""Admin operations on grading: the jobs the grader gave up on, and retrying them."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from flask.views import MethodView
from sqlalchemy.orm import Session

from ..auth import BEARER, require_admin
from ..errors import problem_abort
from ..extensions import db_session, dispatch_job
from ..schemas.admin import FailedJobSchema, FailedJobsQuerySchema
from ..services import failed_jobs
from .blueprint import Blueprint
from .docs import UNAUTHORIZED, problems
from .pagination import PAGINATION, OffsetPage

blp = Blueprint("admin", __name__, url_prefix="/api/v1/admin",
                description="For admin clients only: jobs the grader failed on, and retrying them.")
FORBIDDEN = (403, "The client is not an admin")


@dataclass(frozen=True)
class FailedJobsQuery:
    session: Session
    kind: str | None


class FailedJobsPage(OffsetPage):
    """A page of failed attempts and runs (`collection`: a FailedJobsQuery)."""

    collection: FailedJobsQuery

    def rows(self, offset: int, size: int) -> list:
        return failed_jobs.page(self.collection.session, self.collection.kind, offset, size)

    @property
    def item_count(self) -> int:
        return failed_jobs.count(self.collection.session, failed_jobs.failed_jobs(self.collection.kind))


@blp.route("/failed-jobs")
class FailedJobs(MethodView):
    @blp.doc(security=BEARER)
    @require_admin
    @blp.arguments(FailedJobsQuerySchema, location="query")
    @blp.response(200, FailedJobSchema(many=True))
    @blp.paginate(FailedJobsPage, **PAGINATION)
    @problems(blp, UNAUTHORIZED, FORBIDDEN)
    def get(self, query):
        """Attempts and runs the grader gave up on after its retries (status error), newest first."""
        return FailedJobsQuery(db_session(), query.get("kind"))


@blp.route("/failed-jobs/<uuid:job_id>/retry")
class RetryFailedJob(MethodView):
    @blp.doc(security=BEARER)
    @require_admin
    @blp.response(202, FailedJobSchema)
    @problems(blp, UNAUTHORIZED, FORBIDDEN, (404, "No attempt or run with this id"),
              (409, "The job has not failed: only failed jobs are retried"))
    def post(self, job_id: uuid.UUID):
        """Send a failed attempt or run back to the grading workers, with its tries counted afresh."""
        session = db_session()
        job = failed_jobs.find(session, job_id)
        if job is None:
            problem_abort(404, "No attempt or run with this id.")
        if job.status != failed_jobs.ERROR:
            problem_abort(409, f"This {job.JOB_KIND} has not failed (its status is {job.status}); "
                               "only failed jobs are retried.")
        failed_jobs.requeue(job)
        session.commit()
        dispatch_job(type(job), job.id)
        return failed_jobs.describe(job, failed_jobs.client_name(session, job))
