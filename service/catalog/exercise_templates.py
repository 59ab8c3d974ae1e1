"""Exercise templates: one sound exercise of each kind, for an author to start from.

Each is a folder under `service/catalog/templates/<kind>/` in the catalog's own format
(`exercise.toml`, and for a code exercise `reference.py`, `starter.py`, `wrong/*.py`). The dashboard's
"New exercise" fills its editors with one (GET /api/v1/exercise-templates); a test proves every one
(service/catalog/proof.py), so that an author starts from an exercise that passes.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from .loader import SPEC_FILE

TEMPLATES = Path(__file__).resolve().parent / "templates"
#: The kinds, in the order the dashboard offers them.
KINDS: tuple[str, ...] = ("code", "single_choice", "multiple_choice", "short_answer", "numeric")
KIND_NAMES = {
    "code": "Code: a custom autograd Function",
    "single_choice": "Single choice",
    "multiple_choice": "Multiple choice",
    "short_answer": "Short answer",
    "numeric": "Numeric answer",
}


@dataclass(frozen=True)
class ExerciseTemplate:
    kind: str
    name: str  # the kind in words
    slug: str  # a suggested slug (the author picks their own: slugs are unique on the server)
    files: dict[str, str]  # path -> text, exercise.toml included


def _files(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted(folder.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


@cache
def exercise_templates() -> tuple[ExerciseTemplate, ...]:
    """Every template, one per kind (read once: the files ship with the code)."""
    found = []
    for kind in KINDS:
        files = _files(TEMPLATES / kind)
        if SPEC_FILE not in files:
            raise RuntimeError(f"the {kind} exercise template has no {SPEC_FILE}")
        found.append(ExerciseTemplate(kind, KIND_NAMES[kind], "my-" + kind.replace("_", "-"), files))
    return tuple(found)
