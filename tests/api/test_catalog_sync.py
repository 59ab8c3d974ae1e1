"""`flask exercises sync|validate`: idempotent, versioned by content, nothing lost."""

import shutil

from sqlalchemy import event, select

from service.catalog import load_catalog, sync_catalog
from service.config import PROJECT_ROOT
from service.database import engine_for
from service.extensions import db_session
from service.models import Exercise, ExerciseVersion
from tests.helpers import bearer

SOURCE = PROJECT_ROOT / "exercises"
SLUG = "backward-none-for-bounds"


def copy_catalog(tmp_path, *slugs):
    root = tmp_path / "exercises"
    for slug in slugs:
        shutil.copytree(SOURCE / slug, root / slug)
    return root


def run(app, *args):
    return app.test_cli_runner().invoke(args=list(args))


def test_sync_is_idempotent(bare_app, tmp_path):
    root = copy_catalog(tmp_path, SLUG, "squarefn-gradient-at-four")
    first = run(bare_app, "exercises", "sync", "--dir", str(root))
    assert first.exit_code == 0, first.output
    assert "2 created, 0 updated, 0 unchanged" in first.output
    second = run(bare_app, "exercises", "sync", "--dir", str(root))
    assert "0 created, 0 updated, 2 unchanged, 0 unpublished" in second.output
    with bare_app.app_context():
        assert len(db_session().scalars(select(ExerciseVersion)).all()) == 2


def test_an_edit_makes_a_new_version_and_old_attempts_keep_theirs(bare_app, tmp_path, client_key_for):
    root = copy_catalog(tmp_path, SLUG)
    run(bare_app, "exercises", "sync", "--dir", str(root))
    client = bare_app.test_client()
    key = client_key_for(bare_app)
    old = client.post(f"/api/v1/exercises/{SLUG}/attempts", json={"learner": "ada", "answer": "none-each"},
                      headers=bearer(key)).json
    spec_file = root / SLUG / "exercise.toml"
    spec_file.write_text(spec_file.read_text().replace('title = "', 'title = "Revised: ', 1))
    assert "1 updated" in run(bare_app, "exercises", "sync", "--dir", str(root)).output

    detail = client.get(f"/api/v1/exercises/{SLUG}").json
    assert detail["version"] == 2 and detail["title"].startswith("Revised: ")
    new = client.post(f"/api/v1/exercises/{SLUG}/attempts", json={"learner": "ada", "answer": "none-each"},
                      headers=bearer(key)).json
    assert (old["exercise_version"], new["exercise_version"]) == (1, 2)
    assert client.get(f"/api/v1/attempts/{old['id']}", headers=bearer(key)).json["exercise_version"] == 1


def test_reverting_content_returns_to_the_same_version(bare_app, tmp_path):
    root = copy_catalog(tmp_path, SLUG)
    spec_file = root / SLUG / "exercise.toml"
    original = spec_file.read_text()
    run(bare_app, "exercises", "sync", "--dir", str(root))
    spec_file.write_text(original.replace("difficulty = 2", "difficulty = 3"))
    run(bare_app, "exercises", "sync", "--dir", str(root))
    spec_file.write_text(original)
    run(bare_app, "exercises", "sync", "--dir", str(root))
    with bare_app.app_context():
        exercise = db_session().scalar(select(Exercise).where(Exercise.slug == SLUG))
        assert exercise.current_version == 1
        assert [v.number for v in exercise.versions] == [1, 2]


def test_removed_exercise_is_unpublished_not_deleted(bare_app, tmp_path):
    root = copy_catalog(tmp_path, SLUG, "squarefn-gradient-at-four")
    run(bare_app, "exercises", "sync", "--dir", str(root))
    shutil.rmtree(root / "squarefn-gradient-at-four")
    assert "1 unpublished" in run(bare_app, "exercises", "sync", "--dir", str(root)).output
    client = bare_app.test_client()
    assert client.get("/api/v1/exercises/squarefn-gradient-at-four").status_code == 404
    assert [e["slug"] for e in client.get("/api/v1/exercises").json] == [SLUG]
    shutil.copytree(SOURCE / "squarefn-gradient-at-four", root / "squarefn-gradient-at-four")
    assert "1 updated" in run(bare_app, "exercises", "sync", "--dir", str(root)).output
    assert client.get("/api/v1/exercises/squarefn-gradient-at-four").status_code == 200


def test_topics_follow_the_content(bare_app, tmp_path):
    root = copy_catalog(tmp_path, SLUG)
    spec_file = root / SLUG / "exercise.toml"
    spec_file.write_text(spec_file.read_text().replace('topics = ["backward", "none-gradient", "clamp"]',
                                                       'topics = ["backward", "ctx"]'))
    run(bare_app, "exercises", "sync", "--dir", str(root))
    client = bare_app.test_client()
    assert client.get(f"/api/v1/exercises/{SLUG}").json["topics"] == ["backward", "ctx"]
    assert client.get("/api/v1/exercises?topic=clamp").json == []


def test_validate_fails_on_bad_content_and_sync_takes_only_the_valid_exercises(bare_app, tmp_path):
    root = copy_catalog(tmp_path, SLUG, "squarefn-gradient-at-four")
    spec_file = root / SLUG / "exercise.toml"
    spec_file.write_text(spec_file.read_text().replace("difficulty = 2", "difficulty = 7"))
    result = run(bare_app, "exercises", "validate", "--dir", str(root))
    assert result.exit_code == 1
    assert f"{SLUG}/exercise.toml:5: difficulty: required, an integer from 1 to 5" in result.output
    synced = run(bare_app, "exercises", "sync", "--dir", str(root))
    assert synced.exit_code == 0, synced.output  # `make run` goes on
    assert f"{SLUG}/exercise.toml:5: difficulty: required, an integer from 1 to 5" in synced.output
    assert "1 created" in synced.output and f"{SLUG}: invalid, not synced (no valid version yet)" in synced.output
    with bare_app.app_context():
        assert [e.slug for e in db_session().scalars(select(Exercise))] == ["squarefn-gradient-at-four"]


def test_an_exercise_made_invalid_keeps_serving_its_last_valid_version(bare_app, tmp_path, client_key_for):
    root = copy_catalog(tmp_path, SLUG, "squarefn-gradient-at-four")
    run(bare_app, "exercises", "sync", "--dir", str(root))
    client = bare_app.test_client()
    before = client.get(f"/api/v1/exercises/{SLUG}").json
    spec_file = root / SLUG / "exercise.toml"
    spec_file.write_text("unknown_key = 1\n" + spec_file.read_text().replace('title = "', 'title = "Revised: ', 1))
    other = root / "squarefn-gradient-at-four" / "exercise.toml"
    other.write_text(other.read_text().replace('title = "', 'title = "Also revised: ', 1))

    synced = run(bare_app, "exercises", "sync", "--dir", str(root))
    assert synced.exit_code == 0, synced.output
    assert f"{SLUG}/exercise.toml: (top level): unknown keys: unknown_key" in synced.output
    assert "1 updated" in synced.output and "0 unpublished, 1 kept at their last valid version" in synced.output
    assert f"{SLUG}: invalid, keeps its last valid version" in synced.output
    assert client.get(f"/api/v1/exercises/{SLUG}").json == before  # still published, same version and text
    assert client.get("/api/v1/exercises/squarefn-gradient-at-four").json["title"].startswith("Also revised: ")
    key = client_key_for(bare_app)
    attempt = client.post(f"/api/v1/exercises/{SLUG}/attempts", json={"learner": "ada", "answer": "none-each"},
                          headers=bearer(key))
    assert attempt.status_code == 201 and attempt.json["exercise_version"] == before["version"]

    spec_file.write_text(spec_file.read_text().replace("unknown_key = 1\n", ""))
    mended = run(bare_app, "exercises", "sync", "--dir", str(root))
    assert "1 updated" in mended.output and "kept" not in mended.output
    assert client.get(f"/api/v1/exercises/{SLUG}").json["title"].startswith("Revised: ")


def test_sync_refuses_a_catalog_folder_that_is_not_there(bare_app, tmp_path):
    root = copy_catalog(tmp_path, SLUG)
    run(bare_app, "exercises", "sync", "--dir", str(root))
    result = run(bare_app, "exercises", "sync", "--dir", str(tmp_path / "nowhere"))
    assert result.exit_code == 1 and "not a directory: nothing synced" in result.output
    assert bare_app.test_client().get(f"/api/v1/exercises/{SLUG}").status_code == 200


def test_sync_in_code_matches_the_cli(bare_app):
    exercises, _ = load_catalog(SOURCE)
    with bare_app.app_context():
        report = sync_catalog(db_session(), exercises)
        db_session().commit()
    assert sorted(report.created) == sorted(e.slug for e in exercises)


def test_the_history_reads_each_version_once_per_process_and_a_new_version_at_once(bare_app, tmp_path, client_key_for,
                                                                                  database_url):
    root = copy_catalog(tmp_path, SLUG)
    run(bare_app, "exercises", "sync", "--dir", str(root))
    client = bare_app.test_client()
    key = client_key_for(bare_app)
    history = f"/api/v1/learners/ada/attempts?exercise={SLUG}"
    assert client.post(f"/api/v1/exercises/{SLUG}/attempts", json={"learner": "ada", "answer": "omit"},
                       headers=bearer(key)).status_code == 201
    first = client.get(history, headers=bearer(key)).json["attempts"][0]
    # Wrong, and the default rules show the explanation after a pass only.
    assert (first["exercise_version"], first["correct"], first["explanation"]) == (1, False, None)

    statements = []
    engine = engine_for(database_url)
    listener = lambda *args: statements.append(args[2])  # noqa: E731
    event.listen(engine, "before_cursor_execute", listener)
    try:
        again = client.get(history, headers=bearer(key)).json["attempts"][0]
    finally:
        event.remove(engine, "before_cursor_execute", listener)
    assert again == first
    assert statements and not any("exercise_versions" in sql for sql in statements)  # kept by the process

    # Version 2 shows explanations always: the history follows the current version's rules at once,
    # with the explanation of the version the attempt answered.
    spec_file = root / SLUG / "exercise.toml"
    spec_file.write_text(spec_file.read_text() + '\n[rules]\nshow_explanation = "always"\n')
    assert "1 updated" in run(bare_app, "exercises", "sync", "--dir", str(root)).output
    after = client.get(history, headers=bearer(key)).json["attempts"][0]
    with bare_app.app_context():
        first_version = db_session().scalar(select(ExerciseVersion).where(ExerciseVersion.number == 1))
        assert after["exercise_version"] == 1 and after["explanation"] == first_version.spec["explanation"]


def test_the_history_reads_its_page_of_attempts_once(client, client_key, database_url):
    # The page's attempts are read once, then given their versions and shown under the rules: a
    # second read of the page (SelectPage.items runs its statement each time) doubled the history's
    # main statement.
    for answer in ("omit", "none-each"):
        assert client.post(f"/api/v1/exercises/{SLUG}/attempts", json={"learner": "ada", "answer": answer},
                           headers=bearer(client_key)).status_code == 201
    statements = []
    engine = engine_for(database_url)
    listener = lambda *args: statements.append(args[2])  # noqa: E731
    event.listen(engine, "before_cursor_execute", listener)
    try:
        history = client.get(f"/api/v1/learners/ada/attempts?exercise={SLUG}", headers=bearer(client_key))
    finally:
        event.remove(engine, "before_cursor_execute", listener)
    assert history.status_code == 200 and len(history.json["attempts"]) == 2
    pages = [sql for sql in statements if sql.lstrip().startswith("SELECT attempts.id,")]
    assert len(pages) == 1, statements


def test_the_history_of_one_exercise_finds_it_in_the_cache_of_current_versions(make_app, client_key_for, database_url):
    # The learner page reloads ?exercise=<slug> after every submission: with the production caches
    # on, the slug is read from the cache a POST to the exercise fills, not looked up again.
    app = make_app(exercise_cache_seconds=5)
    with app.app_context():
        sync_catalog(db_session(), load_catalog(PROJECT_ROOT / "exercises")[0])
        db_session().commit()
    client, key = app.test_client(), client_key_for(app)
    slug = "call-through-apply"
    assert client.post(f"/api/v1/exercises/{slug}/attempts", json={"learner": "ada", "answer": "apply"},
                       headers=bearer(key)).status_code == 201
    sent = []
    engine = engine_for(database_url)
    listener = lambda _conn, _cursor, _sql, params, *_rest: sent.append(params)  # noqa: E731
    event.listen(engine, "before_cursor_execute", listener)
    try:
        history = client.get(f"/api/v1/learners/ada/attempts?exercise={slug}", headers=bearer(key))
        unknown = client.get("/api/v1/learners/ada/attempts?exercise=no-such-exercise", headers=bearer(key))
    finally:
        event.remove(engine, "before_cursor_execute", listener)
    assert history.status_code == 200 and [a["exercise"] for a in history.json["attempts"]] == [slug]
    assert sent and not any(slug in str(params) for params in sent)
    assert unknown.status_code == 404  # looked up once, then an entry of the cache too


def test_sync_records_publication_and_leaves_course_exercises_alone(bare_app, tmp_path):
    """A synced version is the catalog's, proven, and published when it becomes current; a course's
    exercise is neither unpublished by a sync nor overwritten by a folder of the same slug."""
    from service.auth import create_client
    from service.models import Course, Role
    from service.models.base import utcnow

    root = copy_catalog(tmp_path, SLUG, "squarefn-gradient-at-four")
    with bare_app.app_context():
        session = db_session()
        owner, _key = create_client(session, "lms", Role.CLIENT)
        course = Course(client_id=owner.id, external_id="c1", title="C1")
        session.add(course)
        session.flush()
        session.add(Exercise(slug="squarefn-gradient-at-four", kind="code", title="Ours", difficulty=1, published=True,
                             current_version=1, course_id=course.id, created_at=utcnow(), updated_at=utcnow()))
        session.commit()
    output = run(bare_app, "exercises", "sync", "--dir", str(root)).output
    assert "1 created" in output and "0 unpublished" in output and "slug held by a course" in output
    with bare_app.app_context():
        ours = db_session().execute(select(Exercise.title, Exercise.published)
                                    .where(Exercise.slug == "squarefn-gradient-at-four")).one()
        assert tuple(ours) == ("Ours", True)
        version = db_session().scalar(select(ExerciseVersion).join(Exercise).where(Exercise.slug == SLUG))
        assert (version.source, version.proof_status, version.author) == ("catalog", "passed", None)
        assert version.published_at is not None
