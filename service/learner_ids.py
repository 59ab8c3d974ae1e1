"""What a learner id (a client's own identifier of a learner, an LTI platform's `sub`) and a course's
external id may be: one rule for the API's bodies and paths, its OpenAPI document and LTI launches."""

from __future__ import annotations

import re

# What a learner id (and a course's external id) may not hold: '/', control characters (C0, DEL,
# C1), the line and paragraph separators (U+2028, U+2029) and format characters: the bidi marks,
# embeddings, overrides and isolates (U+061C, U+200E/F, U+202A-U+202E, U+2066-U+2069), the
# zero-width ones, the soft hyphen... which make one id look like another, or like none, in the
# dashboard. The format characters of the Basic Multilingual Plane are listed (Unicode's Cf): the
# pattern is also the OpenAPI document's, and a JSON Schema pattern has no \p{Cf}.
_NOT_IN_IDS = (r"/\x00-\x1f\x7f-\x9f\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"
               r"\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb")
LEARNER_CHARACTERS = rf"[^{_NOT_IN_IDS}]{{1,255}}"
# Those characters, and not white space alone.
LEARNER_PATTERN = rf"^(?!\s*$){LEARNER_CHARACTERS}$"
LEARNER_ID_ERROR = ("1-255 characters, not only white space, without '/', control, format (such as bidi) "
                    "or line separator characters")

def is_learner_id(value: str) -> bool:
    """Whether `value` is a learner id a request may give (a path's, an LTI launch's sub)."""
    return re.fullmatch(LEARNER_PATTERN, value) is not None
