"""The exercise catalog: files under exercises/ read, validated and synced into the database."""

from .loader import CatalogProblem, ExerciseFile, load_catalog, public_view
from .sync import SyncReport, sync_catalog

__all__ = ["CatalogProblem", "ExerciseFile", "SyncReport", "load_catalog", "public_view", "sync_catalog"]
