"""The /admin dashboard end to end: a real headless Chromium against the app on a loopback port.

The data is made through the API as an LMS would (quiz attempts, one code attempt graded by a
worker), then the page is driven as a person would: sign in, read the charts, filter, open an
attempt, override its score, regrade an exercise whose answer key changed and apply it.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from service.config import PROJECT_ROOT
from service.frontend import VENDOR_DIR
from service.models.attempt import VERDICTS
from service.resources.dashboard import STATIC_DIR, VOCABULARY
from service.services.admin_search import SORTS
from tests.browser.support import expect, sign_in, submit_attempt, visible_identifiers
from tests.helpers import bearer

QUIZ = "backward-none-for-bounds"  # single choice; the correct choice is none-each
REGRADE_QUIZ = "call-through-apply"  # single choice; apply is correct until the test changes the key
BULK_QUIZ = "clampfn-backward-return-statement"  # 55 attempts: more than one page
UNTOUCHED = "apply-call-forms"  # no attempts: published and unpublished by the test
CODE = "clamp-function"
HOSTILE = "<img src=x onerror=alert(1)>"
WRONG_CODE = (PROJECT_ROOT / "exercises" / CODE / "wrong" / "forgot_grad_output.py").read_text()
UNPARSED_CODE = "class ClampFn(torch.autograd.Function:\n    pass\n"  # a syntax_error verdict
ADMIN = "/api/v1/admin"




@pytest.fixture(scope="module")
def seeded(live_server, live_worker) -> dict:
    api, key = live_server.api(), live_server.keys["lms-one"]
    ids = {}
    ids["ada"] = submit_attempt(api, key, QUIZ, "ada", answer="none-each")["id"]
    ids["bob"] = submit_attempt(api, key, QUIZ, "bob", answer="zero-number")["id"]
    submit_attempt(api, key, QUIZ, "chen", answer="omit")
    submit_attempt(api, key, QUIZ, "chen", answer="none-each")
    ids["hostile"] = submit_attempt(api, key, QUIZ, HOSTILE, answer="zero-number")["id"]
    for learner, answer in (("dana", "apply"), ("eve", "call-class"), ("fay", "instantiate-and-call")):
        ids[learner] = submit_attempt(api, key, REGRADE_QUIZ, learner, answer=answer)["id"]
    for i in range(55):
        submit_attempt(api, key, BULK_QUIZ, f"bulk-{i:02d}", answer="masked-none-none" if i % 2 else "only-x")
    queued = submit_attempt(api, key, CODE, "ada", code=WRONG_CODE)
    graded = api.get(f"/api/v1/attempts/{queued['id']}?wait=30", headers=bearer(key)).json
    assert graded["status"] == "graded", graded
    ids["code"] = queued["id"]
    unparsed = submit_attempt(api, key, CODE, "gus", code=UNPARSED_CODE)
    graded = api.get(f"/api/v1/attempts/{unparsed['id']}?wait=30", headers=bearer(key)).json
    assert graded["status"] == "graded" and graded["report"]["status"] == "syntax_error", graded
    ids["unparsed"] = unparsed["id"]
    live_server.wait_for_counters()
    return ids




def admin_get(live_server, path: str):
    return live_server.api().get(ADMIN + path, headers=bearer(live_server.keys["admin"]))


# ---- the static files -------------------------------------------------------------------------


SHARED_URL = "/vendor/shared/"  # what the dashboard shares with the learner pages, built from frontend/src
SHARED_DIR = VENDOR_DIR / "shared"


def scripts() -> list[str]:
    """The page's JavaScript modules in the folder, as paths below it (app.js, views/attempt.js, …)."""
    return sorted(str(path.relative_to(STATIC_DIR)) for path in STATIC_DIR.rglob("*.js"))


def test_page_and_assets_are_served_with_a_strict_policy(live_server):
    api = live_server.api()
    for path in ("/admin", "/admin/"):
        page = api.get(path)
        assert page.status_code == 200 and page.mimetype == "text/html"
        assert b'<script src="/admin/app.js" type="module"></script>' in page.data
        assert "no-store" in page.headers["Cache-Control"] and "no-cache" in page.headers["Cache-Control"]
    assert "app.js" in scripts() and "views/attempt.js" in scripts()
    assets = [(f"/admin/{name}", "text/javascript") for name in [*scripts(), "vocabulary.js"]]
    assets += [(f"{SHARED_URL}{path.name}", "text/javascript") for path in sorted(SHARED_DIR.glob("*.js"))]
    for path, mimetype in [*assets, ("/admin/style.css", "text/css")]:
        asset = api.get(path)
        assert asset.status_code == 200 and asset.mimetype == mimetype, path
        assert asset.headers["Cache-Control"] == "no-cache" and asset.headers["ETag"], path
        assert api.get(path, headers={"If-None-Match": asset.headers["ETag"]}).status_code == 304, path
        csp = asset.headers["Content-Security-Policy"]
        assert "default-src 'self'" in csp and "script-src 'self'" in csp and "unsafe-inline" not in csp
        assert asset.headers["X-Content-Type-Options"] == "nosniff"
    csp = api.get("/admin").headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in csp and "object-src 'none'" in csp
    # Nothing outside the folder, and no second copy of the files without the policy.
    assert api.get("/admin/../__init__.py").status_code == 404
    assert api.get("/admin/%2e%2e/config.py").status_code == 404
    assert api.get("/static/admin/app.js").status_code == 404


def test_the_script_never_writes_markup_from_strings():
    """API data (learner ids come from clients) reaches the page only as text. The modules it
    shares with the learner pages (/vendor/shared/) are held to the same rules."""
    shared = sorted(SHARED_DIR.glob("*.js"))
    assert shared, "no shared modules: make static"
    source = "".join((STATIC_DIR / name).read_text() for name in scripts()) + "".join(path.read_text() for path in shared)
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
        assert sink not in source, sink
    html = (STATIC_DIR / "index.html").read_text()
    assert not re.search(r"<script(?![^>]*\bsrc=)", html), "inline script"
    assert not re.search(r"\son[a-z]+\s*=", html), "inline event handler"
    # Nothing from another origin (the SVG namespace is a name, not a request).
    text = (html + source).replace("http://www.w3.org/2000/svg", "")
    assert "http://" not in text and "https://" not in text and "//cdn" not in text
    # Modules import (or re-export) only modules of this folder, by relative path, and the shared
    # modules the front-end build makes, on the same server.
    imports = re.findall(r'^(?:import|export) .* from "([^"]+)";$', source, re.M)
    assert imports and all(name.endswith(".js") and (name.startswith(("./", "../")) or (
        name.startswith(SHARED_URL) and (SHARED_DIR / name.removeprefix(SHARED_URL)).is_file())) for name in imports), imports
    assert any(name.startswith(SHARED_URL) for name in imports)
    # A view may load a module the front-end build makes only when it opens (the authoring view's
    # CodeMirror editor), by its literal path on the same server.
    loaded = re.findall(r'import\("(/vendor/[^"]+\.js)"\)', source)
    assert source.count("import(") == len(loaded), "import() of something else than a built module"
    assert all((VENDOR_DIR / name.removeprefix("/vendor/")).is_file() for name in loaded), loaded


def test_the_page_takes_the_servers_names_from_the_server(live_server):
    """Verdicts, statuses and sorts come from /admin/vocabulary.js, made from the server's own
    definitions: no module keeps a copy of them."""
    module = live_server.api().get("/admin/vocabulary.js").get_data(as_text=True)
    for name, value in VOCABULARY.items():
        assert f"export const {name} = {json.dumps(value)};" in module
    assert VOCABULARY["VERDICTS"] == list(VERDICTS) and "too_large" in VOCABULARY["VERDICTS"]
    assert VOCABULARY["SORTS"] == list(SORTS)
    for name in scripts():
        source = (STATIC_DIR / name).read_text()
        for verdict in ("timeout", "syntax_error", "memory_limit", "too_large", "bad_output"):
            assert f'"{verdict}"' not in source, (name, verdict)


# ---- signing in -------------------------------------------------------------------------------


def test_sign_in_shows_the_problem_for_a_wrong_key_then_signs_in(page, live_server, seeded):
    page.goto("/admin")
    assert page.is_visible("#signin") and page.is_hidden("#topbar")
    page.fill("#api-key", "gq_this-key-does-not-exist")
    page.click("#signin-submit")
    error = page.locator("#signin-error .problem")
    error.wait_for()
    assert "Unauthorized (401)" in error.inner_text() and "The API key is not valid." in error.inner_text()
    # A learner-facing client key is refused with the API's 403 detail.
    page.fill("#api-key", live_server.keys["lms-one"])
    page.click("#signin-submit")
    page.wait_for_selector("#signin-error .problem >> text=Forbidden (403)")
    assert "instructor and admin" in page.inner_text("#signin-error")
    assert page.evaluate("sessionStorage.length") == 0

    page.fill("#api-key", live_server.keys["admin"])
    page.click("#signin-submit")
    page.wait_for_selector("#topbar:not([hidden])")
    assert page.is_hidden("#signin")
    assert page.evaluate("Object.values(sessionStorage)") == [live_server.keys["admin"]]
    # A reload keeps the tab signed in; signing out forgets the key.
    page.reload()
    page.wait_for_selector("svg[data-chart=pass-rate]")
    page.click("#sign-out")
    assert page.is_visible("#signin") and page.evaluate("sessionStorage.length") == 0


def test_an_instructor_key_signs_in_too(page, live_server, seeded):
    sign_in(page, live_server.keys["teacher"])
    page.wait_for_selector("svg[data-chart=pass-rate]")


# ---- overview and exercise ----------------------------------------------------------------------


def test_overview_chart_has_one_bar_per_exercise_with_attempts(page, live_server, seeded):
    sign_in(page, live_server.keys["admin"])
    bars = page.locator("svg[data-chart=pass-rate] rect.bar")
    bars.first.wait_for()
    labels = sorted(bars.evaluate_all("bars => bars.map(b => b.dataset.label)"))
    assert labels == sorted([QUIZ, REGRADE_QUIZ, BULK_QUIZ, CODE])
    quiz_bar = page.locator(f"svg[data-chart=pass-rate] rect.bar[data-label='{QUIZ}']")
    # ada and chen passed, bob and the hostile learner did not: half of 4 learners.
    assert float(quiz_bar.get_attribute("data-value")) == pytest.approx(0.5)
    title = quiz_bar.locator("title").text_content()
    assert "50%" in title and "2 of 4 learners" in title
    # Every exercise is in the table, attempts or not; a bar leads to its exercise.
    expect(page.locator(f"tr[data-exercise='{UNTOUCHED}']")).to_have_count(1)
    page.click(f"svg[data-chart=pass-rate] a[href='#/exercises/{QUIZ}']")
    page.wait_for_selector("svg[data-chart=histogram]")
    assert page.url.endswith(f"#/exercises/{QUIZ}")


def test_exercise_view_shows_histogram_attempts_over_time_and_failures(page, live_server, seeded):
    sign_in(page, live_server.keys["admin"])
    page.goto(f"/admin#/exercises/{QUIZ}")
    histogram = page.locator("svg[data-chart=histogram] rect.bar")
    histogram.first.wait_for()
    assert histogram.count() == 10
    counts = histogram.evaluate_all("bars => bars.map(b => Number(b.dataset.value))")
    assert sum(counts) == 4 and counts[0] == 2 and counts[-1] == 2  # best scores: two 0s, two 1s
    per_day = page.locator("svg[data-chart=attempts-by-day] rect.bar:not(.bar-inner)")
    assert sum(per_day.evaluate_all("bars => bars.map(b => Number(b.dataset.value))")) == 5
    # The numbers behind the charts are there as tables too.
    assert page.locator("details.chart-table").count() == 2

    page.goto(f"/admin#/exercises/{CODE}")
    page.wait_for_selector("text=Most common failing checks")
    page.wait_for_selector("tr[data-name=gradcheck]")
    # Named as the learner pages name them (GET /api/v1/terms), the stored name kept for staff as a title.
    cause = page.locator("tr[data-name=forgot_grad_output] a")
    expect(cause).to_have_count(1)
    expect(cause).to_have_attribute("href", re.compile(r"likely_cause=forgot_grad_output"))
    expect(cause).to_have_text("backward ignores grad_output")
    expect(page.locator("tr[data-name=gradcheck] td").first).to_have_text("Numerical gradient check")
    assert visible_identifiers(page) == []


def test_publish_and_unpublish_an_exercise(page, live_server, seeded):
    sign_in(page, live_server.keys["admin"])
    page.goto(f"/admin#/exercises/{UNTOUCHED}")
    page.click('#publish-toggle >> text="Unpublish"')
    page.wait_for_selector('#publish-toggle >> text="Publish"')
    assert live_server.api().get(f"/api/v1/exercises/{UNTOUCHED}").status_code == 404
    page.click('#publish-toggle >> text="Publish"')
    page.wait_for_selector('#publish-toggle >> text="Unpublish"')
    assert live_server.api().get(f"/api/v1/exercises/{UNTOUCHED}").status_code == 200


# ---- attempts ----------------------------------------------------------------------------------


def learners_shown(page) -> list[str]:
    return page.locator("#attempts-table tbody td.learner").all_inner_texts()


def test_filter_attempts_by_learner_and_load_more(page, live_server, seeded):
    sign_in(page, live_server.keys["admin"])
    page.click("nav >> text=Attempts")
    page.wait_for_selector("#attempts-table tbody tr")
    # The choices are the server's own names.
    options = {name: page.locator(f"#f-{name} option").evaluate_all("options => options.map(o => o.value)")
               for name in ("status", "verdict", "sort")}
    assert options == {"status": ["", *VOCABULARY["STATUSES"]], "verdict": ["", *VERDICTS],
                       "sort": ["", *(s for s in SORTS if s != VOCABULARY["DEFAULT_SORT"])]}
    assert page.locator("#f-sort option").all_inner_texts() == ["Newest first", "Oldest first", "Highest score first",
                                                                "Lowest score first"]
    assert page.is_visible("#load-more")  # 64 attempts, 50 a page
    page.fill("#f-learner", "bob")
    page.click("#attempt-filters button[type=submit]")
    page.wait_for_url(re.compile(r"learner=bob"))
    expect(page.locator("#attempts-table tbody tr")).to_have_count(1)
    assert learners_shown(page) == ["bob"]
    assert page.is_hidden("#load-more")

    # Load more follows next_cursor to the end, without repeating a row.
    page.goto(f"/admin#/attempts?exercise={BULK_QUIZ}")
    expect(page.locator("#attempts-table tbody tr")).to_have_count(50)
    page.click("#load-more")
    expect(page.locator("#attempts-table tbody tr")).to_have_count(55)
    assert page.is_hidden("#load-more")
    assert sorted(learners_shown(page)) == [f"bulk-{i:02d}" for i in range(55)]
    # And a score range: the 27 right answers score 1.
    page.fill("#f-score_min", "50")  # a percentage, as the scores are shown
    page.click("#attempt-filters button[type=submit]")
    expect(page.locator("#attempts-table tbody tr")).to_have_count(27)
    assert "27 attempts" in page.inner_text("#attempt-count")


def test_a_hostile_learner_id_is_shown_as_text(page, live_server, seeded):
    sign_in(page, live_server.keys["admin"])
    page.goto("/admin#/attempts")
    page.fill("#f-learner", HOSTILE)
    page.click("#attempt-filters button[type=submit]")
    expect(page.locator("#attempts-table tbody tr")).to_have_count(1)
    assert learners_shown(page) == [HOSTILE]
    assert page.locator("#view img").count() == 0
    page.click("#attempts-table tbody a >> text=Open")
    page.wait_for_selector("#attempt-learner")
    assert page.inner_text("#attempt-learner") == HOSTILE
    assert page.locator("#view img").count() == 0
    assert page.title().startswith("Attempt ")
    # The page fixture fails the test had any alert() run.


def test_export_the_filtered_attempts_as_csv(page, live_server, seeded, tmp_path):
    sign_in(page, live_server.keys["admin"])
    page.goto("/admin#/attempts?learner=bob")
    page.wait_for_selector("#attempts-table tbody tr")
    with page.expect_download() as download:
        page.click("button >> text=Export these as CSV")
    target = tmp_path / "export.csv"
    download.value.save_as(target)
    lines = target.read_text().strip().splitlines()
    assert len(lines) == 2 and "learner" in lines[0] and "bob" in lines[1]


# ---- one attempt: checks, feedback, override ------------------------------------------------------


def test_attempt_view_shows_code_checks_and_timings(page, live_server, seeded):
    sign_in(page, live_server.keys["admin"])
    page.goto(f"/admin#/attempts?exercise={CODE}&learner=ada")
    page.click("#attempts-table tbody a >> text=Open")
    page.wait_for_selector("#attempt-code")
    assert page.inner_text("#attempt-code") == WRONG_CODE.rstrip("\n") or \
        page.locator("#attempt-code").text_content() == WRONG_CODE
    gradcheck = page.locator("tr[data-check=gradcheck]")
    assert "failed" in gradcheck.inner_text()
    assert gradcheck.locator("td.message").inner_text().strip()  # the judge's message
    assert page.locator("tr[data-check=forward]").inner_text().startswith("passed")
    # Causes, checks and the verdict named as the learner pages name them (GET /api/v1/terms).
    assert "backward ignores grad_output" in page.inner_text("#view")
    expect(page.locator("#attempt-report-status")).to_have_text("Failed")
    assert page.locator("text=The judge's timings").count() == 1
    assert visible_identifiers(page) == []


# ---- no identifier of the code in the dashboard's text (issue 35) ---------------------------------


def test_visible_identifiers_reads_the_page_as_a_person_does(page):
    """The helper finds a name of the code where a person reads it, and not in a learner's code or
    output, nor in what is hidden; a learner's torch word (needs_input_grad) is theirs."""
    page.set_content("""<body><h1>Attempt</h1><p>Verdict: <span>syntax_error</span></p>
      <p>Likely cause forgot_grad_output; TypeError in parse</p>
      <p>LinearFn: a linear layer with needs_input_grad, ctx.needs_input_grad[0]</p>
      <pre>grad_output_unchanged = wrong_sign</pre><div class="cm-editor"><div>boundary_only</div></div>
      <div hidden>too_large</div><details><summary>More</summary><p>memory_limit</p></details></body>""")
    assert visible_identifiers(page) == ["Verdict:", "syntax_error", "forgot_grad_output", " in parse"]


def test_the_attempts_of_a_cause_and_a_verdict_are_named_in_words(page, live_server, seeded):
    """The attempt search filtered by a likely cause (as the exercise's statistics link to it) and by
    a verdict: the filters' choices, the cause column and the verdict badges say the terms table's
    words; the stored names stay the filters' values."""
    sign_in(page, live_server.keys["admin"])
    page.goto(f"/admin#/attempts?exercise={CODE}&likely_cause=forgot_grad_output")
    expect(page.locator("#attempts-table tbody tr")).to_have_count(1)
    row = page.locator("#attempts-table tbody tr")
    expect(row).to_contain_text("backward ignores grad_output")
    expect(row.locator(".badge.b-failed")).to_have_text("Failed")
    expect(page.locator("#f-likely_cause")).to_have_value("forgot_grad_output")
    expect(page.locator("#f-likely_cause option:checked")).to_have_text("backward ignores grad_output")
    verdicts = page.locator("#f-verdict option").evaluate_all("os => os.map(o => [o.value, o.textContent])")
    assert dict(verdicts)["syntax_error"] == "Does not parse" and dict(verdicts)["internal_error"] == "Grader failed"
    assert all("_" not in label for _, label in verdicts)
    assert all("_" not in label for label in page.locator("#f-status option").all_inner_texts())
    assert visible_identifiers(page) == []

    page.goto(f"/admin#/attempts?exercise={CODE}&verdict=syntax_error")
    expect(page.locator("#attempts-table tbody tr")).to_have_count(1)
    badge = page.locator("#attempts-table tbody tr .badge.b-syntax_error")
    expect(badge).to_have_text("Does not parse")
    expect(badge).to_have_attribute("title", "syntax_error")  # the stored name, for staff who search by it
    assert visible_identifiers(page) == []


def test_an_attempt_that_does_not_parse_is_told_in_words(page, live_server, seeded):
    sign_in(page, live_server.keys["admin"])
    page.goto(f"/admin#/attempts/{seeded['unparsed']}")
    page.wait_for_selector("#attempt-code")
    expect(page.locator("#attempt-report-status")).to_have_text("Does not parse")
    expect(page.locator(".facts .badge.b-syntax_error")).to_have_text("Does not parse")
    assert visible_identifiers(page) == []


def test_a_regrade_of_a_wrong_clampfn_names_nothing_by_its_identifier(page, live_server, seeded):
    """The wrong ClampFn attempt regraded (a dry run on the worker): the regrade's page and the list."""
    sign_in(page, live_server.keys["admin"])
    page.goto(f"/admin#/attempts/{seeded['code']}")
    page.wait_for_selector("#attempt-code")
    assert visible_identifiers(page) == []
    page.click("#regrade-attempt")
    page.click("#regrade-start")
    page.wait_for_url(re.compile(r"#/regrades/[0-9a-f-]+$"))
    page.wait_for_selector("#regrade-diff", timeout=30_000)
    assert "_" not in page.inner_text("#regrade-status")
    assert visible_identifiers(page) == []
    page.click("nav >> text=Regrades")
    page.wait_for_selector(f"td >> text={CODE}")
    assert visible_identifiers(page) == []


def test_quiz_attempt_view_shows_feedback(page, live_server, seeded):
    sign_in(page, live_server.keys["admin"])
    page.goto(f"/admin#/attempts/{seeded['bob']}")
    page.wait_for_selector("#attempt-feedback")
    feedback = page.inner_text("#attempt-feedback")
    assert "zero-number" in feedback and "none-each" in feedback and "Zero is an actual gradient value" in feedback
    assert page.inner_text("#attempt-answer") == '"zero-number"'


def test_override_a_score_with_a_reason(page, live_server, seeded):
    attempt = seeded["code"]
    before = admin_get(live_server, f"/attempts/{attempt}").json
    sign_in(page, live_server.keys["admin"])
    page.goto(f"/admin#/attempts/{attempt}")
    page.wait_for_selector("#override-form")
    page.fill("#override-score", "90")  # a percentage
    page.click("#override-form button[type=submit]")
    page.wait_for_selector("#override-form .problem >> text=Give a reason")
    assert admin_get(live_server, f"/attempts/{attempt}").json["overridden"] is False

    page.fill("#override-reason", "Partial credit: the mask is right, only grad_output is missing.")
    page.fill("#override-comment", "Your mask was right; the gradient missed grad_output.")
    page.click("#override-form button[type=submit]")
    page.wait_for_selector("tr[data-override]")
    assert page.inner_text("#attempt-score") == "90%"
    row = page.inner_text("tr[data-override]")
    assert "admin" in row and "90%" in row and "Partial credit: the mask is right" in row
    assert fmt(before["score"]) in row
    after = admin_get(live_server, f"/attempts/{attempt}").json
    assert after["score"] == pytest.approx(0.9) and after["overridden"] is True
    assert after["grader_score"] == before["grader_score"]
    assert after["overrides"][-1]["learner_comment"] == "Your mask was right; the gradient missed grad_output."
    # The audit log lists it.
    page.click("nav >> text=Audit log")
    page.wait_for_selector("#overrides-table >> text=Partial credit: the mask is right")


def fmt(score: float) -> str:
    """A score as the dashboard shows it: a percentage to one decimal, no trailing zero."""
    return f"{round(score * 100, 1):g}%"


# ---- regrade -------------------------------------------------------------------------------------


def changed_answer_key(tmp_path: Path) -> Path:
    """A copy of REGRADE_QUIZ whose correct choice is call-class instead of apply."""
    folder = tmp_path / "catalog" / REGRADE_QUIZ
    shutil.copytree(PROJECT_ROOT / "exercises" / REGRADE_QUIZ, folder)
    toml = folder / "exercise.toml"
    head, *choices = toml.read_text().split("[[choices]]")
    flipped = []
    for choice in choices:
        choice = re.sub(r"correct = (true|false)", "correct = false", choice)
        if 'id = "call-class"' in choice:
            choice = choice.replace("correct = false", "correct = true")
        flipped.append(choice)
    toml.write_text("[[choices]]".join([head, *flipped]))
    return folder.parent


def test_regrade_shows_the_dry_run_diff_then_applies_it(page, live_server, seeded, tmp_path):
    live_server.sync(changed_answer_key(tmp_path))
    sign_in(page, live_server.keys["admin"])
    page.goto(f"/admin#/exercises/{REGRADE_QUIZ}")
    page.click("#regrade-exercise")
    # The page asks first (in the page: a dialog would fail this test); Cancel leaves everything as it was.
    expect(page.locator("#regrade-ask")).to_contain_text("dry run")
    page.click("#regrade-cancel")
    expect(page.locator("#regrade-ask")).to_have_count(0)
    assert page.url.endswith(f"#/exercises/{REGRADE_QUIZ}")
    page.click("#regrade-exercise")
    page.click("#regrade-start")
    page.wait_for_url(re.compile(r"#/regrades/[0-9a-f-]+$"))
    page.wait_for_selector("#regrade-diff", timeout=30_000)  # the worker grades the dry run
    assert (page.inner_text("#regrade-up"), page.inner_text("#regrade-down"), page.inner_text("#regrade-unchanged")) \
        == ("1", "1", "1")
    changes = {row.locator("td.learner").inner_text(): row.inner_text()
               for row in page.locator("table.changes tbody tr").all()}
    assert set(changes) == {"dana", "eve"}
    assert "100%" in changes["dana"] and "▼" in changes["dana"] and "▲" in changes["eve"]
    # Nothing changed yet.
    assert admin_get(live_server, f"/attempts/{seeded['dana']}").json["score"] == 1.0

    page.click("#regrade-apply")
    page.click("#regrade-confirm")
    page.wait_for_selector("#regrade-status >> text=applied", timeout=20_000)
    assert admin_get(live_server, f"/attempts/{seeded['dana']}").json["score"] == 0.0
    assert admin_get(live_server, f"/attempts/{seeded['eve']}").json["score"] == 1.0
    assert admin_get(live_server, f"/attempts/{seeded['fay']}").json["score"] == 0.0
    page.click("nav >> text=Regrades")
    page.wait_for_selector(f"td >> text={REGRADE_QUIZ}")
