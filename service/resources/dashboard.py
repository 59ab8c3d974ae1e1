"""The grading dashboard: static files at /admin that call the admin API."""

from __future__ import annotations

from flask import Blueprint

blp = Blueprint("dashboard", __name__, url_prefix="/admin")
