"""The assessment rules themselves (service/rules.py's table): what the dashboard and the learner
pages name and explain them with, so that no page keeps its own copy."""

from __future__ import annotations

from flask.views import MethodView

from ..rules import LAYERS, RULES
from ..schemas.rules import RuleVocabularySchema
from .blueprint import Blueprint

blp = Blueprint("rules", __name__, url_prefix="/api/v1/rules",
                description="The assessment rules there are: public, no key needed.")

VOCABULARY = {"rules": RULES, "layers": [{"name": name, "description": text} for name, text in LAYERS.items()]}


@blp.route("")
class RuleVocabulary(MethodView):
    @blp.response(200, RuleVocabularySchema)
    def get(self):
        """Every assessment rule (its kind, bounds, default, words for staff and learners, the layers
        that may set it) and the layers in the order they apply."""
        return VOCABULARY
