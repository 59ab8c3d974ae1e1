"""A learner's reference results of a code exercise, prepared before their first grade (issue 37):
queued by a learner token or an LTI launch that names the exercise, made by a grading worker,
read by the grade of whichever worker claims the learner's attempt."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import select

from service.config import PROJECT_ROOT, Settings
from service.extensions import db_session
from service.jobs.worker import Worker
from service.models import Attempt, VariantPreparation
from service.variants import variant_key
from tests.conftest import GRADING_SECRET
from tests.helpers import bearer

CLAMP = "clamp-function"
QUIZ = "clampfn-backward-return-count"
REFERENCE = (PROJECT_ROOT / "exercises" / CLAMP / "reference.py").read_text()
WRONG = (PROJECT_ROOT / "exercises" / CLAMP / "wrong" / "zero_for_bounds.py").read_text()


@pytest.fixture(scope="module")
def other_judge():
    """A second grading worker's judge: the same secret, none of the first one's memory."""
    from service.grading.judge import Judge

    with Judge(GRADING_SECRET, slots=1, timeout=10.0, custom_ops=False) as judge:
        yield judge


def mint(client, key, learner, exercises):
    response = client.post("/api/v1/learner-tokens", headers=bearer(key),
                           json={"learner": learner, "exercises": exercises})
    assert response.status_code == 200, response.json
    return response.json["token"]


def preparations(app) -> list[VariantPreparation]:
    with app.app_context():
        return list(db_session().scalars(select(VariantPreparation).order_by(VariantPreparation.created_at)))


def work(app, database_url, judge) -> int:
    """Every queued job, done by a worker holding `judge`; how many there were."""
    worker = Worker(Settings.from_env({}, database_url=database_url, env="testing"), judge, f"w-{uuid.uuid4().hex[:6]}")
    done = 0
    while worker.run_once():
        done += 1
    return done


def submit_and_grade(app, client, token, code, database_url, judge) -> dict:
    """The learner's attempt as the worker stored it (its whole result, timings included)."""
    response = client.post(f"/api/v1/exercises/{CLAMP}/attempts", json={"code": code}, headers=bearer(token))
    assert response.status_code == 202, response.json
    work(app, database_url, judge)
    with app.app_context():
        attempt = db_session().get(Attempt, uuid.UUID(response.json["id"]))
        assert attempt is not None and attempt.status == "graded"
        return {"score": attempt.score, "result": attempt.result}


def test_a_learner_token_queues_the_preparation_of_each_named_code_exercise_once(app, client, client_key):
    mint(client, client_key, "ada", [CLAMP, QUIZ])
    rows = preparations(app)
    # The quiz needs none: only the code exercise's current version, in the learner's variant.
    assert [(r.learner, r.status) for r in rows] == [("ada", "queued")]
    mint(client, client_key, "ada", [CLAMP])
    mint(client, client_key, "grace", None)  # every exercise: nothing named, nothing prepared
    assert [r.id for r in preparations(app)] == [rows[0].id]


def test_a_client_has_at_most_so_many_preparations_waiting(app, client, client_key, monkeypatch, caplog):
    from sqlalchemy import update

    from service.services import preparations as prep

    monkeypatch.setattr(prep, "MAX_QUEUED_PER_CLIENT", 2)
    for learner in ("ada", "grace", "lin"):
        mint(client, client_key, learner, [CLAMP, "broadcast-multiply"])
    # ada's two fill the room: grace's and lin's tokens are issued, their first grades run the reference.
    assert sorted((r.learner, r.status) for r in preparations(app)) == [("ada", "queued"), ("ada", "queued")]
    assert "2 variant preparations waiting (at most 2): 2 not queued" in caplog.text
    with app.app_context():  # a worker took one: room for one more
        db_session().execute(update(VariantPreparation).where(VariantPreparation.id == preparations(app)[0].id)
                             .values(status="graded"))
        db_session().commit()
    mint(client, client_key, "grace", [CLAMP, "broadcast-multiply"])
    assert sorted(r.learner for r in preparations(app)) == ["ada", "ada", "grace"]


def test_a_prepared_variant_is_graded_on_another_worker_without_running_the_reference(
        app, client, client_key, database_url, grading_judge, other_judge):
    learner = f"ada-{uuid.uuid4().hex[:8]}"
    token = mint(client, client_key, learner, [CLAMP])
    assert work(app, database_url, grading_judge) == 1
    (prepared,) = preparations(app)
    assert prepared.status == "graded" and prepared.result["status"] == "prepared"
    assert prepared.result["stored"]["reference"]["cases"]
    variant = variant_key(prepared.client_id, learner)
    assert grading_judge.has_reference({"slug": CLAMP, **_payload(app, prepared)}, variant=variant)

    # The other worker never ran the reference for this learner: it reads the stored results.
    right = submit_and_grade(app, client, token, REFERENCE, database_url, other_judge)
    assert right["score"] == 1.0
    assert "reference_ms" not in right["result"]["timings"]
    wrong = submit_and_grade(app, client, token, WRONG, database_url, other_judge)
    # The same verdict the first worker, which ran the reference itself, gives.
    same = grading_judge.grade(_exercise(app, prepared), WRONG, variant=variant)
    assert wrong["result"]["score"] == same["score"] < 1.0
    assert wrong["result"]["likely_causes"] == same["likely_causes"]
    assert [c["name"] for c in wrong["result"]["checks"] if not c["passed"]] == \
        [c["name"] for c in same["checks"] if not c["passed"]]


def test_a_first_grade_with_nothing_prepared_runs_the_reference_and_keeps_it(
        app, client, client_key, database_url, other_judge):
    learner = f"grace-{uuid.uuid4().hex[:8]}"
    token = mint(client, client_key, learner, None)  # names no exercise: nothing queued
    assert preparations(app) == []
    graded = submit_and_grade(app, client, token, REFERENCE, database_url, other_judge)
    assert graded["score"] == 1.0 and graded["result"]["timings"]["reference_ms"] > 0
    (kept,) = preparations(app)
    assert (kept.learner, kept.status) == (learner, "graded") and kept.result["stored"]["key"]


def test_results_stored_under_another_secret_are_not_used(app, client, client_key, database_url, other_judge):
    from service.grading.judge import Judge

    learner = f"lin-{uuid.uuid4().hex[:8]}"
    token = mint(client, client_key, learner, [CLAMP])
    with Judge(b"another-deployments-secret-0123456789", slots=1, timeout=10.0, custom_ops=False) as elsewhere:
        work(app, database_url, elsewhere)
    (prepared,) = preparations(app)
    foreign_key = prepared.result["stored"]["key"]
    graded = submit_and_grade(app, client, token, REFERENCE, database_url, other_judge)
    # Their inputs were another secret's: the reference runs again, on this secret's inputs.
    assert graded["score"] == 1.0 and graded["result"]["timings"]["reference_ms"] > 0
    (replaced,) = preparations(app)
    assert replaced.result["stored"]["key"] != foreign_key


def _payload(app, prepared: VariantPreparation) -> dict:
    exercise = _exercise(app, prepared)
    return {"spec": exercise["spec"], "files": exercise["files"]}


def _exercise(app, prepared: VariantPreparation) -> dict:
    from service.models import ExerciseVersion

    with app.app_context():
        version = db_session().get(ExerciseVersion, prepared.exercise_version_id)
        assert version is not None
        return {"slug": CLAMP, "spec": version.content["spec"], "files": version.content["files"]}


def test_a_database_that_fails_the_stored_results_costs_a_reference_run_not_the_grade():
    from contextlib import contextmanager

    from sqlalchemy.exc import OperationalError

    from service.services import preparations as prep

    class Judge:
        stored = "unset"

        def has_reference(self, exercise, *, variant=None):
            return False

        def grade(self, exercise, code, *, variant=None, stored=None, on_prepared=None):
            self.stored = stored
            on_prepared("results the reference made")  # it ran: the grade keeps them
            return {"score": 1.0}

    @contextmanager
    def busy(write):
        raise OperationalError("BEGIN IMMEDIATE", None, Exception("database is locked"))
        yield

    judge = Judge()
    result = prep.grade_in_variant(judge, busy, {"slug": CLAMP}, REFERENCE, version_id=1, client_id=1, learner="ada")
    assert result == {"score": 1.0} and judge.stored is None


def test_a_new_current_version_drops_the_other_versions_preparations(app, client, client_key, tmp_path):
    import shutil

    from service.catalog.loader import load_catalog
    from service.catalog.sync import sync_catalog
    from tests.conftest import EXERCISES_DIR

    other = "broadcast-multiply"
    mint(client, client_key, "ada", [CLAMP, other])
    mint(client, client_key, "grace", [CLAMP])
    before = {(r.learner, _slug_of(app, r.exercise_version_id)): r.exercise_version_id for r in preparations(app)}
    assert set(before) == {("ada", CLAMP), ("ada", other), ("grace", CLAMP)}

    # The clamp exercise's files change: its new version is current, its old preparations go.
    root = tmp_path / "exercises"
    shutil.copytree(EXERCISES_DIR / CLAMP, root / CLAMP)
    spec = root / CLAMP / "exercise.toml"
    spec.write_text(spec.read_text().replace('title = "', 'title = "Revised: ', 1))
    changed, problems = load_catalog(root)
    assert not problems, problems
    with app.app_context():
        assert sync_catalog(db_session(), changed, unpublish_missing=False).updated == [CLAMP]
        db_session().commit()
    assert [(r.learner, r.exercise_version_id) for r in preparations(app)] == [("ada", before[("ada", other)])]

    # The next token naming it prepares the new version.
    mint(client, client_key, "grace", [CLAMP])
    (fresh,) = [r for r in preparations(app) if r.learner == "grace"]
    assert _slug_of(app, fresh.exercise_version_id) == CLAMP and fresh.exercise_version_id != before[("grace", CLAMP)]


def test_publishing_another_version_of_a_course_exercise_drops_the_others_preparations(
        app, client, client_key, client_key_for):
    from service.models import ExerciseVersion
    from tests.api.support import authoring_courses, quiz_files

    course = authoring_courses(app, client, client_key, client_key_for)
    url = client.post(course["url"], headers=bearer(course["key"]),
                      json={"slug": "bounds-quiz", "files": quiz_files()}).json["exercises"][0]["url"]
    assert client.put(url, headers=bearer(course["key"]), json={"files": quiz_files("Revised")}).status_code == 201
    mint(client, client_key, "ada", [CLAMP])  # the catalog's, untouched by the course's publishing
    (clamp,) = preparations(app)
    with app.app_context():
        session = db_session()
        first, second = session.scalars(select(ExerciseVersion.id).join(ExerciseVersion.exercise).where(
            ExerciseVersion.exercise.has(slug="bounds-quiz")).order_by(ExerciseVersion.number))
        # Rows are kept per version, whatever the exercise's kind: one on each of the two versions.
        for version_id in (first, second):
            session.add(VariantPreparation(exercise_version_id=version_id, client_id=clamp.client_id, learner="ada",
                                           status="graded", tries=0))
        session.commit()
    clamp_row = clamp.exercise_version_id

    def versions_prepared() -> set[int]:
        return {r.exercise_version_id for r in preparations(app)}

    assert client.post(f"{url}/publish", headers=bearer(course["key"]), json={"version": 2}).status_code == 200
    assert versions_prepared() == {second, clamp_row}
    assert client.post(f"{url}/publish", headers=bearer(course["key"]), json={"version": 1}).status_code == 200
    assert versions_prepared() == {clamp_row}  # the way back: version 1's were dropped with version 2's publishing
    assert client.post(f"{url}/unpublish", headers=bearer(course["key"])).status_code == 200
    assert versions_prepared() == {clamp_row}


def _slug_of(app, version_id: int) -> str:
    from service.models import ExerciseVersion

    with app.app_context():
        version = db_session().get(ExerciseVersion, version_id)
        assert version is not None
        return version.exercise.slug
