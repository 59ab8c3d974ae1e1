// The learner pages' script (service/learn): one bundle for /learn, /learn/{slug} and /learn/assignment, built by
// frontend/build.mjs into service/static/vendor/learn/learn.js.

import { LearnerSession } from "./session.js";
import { makeApi } from "./api.js";
import { initExercise } from "./exercise.js";
import { initLesson } from "./lesson.js";
import { initAssignment, linkBackToAssignment } from "./assignment.js";
import { initWayOn, watchPasses } from "./way-on.js";

const page = document.body.dataset.page;
const apiBase = document.body.dataset.api || "/api/v1";
const session = new LearnerSession(apiBase).start();
// On an exercise page, its answers are watched for a pass (way-on.js: "Next: <title>" after it).
const api = watchPasses(makeApi(apiBase, session));

// "preview" and "not-found": a shell (service/learn), whose script fetches the exercise with its token.
if (page === "exercise" || page === "preview" || page === "not-found") {
  linkBackToAssignment(session);
  initWayOn();
  initExercise({ api, session }).catch((error) => console.error(error));
} else if (page === "lesson") initLesson({ api, session });
else if (page === "assignment") initAssignment({ api, session }).catch((error) => console.error(error));
