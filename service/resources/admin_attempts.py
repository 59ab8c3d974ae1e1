"""Staff: search attempts, one attempt in full, CSV exports."""

from __future__ import annotations

from flask_smorest import Blueprint

blp = Blueprint("admin_attempts", __name__, url_prefix="/api/v1/admin",
                description="For instructor and admin clients: search attempts, one attempt in full, CSV exports.")
