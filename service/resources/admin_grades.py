"""Staff: regrades, overrides with their audit log, publishing exercises."""

from __future__ import annotations

from flask_smorest import Blueprint

blp = Blueprint("admin_grades", __name__, url_prefix="/api/v1/admin",
                description="For instructor and admin clients: regrades, overrides with their audit log, publishing exercises.")
