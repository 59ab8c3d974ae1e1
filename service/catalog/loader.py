"""Reads exercise folders and checks them; pure apart from reading the files.

The format is documented in exercises/README.md.
"""

from __future__ import annotations

import ast
import hashlib
import re
import tomllib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from marshmallow import ValidationError

from ..quiz import QUIZ_KINDS, Problem
from ..rule_schemas import RulesLayerSchema
from ..rules import rules_json
from ..scores import POLICIES as SCORE_POLICIES, policy_of

SLUG_PATTERN = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
# Paths under /learn/ that are pages, not exercises (service/learn: /learn/assignment, and the lessons
# after the first, at /learn/<folder>: lesson/lesson.toml's followed_by; tests/unit/test_learn_lesson.py
# checks that each is here).
RESERVED_SLUGS = frozenset({"assignment", "beyond"})
TOPIC_PATTERN = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
KINDS = (*QUIZ_KINDS, "code")
COMMON_KEYS = frozenset(
    {"title", "kind", "prompt", "topics", "difficulty", "hints", "explanation", "score_policy", "rules"}
)
MAX_FILE_BYTES = 256 * 1024
SPEC_FILE = "exercise.toml"
#: The files a code exercise's own problems may name (besides wrong/*.py, which are in its files).
CODE_FILES = frozenset({"reference.py", "starter.py", "wrong/"})


@dataclass(frozen=True)
class CatalogProblem:
    path: str
    field: str
    message: str
    #: The exercise the problem belongs to (its folder's name), None for a folder that cannot be one.
    slug: str | None = None
    #: The line of `path` at fault, where one is known (1-based): a field's line in exercise.toml
    #: (toml_field_line), a syntax error's line in a .py file.
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.field}: {self.message}"

    @property
    def file(self) -> str:
        """The file at fault, relative to its exercise's folder ("" for the folder itself)."""
        return self.path.removeprefix(f"{self.slug}/") if self.slug else ""


@dataclass(frozen=True)
class ExerciseFile:
    """One exercise as read from its folder: what a version stores."""

    slug: str
    spec: dict[str, Any]
    files: dict[str, str]
    digest: str

    @property
    def content(self) -> dict[str, Any]:
        return {"spec": self.spec, "files": self.files}


def _read_files(folder: Path) -> dict[str, bytes]:
    files = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if path.is_file() and not any(part.startswith((".", "__pycache__")) for part in rel.parts):
            files[rel.as_posix()] = path.read_bytes()
    return files


def content_digest(files: Mapping[str, bytes]) -> str:
    """SHA-256 over paths and bytes, so any edit, rename or added file makes a new version."""
    digest = hashlib.sha256()
    for rel in sorted(files):
        data = files[rel]
        digest.update(f"{rel}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def _common_problems(spec: Mapping[str, Any]) -> list[Problem]:  # noqa: C901
    problems: list[Problem] = []

    def text(key: str, *, limit: int | None = None) -> None:
        value = spec.get(key)
        if not isinstance(value, str) or not value.strip():
            problems.append((key, "required, a non-empty string"))
        elif limit and len(value) > limit:
            problems.append((key, f"at most {limit} characters"))

    text("title", limit=200)
    text("prompt")
    text("explanation")
    kind = spec.get("kind")
    if kind not in KINDS:
        problems.append(("kind", f"must be one of {', '.join(KINDS)}"))
    topics = spec.get("topics")
    if not isinstance(topics, list) or not topics:
        problems.append(("topics", "required, a non-empty list of tags"))
    else:
        for i, topic in enumerate(topics):
            if not isinstance(topic, str) or not TOPIC_PATTERN.match(topic) or len(topic) > 40:
                problems.append((f"topics[{i}]", "tags are lowercase words joined by hyphens, at most 40 characters"))
        if len(set(topics)) != len(topics):
            problems.append(("topics", "a tag appears more than once"))
    difficulty = spec.get("difficulty")
    if not isinstance(difficulty, int) or isinstance(difficulty, bool) or not 1 <= difficulty <= 5:
        problems.append(("difficulty", "required, an integer from 1 to 5"))
    hints = spec.get("hints", [])
    if not isinstance(hints, list) or not all(isinstance(h, str) and h.strip() for h in hints):
        problems.append(("hints", "must be a list of non-empty strings"))
    if policy_of(spec) not in SCORE_POLICIES:
        problems.append(("score_policy", f"must be one of {', '.join(SCORE_POLICIES)}"))
    problems += _rules_problems(spec.get("rules", {}))
    return problems


def _rules_problems(table: Any) -> list[Problem]:
    """The [rules] table's problems: the same schema as the admin API's (service/rules.py)."""
    if not isinstance(table, dict):
        return [("rules", "must be a table")]
    try:
        RulesLayerSchema().load(table)
    except ValidationError as exc:
        return [(f"rules.{key}" if key != "_schema" else "rules", " ".join(_messages(messages)))
                for key, messages in sorted(_by_field(exc.messages).items())]
    return []


def _by_field(messages: Any) -> dict[str, Any]:
    return messages if isinstance(messages, dict) else {"_schema": messages}


def _messages(messages: Any) -> list[str]:
    if isinstance(messages, dict):
        return [m for value in messages.values() for m in _messages(value)]
    return [str(m) for m in messages] if isinstance(messages, list) else [str(messages)]


def _rules_as_json(spec: dict[str, Any]) -> dict[str, Any]:
    """The spec as stored (JSON): a [rules] table's TOML dates as ISO strings."""
    if "rules" not in spec:
        return spec
    return {**spec, "rules": rules_json(RulesLayerSchema().load(spec["rules"]))}


def _kind_problems(spec: Mapping[str, Any], files: Mapping[str, str]) -> list[Problem]:
    kind = spec.get("kind")
    kind_keys: frozenset[str]
    validate: Callable[[], list[Problem]]
    if kind == "code":
        from ..grading.spec import validate_code_exercise  # torch-free by contract

        kind_keys, validate = frozenset({"code"}), lambda: validate_code_exercise(dict(spec), dict(files))
    elif kind in QUIZ_KINDS:
        kind_keys, validate = QUIZ_KINDS[kind].spec_keys, lambda: QUIZ_KINDS[kind].validate_spec(spec)
    else:
        return []
    problems: list[Problem] = []
    extra = set(spec) - COMMON_KEYS - kind_keys
    if extra:
        problems.append(("(top level)", f"unknown keys: {', '.join(sorted(extra))}"))
    return problems + list(validate())


def read_files(folder: Path) -> dict[str, bytes]:
    """An exercise folder's files (relative path -> bytes), hidden files and caches left out."""
    return _read_files(folder)


def read_exercise(folder: Path) -> tuple[ExerciseFile | None, list[CatalogProblem]]:
    """Read and check one exercise folder: the exercise, or None and what is wrong with it."""
    return exercise_from_files(folder.name, _read_files(folder))


def exercise_folders(root: Path) -> list[Path]:
    """The exercise folders under `root`, by name (folders starting with . or _ are not exercises)."""
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))


def slug_problem(slug: str) -> str | None:
    """Why `slug` cannot name an exercise, or None when it can."""
    if not SLUG_PATTERN.match(slug) or not 3 <= len(slug) <= 64:
        return "a slug is 3-64 lowercase letters, digits and hyphens"
    if slug in RESERVED_SLUGS:
        return "a page of the learner's site has this name"
    return None


def exercise_from_files(slug: str, raw_files: Mapping[str, bytes]) -> tuple[ExerciseFile | None, list[CatalogProblem]]:
    """Check one exercise given as its files (relative path -> bytes: a folder, an upload, a git
    tree): the exercise, or None and what is wrong with it. Runs none of its code."""
    where = f"{slug}/{SPEC_FILE}"
    wrong_slug = slug_problem(slug)
    if wrong_slug is not None:
        return None, [CatalogProblem(slug, "(folder name)", wrong_slug)]
    if SPEC_FILE not in raw_files:
        return None, [CatalogProblem(where, "(file)", "missing", slug)]
    problems: list[CatalogProblem] = []
    files: dict[str, str] = {}
    for rel, data in raw_files.items():
        if len(data) > MAX_FILE_BYTES:
            problems.append(CatalogProblem(f"{slug}/{rel}", "(file)", f"larger than {MAX_FILE_BYTES} bytes", slug))
            continue
        try:
            files[rel] = data.decode("utf-8")
        except UnicodeDecodeError:
            problems.append(CatalogProblem(f"{slug}/{rel}", "(file)", "not UTF-8 text", slug))
    try:
        spec = tomllib.loads(files.get(SPEC_FILE, ""))
    except tomllib.TOMLDecodeError as exc:
        # Python 3.14 keeps the message and line apart; before it, only the message names the line.
        named = re.search(r"\(at line (\d+)", str(exc))
        line = getattr(exc, "lineno", None) or (int(named[1]) if named else None)
        return None, problems + [CatalogProblem(where, "(syntax)", getattr(exc, "msg", str(exc)), slug, line)]
    from ..grading.spec import SYNTAX_ERROR  # torch-free by contract

    spec_text = files[SPEC_FILE]
    for field, message in _common_problems(spec) + _kind_problems(spec, files):
        if field in files or field in CODE_FILES:  # a file of a code exercise: the problem is in it
            line = syntax_error_line(files[field]) if field in files and message.startswith(SYNTAX_ERROR) else None
            problems.append(CatalogProblem(f"{slug}/{field}", "(file)", message, slug, line))
        else:
            problems.append(CatalogProblem(where, field, message, slug, toml_field_line(spec_text, field)))
    if problems:
        return None, problems
    files.pop(SPEC_FILE)
    return ExerciseFile(slug, _rules_as_json(spec), files, content_digest(raw_files)), []


def syntax_error_line(source: str) -> int | None:
    """The line of a Python file's syntax error (None if it parses); compiled, never run."""
    try:
        compile(source, "<exercise file>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        return exc.lineno
    except (ValueError, RecursionError, MemoryError):
        return None
    return None


_TABLE_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$")
_KEY_LINE = re.compile(r"^\s*([A-Za-z0-9_.\-\s\"']+?)\s*=")
_FIELD_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def _field_parts(field: str) -> list[str]:
    """`code.inputs[0].range_` as ["code", "inputs", "0", "range_"]."""
    return [name or index for name, index in _FIELD_PART.findall(field)]


def _key_parts(text: str) -> list[str]:
    return [part.strip().strip("\"'") for part in text.split(".")]


def _toml_paths(text: str) -> Iterator[tuple[int, list[str]]]:
    """Each table header and key of a TOML text with its line and path (`[[code.inputs]]` then
    `range = …`: ["code", "inputs", "0", "range"]); nothing inside a multi-line string (a prompt)."""
    table: list[str] = []
    counts: dict[tuple[str, ...], int] = {}
    open_string: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if open_string is not None:
            if line.count(open_string) % 2 == 1:
                open_string = None
            continue
        open_string = next((q for q in ('"""', "'''") if line.count(q) % 2 == 1), None)
        header = _TABLE_HEADER.match(line)
        if header:
            names = _key_parts(header[2])
            if header[1] == "[[":
                counts[tuple(names)] = counts.get(tuple(names), -1) + 1
                names = [*names, str(counts[tuple(names)])]
            table = names
            yield number, table
        elif (key := _KEY_LINE.match(line)) and not line.lstrip().startswith("#"):
            yield number, [*table, *_key_parts(key[1])]


def toml_field_line(text: str, field: str) -> int | None:
    """The line of exercise.toml where `field` (a problem's field path: `code.inputs[0].range_`,
    `answer.wrong[1].value`) is written, or where the nearest table holding it is: a best-effort
    scan of table headers and keys, for an editor to point at. None when nothing matches."""
    target = _field_parts(field)
    best, best_depth = None, 0
    for number, path in _toml_paths(text):
        depth = next((i for i, (have, want) in enumerate(zip(path, target)) if have != want), min(len(path), len(target)))
        if (depth == len(path) or depth == len(target)) and depth > best_depth:
            best, best_depth = number, depth
    return best


def load_catalog(root: Path) -> tuple[list[ExerciseFile], list[CatalogProblem]]:
    """Every exercise folder under `root`, and every problem found in any of them."""
    if not root.is_dir():
        return [], [CatalogProblem(str(root), "(folder)", "not a directory")]
    exercises: list[ExerciseFile] = []
    problems: list[CatalogProblem] = []
    for folder in exercise_folders(root):
        exercise, found = read_exercise(folder)
        problems += found
        if exercise is not None:
            exercises.append(exercise)
    return exercises, problems


def public_view(content: Mapping[str, Any]) -> dict[str, Any]:
    """The kind-specific part of an exercise a learner may see before answering."""
    spec = content["spec"]
    if spec["kind"] == "code":
        from ..grading.spec import public_code_view

        return {"code": public_code_view(dict(spec), dict(content["files"]))}
    return QUIZ_KINDS[spec["kind"]].public_view(spec)
