/* gradquiz grading dashboard: a small single-page app over /api/v1/admin, in plain ES modules.
 *
 * No framework and no build step. Every piece of API data reaches the page through
 * textContent, createElement and setAttribute (never an HTML string): learner ids, code, messages
 * and feedback are untrusted text. Links are built from "#/..." plus encodeURIComponent.
 * The page's Content-Security-Policy allows no inline script and no other origin.
 *
 * The modules: dom.js (building elements), format.js, api.js (the admin API, the key), charts.js
 * (SVG), router.js (sign-in and the address), views/*.js (one per page), and vocabulary.js, the
 * server's names for verdicts, statuses and sorts, made by the server itself.
 */

import { start } from "./router.js";
import { viewAttempt } from "./views/attempt.js";
import { viewAttempts } from "./views/attempts.js";
import { viewAuthoring, viewAuthoringCourses, viewExerciseEditor, viewNewExercise } from "./views/authoring.js";
import { viewCourse, viewCourses } from "./views/courses.js";
import { viewExercise } from "./views/exercise.js";
import { viewLearner } from "./views/learner.js";
import { viewOverrides } from "./views/overrides.js";
import { viewOverview } from "./views/overview.js";
import { viewPlatforms } from "./views/platforms.js";
import { viewRegrade, viewRegrades } from "./views/regrades.js";
import { viewClientRules, viewLinkRules, viewLinks } from "./views/rules.js";

const ROUTES = [
  [/^\/?$/, viewOverview, "overview"],
  [/^\/courses$/, viewCourses, "courses"],
  [/^\/courses\/(\d+)$/, viewCourse, "courses"],
  [/^\/authoring$/, viewAuthoringCourses, "authoring"],
  [/^\/courses\/(\d+)\/authoring$/, viewAuthoring, "authoring"],
  [/^\/courses\/(\d+)\/authoring\/new\/([a-z_]+)$/, viewNewExercise, "authoring"],
  [/^\/courses\/(\d+)\/authoring\/([^/]+)$/, viewExerciseEditor, "authoring"],
  [/^\/exercises\/([^/]+)$/, viewExercise, "overview"],
  [/^\/exercises\/([^/]+)\/clients\/(\d+)\/rules$/, viewClientRules, "links"],
  [/^\/attempts$/, viewAttempts, "attempts"],
  [/^\/attempts\/([^/]+)$/, viewAttempt, "attempts"],
  [/^\/learners\/([^/]+)$/, viewLearner, "attempts"],
  [/^\/regrades$/, viewRegrades, "regrades"],
  [/^\/regrades\/([^/]+)$/, viewRegrade, "regrades"],
  [/^\/overrides$/, viewOverrides, "overrides"],
  [/^\/links$/, viewLinks, "links"],
  [/^\/links\/(\d+)$/, viewLinkRules, "links"],
  [/^\/links\/(\d+)\/exercises\/([^/]+)$/, viewLinkRules, "links"],
  [/^\/platforms$/, viewPlatforms, "platforms"],
];

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", () => start(ROUTES));
else start(ROUTES);
