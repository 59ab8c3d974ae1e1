"""Every response carries X-Content-Type-Options: nosniff: JSON, problems, a server error, pages and files."""

from service.catalog import load_catalog
from tests.conftest import EXERCISES_DIR
from tests.helpers import bearer, correct_answer


def test_every_response_says_nosniff(app, client_key):
    @app.route("/boom")
    def boom():
        raise RuntimeError("boom")

    app.config["PROPAGATE_EXCEPTIONS"] = False
    client = app.test_client()
    quiz = next(e for e in load_catalog(EXERCISES_DIR)[0] if e.spec["kind"] == "single_choice")
    created = client.post(f"/api/v1/exercises/{quiz.slug}/attempts", headers=bearer(client_key),
                          json={"learner": "ada", "answer": correct_answer(quiz.spec)})
    assert created.status_code == 201
    responses = [
        created,
        client.get("/api/v1/exercises"),                                       # JSON
        client.get("/api/v1/learners/ada/attempts", headers=bearer(client_key)),
        client.get("/api/v1/nothing-here"),                                    # a problem
        client.get("/api/v1/learners/ada/attempts"),                           # 401
        client.post("/api/v1/exercises", data="x", content_type="text/plain"),  # 405/415
        client.get("/api/v1/openapi.json"),
        client.get("/healthz"),
        client.get("/lti/jwks"),
        client.get("/learn"),                                                  # pages and files
        client.get("/admin"),
    ]
    responses.append(client.get("/boom"))
    assert responses[-1].status_code == 500
    for response in responses:
        assert response.headers.get("X-Content-Type-Options") == "nosniff", (response.request.path, response.status)
