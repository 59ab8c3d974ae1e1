"""`GET /api/v1/exercise-templates` (staff): one sound exercise of each kind to start authoring from."""

from __future__ import annotations

from flask.views import MethodView

from ..auth import BEARER, require_staff
from ..catalog.exercise_templates import exercise_templates
from ..schemas.exercise_templates import ExerciseTemplateSchema
from .blueprint import Blueprint
from .docs import STAFF_ONLY, UNAUTHORIZED, problems

blp = Blueprint("exercise_templates", __name__, url_prefix="/api/v1",
                description="Exercise templates: a proven exercise of each kind, for a course's staff to start from.")


@blp.route("/exercise-templates")
class ExerciseTemplates(MethodView):
    @blp.doc(security=BEARER)
    @require_staff
    @blp.response(200, ExerciseTemplateSchema(many=True))
    @problems(blp, UNAUTHORIZED, STAFF_ONLY)
    def get(self):
        """One exercise of each kind (code, single_choice, multiple_choice, short_answer, numeric), its
        files as POST /api/v1/courses/{course_id}/exercises takes them; each passes the proof."""
        return list(exercise_templates())
