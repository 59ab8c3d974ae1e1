"""Course exercises (issue 34): a course's staff write exercises, each version proven before it is
published; uploads are archives read as hostile; one course reaches nothing of another's."""

from __future__ import annotations

import io
import tarfile
import zipfile

import pytest
from sqlalchemy import select

from service.extensions import db_session
from service.models import Exercise, ExerciseProof, ExerciseTopic, ExerciseVersion, Role
from tests.api.support import (
    QUIZ_SOURCE,
    authoring_courses,
    code_files,
    grade_regrade_items,
    quiz_files,
)
from tests.helpers import bearer, count_rows

ROWS = (Exercise, ExerciseVersion, ExerciseProof, ExerciseTopic)


def row_counts(app) -> dict[str, int]:
    return {model.__name__: count_rows(app, model) for model in ROWS}


@pytest.fixture
def course(app, client, client_key, client_key_for):
    return authoring_courses(app, client, client_key, client_key_for)


def create(client, course, slug, files, other=False):
    """POST a new exercise to the course (`other`: to the other course, with its key)."""
    url, key = (course["other_url"], course["other_key"]) if other else (course["url"], course["key"])
    return client.post(url, headers=bearer(key), json={"slug": slug, "files": files})


def test_a_quiz_is_proven_at_once_published_and_versioned(client, course):
    made = create(client, course, "bounds-quiz", quiz_files())
    assert made.status_code == 201, made.json
    draft = made.json["exercises"][0]
    assert (draft["slug"], draft["version"], draft["status"]) == ("bounds-quiz", 1, "draft")
    assert draft["proof"] == {"status": "passed", "passed": True, "problems": [],
                              "steps": [{"subject": "answers", "passed": True, "summary": "consistent"}]}
    assert (draft["url"], draft["page_url"]) == (f"{course['url']}/bounds-quiz", "/learn/bounds-quiz")
    # A draft is not the catalog's: neither listed nor served there.
    assert "bounds-quiz" not in [e["slug"] for e in client.get("/api/v1/exercises?page_size=100").json]

    again = client.put(draft["url"], headers=bearer(course["key"]), json={"files": quiz_files()})
    assert (again.status_code, again.json["version"]) == (200, 1)
    second = client.put(draft["url"], headers=bearer(course["instructor"]),
                        json={"files": quiz_files("Revised"), "source": "dashboard"})
    assert (second.status_code, second.json["version"]) == (201, 2)

    published = client.post(f"{draft['url']}/publish", headers=bearer(course["key"]), json={"version": 1})
    assert published.status_code == 200, published.json
    assert (published.json["status"], published.json["current_version"], published.json["latest_version"]) == (
        "published", 1, 2)
    versions = client.get(f"{draft['url']}/versions", headers=bearer(course["key"])).json
    assert [(v["version"], v["author"], v["source"], v["current"], v["published_at"] is not None) for v in versions] == [
        (2, "prof", "dashboard", False, False), (1, "course key 'script'", "api", True, True)]
    assert all(v["created_at"] and v["proof_status"] == "passed" for v in versions)

    diff = client.get(f"{draft['url']}/diff", headers=bearer(course["key"]), query_string={"from": 1, "to": 2}).json
    assert [(f["path"], f["status"]) for f in diff["files"]] == [("exercise.toml", "changed")]
    assert '-title = "Bounds get no gradient: ' in diff["files"][0]["diff"]
    assert '+title = "Revised: ' in diff["files"][0]["diff"]

    version = client.get(f"{draft['url']}/versions/2", headers=bearer(course["key"])).json
    assert version["files"] == quiz_files("Revised")  # exercise.toml as written, byte for byte
    detail = client.get(draft["url"], headers=bearer(course["key"])).json
    assert (detail["status"], detail["version"], detail["latest_version"]) == ("published", 1, 2)
    assert detail["title"].startswith("Bounds get no gradient") and "choices" in detail

    listed = client.get(course["url"], headers=bearer(course["key"])).json
    assert [(e["slug"], e["status"], e["latest_proof_status"]) for e in listed] == [("bounds-quiz", "published", "passed")]
    # Version 2 published, then the way back to version 1.
    assert client.post(f"{draft['url']}/publish", headers=bearer(course["key"]), json={}).json["current_version"] == 2
    back = client.post(f"{draft['url']}/publish", headers=bearer(course["key"]), json={"version": 1}).json
    assert (back["status"], back["current_version"]) == ("published", 1)
    versions = client.get(f"{draft['url']}/versions", headers=bearer(course["key"])).json
    assert [v["current"] for v in versions] == [False, True] and all(v["published_at"] for v in versions)
    assert client.post(f"{draft['url']}/unpublish", headers=bearer(course["key"])).json["status"] == "unpublished"


def test_a_code_exercise_proof_names_the_failing_check_and_a_fixed_one_is_published(app, client, course, database_url,
                                                                                   grading_judge):
    made = create(client, course, "double-it", code_files("grad_output * -2"))
    draft = made.json["exercises"][0]
    assert (made.status_code, draft["proof"]["status"], draft["proof"]["passed"]) == (201, "queued", None)
    refused = client.post(f"{draft['url']}/publish", headers=bearer(course["key"]))
    assert refused.status_code == 409 and "queued" in refused.json["detail"]

    assert 'gradquiz_queue_depth{kind="proof"} 1.0' in client.get("/metrics").get_data(as_text=True)

    grade_regrade_items(database_url, grading_judge)
    proof = client.get(draft["version_url"], headers=bearer(course["key"])).json["proof"]
    assert (proof["status"], proof["passed"]) == ("failed", False)
    assert {p["file"] for p in proof["problems"]} == {"reference.py"}
    # The failing check is named: the reference's wrong backward fails gradcheck.
    assert [(p["file"], p["field"]) for p in proof["problems"]] == [("reference.py", "check gradcheck")], proof["problems"]
    refused = client.post(f"{draft['url']}/publish", headers=bearer(course["key"]))
    assert refused.status_code == 409
    assert refused.json["errors"][0]["field"] == "reference.py: check gradcheck"
    assert "by backward and 2 by finite differences" in refused.json["errors"][0]["message"]

    fixed = client.put(draft["url"], headers=bearer(course["key"]), json={"files": code_files()}).json
    assert (fixed["version"], fixed["proof"]["status"]) == (2, "queued")
    grade_regrade_items(database_url, grading_judge)
    proof = client.get(fixed["version_url"], headers=bearer(course["key"])).json["proof"]
    assert proof["passed"] is True, proof
    assert any(step["subject"].startswith("wrong/") for step in proof["steps"])
    published = client.post(f"{draft['url']}/publish", headers=bearer(course["key"])).json
    assert (published["status"], published["current_version"]) == ("published", 2)

    # The way back: version 1 never passed; a proven older version may be published again.
    assert client.post(f"{draft['url']}/publish", headers=bearer(course["key"]), json={"version": 1}).status_code == 409
    with app.app_context():
        assert db_session().scalar(select(Exercise.current_version).where(Exercise.slug == "double-it")) == 2


def test_the_worker_publishes_a_version_saved_to_be_published_once_proven(app, course, database_url, grading_judge):
    from service.models import Course
    from service.services import authoring

    with app.app_context():
        session = db_session()
        saved = authoring.save_draft(session, session.get_one(Course, course["id"]), "double-synced", code_files(),
                                     author="git sync", source="git", note="abc123", publish_when_proven=True)
        session.commit()
        assert (saved.created, saved.exercise.published, saved.proof_job is not None) == (True, False, True)
    grade_regrade_items(database_url, grading_judge)
    with app.app_context():
        exercise = db_session().scalar(select(Exercise).where(Exercise.slug == "double-synced"))
        version = exercise.version
        assert (exercise.published, version.proof_status, version.note, version.source) == (True, "passed", "abc123", "git")
        assert version.published_at is not None and version.proven_at is not None
        assert version.proof["passed"] is True


def test_format_problems_fail_the_version_at_once_naming_the_field(client, course):
    files = quiz_files()
    files["exercise.toml"] = files["exercise.toml"].replace("difficulty = ", "difficulty = 9 #", 1)
    draft = create(client, course, "broken-quiz", files).json["exercises"][0]
    assert (draft["status"], draft["proof"]["status"], draft["proof"]["passed"]) == ("draft", "failed", False)
    assert [(p["file"], p["field"]) for p in draft["proof"]["problems"]] == [("exercise.toml", "difficulty")]
    refused = client.post(f"{draft['url']}/publish", headers=bearer(course["key"]))
    assert refused.status_code == 409 and refused.json["errors"][0]["field"] == "exercise.toml: difficulty"
    # Still listed, and deleted: no learner answered it.
    assert client.get(draft["url"], headers=bearer(course["key"])).json["status"] == "draft"
    assert client.delete(draft["url"], headers=bearer(course["key"])).status_code == 204
    assert client.get(draft["url"], headers=bearer(course["key"])).status_code == 404


def test_json_files_follow_the_archives_rules_for_names(app, client, course):
    before = row_counts(app)
    for name in ("../x.py", "/etc/x", "wrong\\x.py"):
        refused = create(client, course, "bad-names", quiz_files() | {name: "x"})
        assert refused.status_code == 422, refused.json
        assert [e["field"] for e in refused.json["errors"]] == [f"json.files.{name}.key"], refused.json
    assert row_counts(app) == before


def test_slugs_are_unique_across_the_catalog_and_courses_without_naming_the_owner(client, course):
    assert create(client, course, "mine", quiz_files()).status_code == 201
    for slug in (QUIZ_SOURCE, "mine"):
        taken = create(client, course, slug, quiz_files(), other=True)
        assert taken.status_code == 409 and "taken" in taken.json["detail"], taken.json
        assert "course" not in taken.json["detail"] and "catalog" not in taken.json["detail"]
    assert create(client, course, "assignment", quiz_files()).status_code == 422
    # PUT on a slug that is not the course's: 404, as for no exercise.
    put = client.put(f"{course['other_url']}/mine", headers=bearer(course["other_key"]), json={"files": quiz_files()})
    assert put.status_code == 404


def test_another_course_reaches_nothing_of_this_ones(client, course):
    url = create(client, course, "mine", quiz_files()).json["exercises"][0]["url"]
    assert client.post(f"{url}/publish", headers=bearer(course["key"])).status_code == 200
    other = course["other_key"]
    for method, path, body in (("GET", url, None), ("PUT", url, {"files": quiz_files("x")}), ("DELETE", url, None),
                               ("GET", f"{url}/versions", None), ("GET", f"{url}/versions/1", None),
                               ("GET", f"{url}/diff?from=1&to=1", None), ("POST", f"{url}/versions/1/prove", None),
                               ("POST", f"{url}/publish", {}), ("POST", f"{url}/unpublish", None),
                               ("GET", course["url"], None), ("POST", course["url"], {"slug": "new-one", "files": quiz_files()})):
        response = client.open(path, method=method, headers=bearer(other), json=body)
        assert response.status_code == 404, (method, path, response.json)
    # Through its own course's URL, the other course's key does not see it either.
    assert client.get(f"/api/v1/courses/{course['other']}/exercises/mine", headers=bearer(other)).status_code == 404
    assert client.get(f"/api/v1/courses/{course['other']}/exercises", headers=bearer(other)).json == []


def _zip(entries: dict[str, bytes], symlinks: tuple[str, ...] = ()) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED
            if name in symlinks:
                info.external_attr = (0o120777 << 16)
            archive.writestr(info, data)
    return buffer.getvalue()


def _folder(slug: str, files: dict[str, str], top: str = "") -> dict[str, bytes]:
    return {f"{top}{slug}/{path}": text.encode() for path, text in files.items()}


def upload(client, course, body: bytes, content_type: str = "application/zip"):
    return client.post(course["url"], headers=bearer(course["key"]) | {"Content-Type": content_type}, data=body)


def test_a_zip_of_two_folders_in_a_top_folder_makes_two_drafts(client, course):
    body = _zip(_folder("zip-one", quiz_files(), "course-repo/") | _folder("zip-two", quiz_files("Two"), "course-repo/")
                | {"course-repo/.git/config": b"x", "__MACOSX/course-repo/._zip-one": b"\x00\xff"})
    made = upload(client, course, body)
    assert made.status_code == 201, made.json
    assert [(d["slug"], d["version"], d["proof"]["status"]) for d in made.json["exercises"]] == [
        ("zip-one", 1, "passed"), ("zip-two", 1, "passed")]
    versions = client.get(f"{course['url']}/zip-two/versions", headers=bearer(course["key"])).json
    assert versions[0]["source"] == "upload"


def test_a_tar_gz_is_read_too(client, course):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in _folder("tar-one", quiz_files()).items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    made = upload(client, course, buffer.getvalue(), "application/gzip")
    assert made.status_code == 201 and made.json["exercises"][0]["slug"] == "tar-one"


def _tar_with_link() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        info = tarfile.TarInfo("linked/exercise.toml")
        info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
        archive.addfile(info)
    return buffer.getvalue()


@pytest.mark.parametrize(("case", "entry"), [
    ("dot-dot", "good/../x"), ("absolute", "/etc/x"), ("symlink", "good/starter.py"), ("bomb", "good/bomb.txt"),
    ("too-many", "good/f199.txt"), ("duplicate", "good/exercise.toml"), ("tar-link", "linked/exercise.toml")])
def test_unsafe_archives_are_refused_naming_the_entry_and_nothing_is_written(app, client, course, case, entry):
    good = _folder("good", quiz_files())
    if case == "dot-dot":
        body = _zip(good | {entry: b"x"})
    elif case == "absolute":
        body = _zip(good | {entry: b"x"})
    elif case == "symlink":
        body = _zip(good | {entry: b"/etc/passwd"}, symlinks=(entry,))
    elif case == "bomb":
        body = _zip(good | {entry: b"\0" * (9 * 1024 * 1024)})
    elif case == "too-many":
        body = _zip(good | {f"good/f{i}.txt": b"x" for i in range(201)})
    elif case == "duplicate":
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive, pytest.warns(UserWarning, match="Duplicate name"):
            for name, data in [*good.items(), (entry, b"again")]:
                archive.writestr(name, data)
        body = buffer.getvalue()
    else:
        body = _tar_with_link()
    before = row_counts(app)
    refused = upload(client, course, body, "application/gzip" if case == "tar-link" else "application/zip")
    assert refused.status_code == 422, refused.json
    assert refused.mimetype == "application/problem+json"
    assert entry in refused.json["detail"] and refused.json["errors"][0]["field"] == entry
    assert "nothing was saved" in refused.json["detail"]
    assert row_counts(app) == before


def test_a_taken_slug_in_an_archive_writes_none_of_its_exercises(app, client, course):
    before = row_counts(app)
    refused = upload(client, course, _zip(_folder("fresh-one", quiz_files()) | _folder(QUIZ_SOURCE, quiz_files())))
    assert refused.status_code == 409
    assert row_counts(app) == before


def test_proofs_are_rate_limited_per_course(make_app, client_key, client_key_for):
    app = make_app(proofs_rate_limit="2/minute")
    client = app.test_client()
    course_id = client.post("/api/v1/courses", headers=bearer(client_key),
                            json={"external_id": "limited", "title": "Limited"}).json["id"]
    instructor = client_key_for(app, "prof", Role.INSTRUCTOR)
    url = f"/api/v1/courses/{course_id}/exercises"
    assert client.post(url, headers=bearer(instructor), json={"slug": "one-quiz", "files": quiz_files()}).status_code == 201
    assert client.post(f"{url}/one-quiz/versions/1/prove", headers=bearer(instructor)).status_code == 202
    limited = client.post(f"{url}/one-quiz/versions/1/prove", headers=bearer(instructor))
    assert limited.status_code == 429 and int(limited.headers["Retry-After"]) >= 1
    assert limited.mimetype == "application/problem+json"


def test_a_courses_learner_reads_it_once_published_and_attempts_keep_their_version(client, course):
    url = create(client, course, "kept-quiz", quiz_files()).json["exercises"][0]["url"]
    client.post(f"{url}/publish", headers=bearer(course["key"]))
    ada = client.post("/api/v1/learner-tokens", headers=bearer(course["key"]),
                      json={"learner": "ada", "exercises": ["kept-quiz"]}).json["token"]
    # Another course's learner (her token for a catalog exercise) is told it does not exist.
    strangers_ada = client.post("/api/v1/learner-tokens", headers=bearer(course["other_key"]),
                                json={"learner": "ada", "exercises": [QUIZ_SOURCE]}).json["token"]
    detail = client.get(url, headers=bearer(ada))
    assert detail.status_code == 200 and detail.json["version"] == 1 and "status" not in detail.json
    assert detail.headers["Cache-Control"] == "private, no-store"
    assert client.get(url, headers=bearer(strangers_ada)).status_code == 404
    client.post(f"{url}/unpublish", headers=bearer(course["key"]))
    assert client.get(url, headers=bearer(ada)).status_code == 404  # unpublished: no learner sees it
    client.post(f"{url}/publish", headers=bearer(course["key"]))

    first = client.post("/api/v1/exercises/kept-quiz/attempts", headers=bearer(ada), json={"answer": "none-each"})
    assert (first.status_code, first.json["exercise_version"]) == (201, 1), first.json
    client.put(url, headers=bearer(course["key"]), json={"files": quiz_files("Second")})
    assert client.post(f"{url}/publish", headers=bearer(course["key"])).json["current_version"] == 2
    second = client.post("/api/v1/exercises/kept-quiz/attempts", headers=bearer(ada), json={"answer": "none-each"})
    assert second.json["exercise_version"] == 2
    assert client.get(f"/api/v1/attempts/{first.json['id']}", headers=bearer(ada)).json["exercise_version"] == 1
    # Answered: it may no longer be deleted (unpublished instead).
    refused = client.delete(url, headers=bearer(course["key"]))
    assert refused.status_code == 409 and "unpublish" in refused.json["detail"]


@pytest.mark.backends("postgresql")
def test_with_celery_a_proof_is_sent_to_the_grading_queue_once_committed(app, make_app, client_key, client_key_for):
    import base64
    import json
    import uuid

    import redis

    from service.jobs.dispatch import QUEUE, TASK_NAMES

    broker_url = "redis://127.0.0.1:6379/12"
    connection = redis.Redis.from_url(broker_url)
    connection.flushdb()
    try:
        client = make_app(grading_backend="celery", celery_broker_url=broker_url).test_client()
        course_id = client.post("/api/v1/courses", headers=bearer(client_key),
                                json={"external_id": "celery", "title": "Celery"}).json["id"]
        made = client.post(f"/api/v1/courses/{course_id}/exercises", headers=bearer(client_key_for(app, "prof", Role.INSTRUCTOR)),
                           json={"slug": "double-sent", "files": code_files()})
        assert made.status_code == 201
        [raw] = connection.lrange(QUEUE, 0, -1)
        message = json.loads(raw)
        [proof_id], _kwargs, _embed = json.loads(base64.b64decode(message["body"]))
        assert message["headers"]["task"] == TASK_NAMES[ExerciseProof]
        with app.app_context():
            assert db_session().get_one(ExerciseProof, uuid.UUID(proof_id)).dispatched_at is not None
    finally:
        connection.flushdb()
        connection.close()


def test_a_proof_the_workers_give_up_on_fails_its_version_saying_so(app, client, course, database_url):
    from sqlalchemy import update

    draft = create(client, course, "double-stuck", code_files()).json["exercises"][0]
    with app.app_context():  # as a job whose workers kept dying on it leaves it
        db_session().execute(update(ExerciseProof).values(tries=3))
        db_session().commit()
    grade_regrade_items(database_url)  # the claim stores the internal error: no judge runs
    proof = client.get(draft["version_url"], headers=bearer(course["key"])).json["proof"]
    assert (proof["status"], proof["problems"][0]["field"]) == ("failed", "(grader)")
    again = client.post(f"{draft['url']}/versions/1/prove", headers=bearer(course["key"]))
    assert (again.status_code, again.json["proof"]["status"]) == (202, "queued")


def test_an_upload_may_be_larger_than_other_bodies_up_to_its_own_limit(make_app, client_key, client_key_for):
    app = make_app(upload_max_bytes=400 * 1024)
    client = app.test_client()
    course = authoring_courses(app, client, client_key, client_key_for)
    # Past MAX_REQUEST_BYTES (256 KiB), within the upload's limit.
    padded = quiz_files() | {"notes/one.md": "x" * (150 * 1024), "notes/two.md": "y" * (150 * 1024)}
    made = client.post(course["url"], headers=bearer(course["key"]), json={"slug": "big-one", "files": padded})
    assert made.status_code == 201 and made.json["exercises"][0]["proof"]["passed"] is True
    too_large = upload(client, course, b"PK" + b"\0" * (401 * 1024))
    assert too_large.status_code == 413 and too_large.mimetype == "application/problem+json"
