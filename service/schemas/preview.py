"""Preview attempts (resources/preview.py): an attempt's fields, marked as a preview."""

from __future__ import annotations

from typing import Any

from marshmallow import fields

from .attempts import AttemptSchema
from .exercises import ExerciseSchema

_OF_THE_PREVIEW = frozenset({"preview", "url", "learner"})


class PreviewAttemptSchema(AttemptSchema):
    """A preview attempt as its staff see it: everything shown (feedback, report, explanation), no
    number, no penalties, no standing: it counts for nobody."""

    preview = fields.Boolean(required=True, metadata={"description": "Always true: a preview, never counted"})
    url = fields.String(required=True, metadata={"description": "Where to poll it (GET, with ?wait=N)"})

    def get_attribute(self, obj: Any, attr: str, default: Any) -> Any:
        if attr in _OF_THE_PREVIEW:
            return getattr(obj, attr)
        return super().get_attribute(obj, attr, default)


class PreviewDetailSchema(ExerciseSchema):
    """A version of a course's exercise as a learner sees it (the previewer's own variant)."""

    preview = fields.Boolean(required=True, metadata={"description": "Always true: a preview"})
    attempts_url = fields.String(required=True, metadata={"description": "Where to POST preview attempts at this version"})
