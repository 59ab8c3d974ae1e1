"""The words of grading (service/grading/terms.py): what every page names checks, likely causes,
error stages and report statuses with, so that no page keeps its own copy. Public, like the
catalog; the same for everyone until a deploy changes it, so it carries an ETag."""

from __future__ import annotations

import hashlib
import json

from flask import jsonify, request
from flask.views import MethodView
from jinja2.utils import htmlsafe_json_dumps
from markupsafe import Markup

from ..grading.terms import terms_json
from ..schemas.terms import TermsSchema
from .blueprint import Blueprint

blp = Blueprint("terms", __name__, url_prefix="/api/v1/terms",
                description="The words of grading (checks, likely causes, error stages, statuses): public, no key needed.")

TERMS = TermsSchema().dump(terms_json())
ETAG = hashlib.sha256(json.dumps(TERMS, sort_keys=True).encode()).hexdigest()[:32]
#: The same, safe inside a <script> element: made once, not at each page render.
TERMS_SCRIPT = htmlsafe_json_dumps(TERMS)


@blp.route("")
class Terms(MethodView):
    # A conditional GET (If-None-Match) answers 304 Not Modified while the words are unchanged:
    # HTTP's own caching, left out of the document as for every static page.
    @blp.response(200, TermsSchema, headers={"ETag": {"schema": {"type": "string"}, "description": (
        "Send it back in If-None-Match: 304 Not Modified while unchanged")}})
    def get(self):
        """Every check's title and what it checks, every likely cause's title and advice, the words of
        each stage an error is raised at (an error's `where`), and the verdict of each report status."""
        response = jsonify(TERMS)
        response.set_etag(ETAG)
        response.headers["Cache-Control"] = "public, max-age=300"
        return response.make_conditional(request)


@blp.app_template_global("grading_terms")
def grading_terms() -> Markup:
    """The same words for the learner pages, embedded (templates/learn/base.html: gradquiz-terms)."""
    return TERMS_SCRIPT
