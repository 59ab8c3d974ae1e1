"""Clients generated from the OpenAPI document, as a frontend developer would make them: complete
(a model for every component schema, a module for every operation) and typed (a body type, and a
response type, that is not Any), without a warning from the generator.

- openapi-python-client (pinned in requirements-dev.txt) generates the Python client once per
  session; a learner's flow then runs through it against the app under a real HTTP server: a client
  key issues a learner token, the token reads the exercise, answers the quiz, reads the attempt back,
  and submits code that a grading worker grades while the request waits (?wait).
- openapi-typescript (frontend/package.json, installed from the lockfile with `npm ci`) writes the
  TypeScript types, and TypeScript's compiler checks that no body or JSON response is `any` or
  `unknown`, and that an attempt's body needs an answer or code. Like the front-end bundle test, it
  needs Node.js and npm (.ci/run installs Debian's when missing), and is never skipped.

About 12 s for the whole module on an idle machine: `npm ci` about 4 s (npm's cache warm),
openapi-typescript and tsc 2 s each, openapi-python-client 2 s, the flow under 1 s (on each database)
once the session's grading judge has started.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
import subprocess
import sys
import threading
import types
import typing
from collections.abc import Iterator
from pathlib import Path

import pytest
from werkzeug.serving import make_server

from service import create_app
from service.config import PROJECT_ROOT
from tests.helpers import correct_answer, node_tool

QUIZ = "backward-none-for-bounds"  # single_choice
CODE = "clamp-function"
REFERENCE = (PROJECT_ROOT / "exercises" / CODE / "reference.py").read_text()
PACKAGE = "gradquiz_client"
FRONTEND = PROJECT_ROOT / "frontend"
JSON_TYPES = ("application/json", "application/problem+json")


@pytest.fixture(scope="session")
def document() -> dict:
    # The document does not depend on the database: an app on an unused in-memory one serves it.
    return create_app({"database_url": "sqlite://", "env": "testing"}).test_client().get("/api/v1/openapi.json").json


@pytest.fixture(scope="session")
def document_file(document, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("openapi") / "openapi.json"
    path.write_text(json.dumps(document))
    return path


def operations(document: dict) -> Iterator[tuple[str, str, dict]]:
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            if isinstance(operation, dict) and "responses" in operation:
                yield path, method, operation


# --------------------------------------------------------------------------- Python


@pytest.fixture(scope="session")
def python_client(document_file, tmp_path_factory) -> Iterator[types.ModuleType]:
    folder = tmp_path_factory.mktemp("python-client")
    config = folder / "config.json"
    config.write_text(json.dumps({"post_hooks": []}))  # no ruff formatting: the code is only imported
    done = subprocess.run([sys.executable, "-m", "openapi_python_client", "generate", "--path", str(document_file),
                           "--meta", "none", "--output-path", str(folder / PACKAGE), "--config", str(config)],
                          capture_output=True, text=True, timeout=120)
    output = (done.stdout + done.stderr).strip()
    assert done.returncode == 0, output
    # It prints its warnings (a schema dropped, a body or response left out) and still succeeds.
    assert output == f"Generating {folder / PACKAGE}", output
    sys.path.insert(0, str(folder))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(folder))
        for name in [name for name in sys.modules if name == PACKAGE or name.startswith(f"{PACKAGE}.")]:
            del sys.modules[name]


def generated_operations(package: types.ModuleType) -> dict[str, types.ModuleType]:
    """The client's operation modules (api/<tag>/<method>_<path>.py) by name."""
    api = importlib.import_module(f"{package.__name__}.api")
    return {info.name.rsplit(".", 1)[-1]: importlib.import_module(info.name)
            for info in pkgutil.walk_packages(api.__path__, f"{api.__name__}.") if not info.ispkg}


def operation_name(method: str, path: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", f"{method}{path}".lower()).strip("_")


def type_members(annotation: object) -> Iterator[object]:
    """`annotation` and every type inside it (the members of a union, a list's items...)."""
    yield annotation
    for argument in typing.get_args(annotation):
        yield from type_members(argument)


def test_every_component_schema_becomes_a_model(document, python_client):
    models = importlib.import_module(f"{PACKAGE}.models")
    assert [name for name in document["components"]["schemas"] if name not in models.__all__] == []


def test_every_operation_has_a_typed_body_and_response(document, python_client):
    models = importlib.import_module(f"{PACKAGE}.models")
    generated = generated_operations(python_client)
    untyped = []
    for path, method, operation in operations(document):
        module = generated.get(operation_name(method, path))
        assert module is not None, f"{method.upper()} {path} has no module in the client"
        hints = typing.get_type_hints(module.sync_detailed)
        if "requestBody" in operation:
            # A model, or a union of models: each one of the document's components.
            body = hints.get("body")
            members = typing.get_args(body) or (body,)
            if not all(isinstance(member, type) and getattr(models, member.__name__, None) is member
                       for member in members):
                untyped.append((method.upper(), path, "body", body))
        # A response without content (204) is None, which the client types as Any.
        if any(set(JSON_TYPES) & set(response.get("content", {}))
               for status, response in operation["responses"].items() if status.startswith("2")):
            if typing.Any in type_members(hints["return"]):
                untyped.append((method.upper(), path, "response", hints["return"]))
    assert untyped == []


@pytest.fixture
def live_server(app) -> Iterator[str]:
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, name="openapi-client-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(timeout=10)


def test_a_learners_flow_through_the_generated_client(python_client, live_server, client_key, quiz_catalog, worker):
    models = importlib.import_module(f"{PACKAGE}.models")
    call = generated_operations(python_client)
    # trust_env off: a proxy set in the environment must not carry loopback requests.
    staff = python_client.AuthenticatedClient(base_url=live_server, token=client_key, httpx_args={"trust_env": False})

    issued = call["post_api_v1_learner_tokens"].sync(
        client=staff, body=models.LearnerTokenCreate(learner="ada", exercises=[QUIZ, CODE]))
    assert isinstance(issued, models.LearnerToken), issued
    learner = python_client.AuthenticatedClient(base_url=live_server, token=issued.token,
                                                httpx_args={"trust_env": False})

    exercise = call["get_api_v1_exercises_slug"].sync(slug=QUIZ, client=learner)
    assert isinstance(exercise, models.Exercise) and exercise.slug == QUIZ, exercise
    missing = call["get_api_v1_exercises_slug"].sync(slug="no-such-exercise", client=staff)
    assert isinstance(missing, models.Problem) and missing.status == 404, missing

    answer = correct_answer(quiz_catalog[QUIZ])
    submitted = call["post_api_v1_exercises_slug_attempts"].sync_detailed(
        slug=QUIZ, client=learner, body=models.QuizAttemptCreate(answer=answer))
    assert submitted.status_code == 201, submitted.content
    attempt = submitted.parsed
    assert isinstance(attempt, models.Attempt), attempt
    assert (attempt.learner, attempt.status, attempt.score, attempt.correct) == ("ada", "graded", 1.0, True)
    read = call["get_api_v1_attempts_attempt_id"].sync(attempt_id=attempt.id, client=learner)
    assert isinstance(read, models.Attempt) and (read.id, read.answer, read.score) == (attempt.id, answer, 1.0), read

    queued = call["post_api_v1_exercises_slug_attempts"].sync_detailed(
        slug=CODE, client=learner, body=models.CodeAttemptCreate(code=REFERENCE))
    assert queued.status_code == 202, queued.content
    graded = call["get_api_v1_attempts_attempt_id"].sync(attempt_id=queued.parsed.id, client=learner, wait=20)
    assert isinstance(graded, models.Attempt), graded
    assert (graded.status, graded.score, graded.correct, graded.code) == ("graded", 1.0, True, REFERENCE)


# --------------------------------------------------------------------------- TypeScript


@pytest.fixture(scope="session")
def node_modules(frontend_packages) -> Path:
    """frontend/'s packages, installed from its lockfile (tests/conftest.py)."""
    return frontend_packages / "node_modules"


def type_checks(document: dict) -> list[str]:
    """One line per body and JSON response: a type that fails to compile where it is any or unknown."""
    checked = []
    for path, method, operation in operations(document):
        where, said = f'paths["{path}"]["{method}"]', f"{method.upper()} {path}"
        for content_type in operation.get("requestBody", {}).get("content", {}):
            checked.append((f'NonNullable<{where}["requestBody"]>["content"]["{content_type}"]', f"{said} body"))
        for status, response in operation["responses"].items():
            for content_type in set(JSON_TYPES) & set(response.get("content", {})):
                checked.append((f'{where}["responses"]["{status}"]["content"]["{content_type}"]', f"{said} {status}"))
    return [f"type _{i} = Check<IsTyped<{type_}>>;  // {said}" for i, (type_, said) in enumerate(checked)]


CHECKS_HEADER = """\
import type { paths } from "./api";

type IsAny<T> = 0 extends 1 & T ? true : false;
type IsTyped<T> = IsAny<T> extends true ? false : unknown extends T ? false : true;
type Check<T extends true> = T;

type AttemptBody = paths["/api/v1/exercises/{slug}/attempts"]["post"]["requestBody"]["content"]["application/json"];
export const quiz: AttemptBody = { answer: "none-each" };
export const code: AttemptBody = { learner: "ada", code: "class Clamp: pass" };
// @ts-expect-error: an attempt gives an answer or code
export const neither: AttemptBody = { learner: "ada" };
"""


def test_the_typescript_types_have_no_untyped_body(document, document_file, node_modules):
    node = node_tool("node")
    out = document_file.parent / "ts"
    out.mkdir(exist_ok=True)
    done = subprocess.run([node, node_modules / "openapi-typescript" / "bin" / "cli.js", document_file,
                           "--output", out / "api.d.ts"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    # Its banner and the file written; anything else is a warning.
    said = [line for line in (done.stdout + done.stderr).splitlines()
            if line.strip() and not line.startswith(("✨ openapi-typescript", "🚀 "))]
    assert said == []

    checks = out / "checks.ts"
    checks.write_text(CHECKS_HEADER + "\n".join(type_checks(document)) + "\n")
    # --skipLibCheck: checks.ts is what is checked (the generated .d.ts only through it), in a third of the time.
    compiled = subprocess.run([node, node_modules / "typescript" / "bin" / "tsc", "--noEmit", "--strict", "--skipLibCheck",
                               "--lib", "es2022", "--target", "es2022", "--module", "esnext", "--moduleResolution",
                               "bundler", checks], capture_output=True, text=True, timeout=120)
    lines = checks.read_text().splitlines()
    failed = [lines[int(line) - 1] for line in re.findall(r"checks\.ts\((\d+),", compiled.stdout)]
    assert compiled.returncode == 0, "\n".join(failed) or compiled.stdout + compiled.stderr
