"""Staff: statistics per exercise and progress per learner."""

from __future__ import annotations

from flask_smorest import Blueprint

blp = Blueprint("admin_stats", __name__, url_prefix="/api/v1/admin",
                description="For instructor and admin clients: statistics per exercise and progress per learner.")
