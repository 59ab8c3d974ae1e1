"""Real worker processes: one killed with SIGKILL mid-grade loses nothing."""

import signal

from tests.api.support import CLAMP_REFERENCE, attempt_state, start_worker, wait_for
from tests.helpers import bearer

SLOW_REFERENCE = "import time\ntime.sleep(4)\n" + CLAMP_REFERENCE








def test_killed_worker_mid_grade_is_graded_again_once(app, client, client_key, database_url):
    import uuid

    slow = client.post("/api/v1/exercises/clamp-function/attempts", headers=bearer(client_key),
                       json={"learner": "ada", "code": SLOW_REFERENCE}).json["id"]
    slow_id = uuid.UUID(slow)
    first = start_worker(database_url)
    try:
        try:
            wait_for(lambda: attempt_state(app, slow_id)[0] == "running", 60)
        except AssertionError as timeout:
            first.kill()
            raise AssertionError(first.communicate()[1][-3000:]) from timeout
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
        # Queued while no worker runs: nothing is lost, it waits in the database.
        queued = uuid.UUID(client.post("/api/v1/exercises/clamp-function/attempts", headers=bearer(client_key),
                                       json={"learner": "bob", "code": CLAMP_REFERENCE}).json["id"])
        assert attempt_state(app, queued)[0] == "queued"
    finally:
        if first.poll() is None:
            first.kill()
    second = start_worker(database_url)
    try:
        status, tries, score = wait_for(lambda: (s := attempt_state(app, slow_id))[0] == "graded" and s, 60)
        assert (tries, score) == (2, 1.0)
        assert wait_for(lambda: (s := attempt_state(app, queued))[0] == "graded" and s, 30)[2] == 1.0
    finally:
        second.terminate()
        _, stderr = second.communicate(timeout=30)
    assert second.returncode == 0, stderr[-2000:]
    body = client.get(f"/api/v1/attempts/{slow}", headers=bearer(client_key)).json
    assert body["report"]["status"] == "passed"
