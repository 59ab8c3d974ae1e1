"""Reading and checking exercise folders; the repository's own content."""

import textwrap
from pathlib import Path

import pytest

from service.catalog import load_catalog
from service.catalog.loader import content_digest, read_exercise, toml_field_line
from service.config import PROJECT_ROOT
from service.quiz import QUIZ_KINDS
from tests.helpers import correct_answer

VALID = textwrap.dedent('''
    title = "Which value"
    kind = "single_choice"
    prompt = "Pick one"
    topics = ["backward"]
    difficulty = 1
    hints = ["think"]
    explanation = "because"

    [[choices]]
    id = "a"
    text = "A"
    correct = true
    feedback = "yes"

    [[choices]]
    id = "b"
    text = "B"
    correct = false
    feedback = "confuses zero with None"
''')


def write(root: Path, slug: str, toml: str, **files: str) -> Path:
    folder = root / slug
    folder.mkdir(parents=True)
    (folder / "exercise.toml").write_text(toml)
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


def test_valid_exercise_is_read(tmp_path):
    exercise, problems = read_exercise(write(tmp_path, "pick-one", VALID))
    assert problems == []
    assert exercise.slug == "pick-one"
    assert exercise.spec["kind"] == "single_choice"
    assert exercise.files == {}


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda t: t.replace('title = "Which value"\n', ""), "title"),
        (lambda t: t.replace('"single_choice"', '"essay"'), "kind"),
        (lambda t: t.replace('["backward"]', '["Back Ward"]'), "topics[0]"),
        (lambda t: t.replace('["backward"]', "[]"), "topics"),
        (lambda t: t.replace("difficulty = 1", "difficulty = 9"), "difficulty"),
        (lambda t: t.replace('explanation = "because"', 'explanation = ""'), "explanation"),
        (lambda t: t.replace('hints = ["think"]', "hints = [1]"), "hints"),
        (lambda t: 'score_policy = "worst"\n' + t, "score_policy"),
        (lambda t: "colour = 'red'\n" + t, "(top level)"),
        (lambda t: t.replace("correct = false", "correct = true"), "choices"),
        (lambda t: t.replace('title = "Which value"', 'title = "Which value'), "(syntax)"),
    ],
)
def test_each_problem_names_file_and_field(tmp_path, edit, field):
    _, problems = read_exercise(write(tmp_path, "broken-one", edit(VALID)))
    assert problems, "the broken exercise was accepted"
    assert all(p.path == "broken-one/exercise.toml" for p in problems)
    assert field in [p.field for p in problems], [str(p) for p in problems]
    first = problems[0]
    where = f"broken-one/exercise.toml:{first.line}: " if first.line else "broken-one/exercise.toml: "
    assert str(first).startswith(where)


def test_a_problem_in_exercise_toml_carries_the_line_of_its_field(tmp_path):
    text = VALID.replace("difficulty = ", "difficulty = 9 # was ")
    _, problems = read_exercise(write(tmp_path, "broken-one", text))
    line = next(n for n, t in enumerate(text.splitlines(), start=1) if t.startswith("difficulty = 9"))
    assert [(p.field, p.line) for p in problems] == [("difficulty", line)]
    broken = VALID.replace('title = "Which value"', 'title = "Which value')
    _, problems = read_exercise(write(tmp_path, "broken-two", broken))
    assert [(p.field, p.line) for p in problems] == [("(syntax)", 1 + broken.splitlines().index('title = "Which value'))]


def test_bad_folder_name_and_missing_spec(tmp_path):
    (tmp_path / "Bad_Name").mkdir()
    (tmp_path / "empty-folder").mkdir()
    exercises, problems = load_catalog(tmp_path)
    assert exercises == []
    assert {(p.path, p.field) for p in problems} == {
        ("Bad_Name", "(folder name)"), ("empty-folder/exercise.toml", "(file)")}


def test_every_problem_of_every_folder_is_reported(tmp_path):
    write(tmp_path, "good-one", VALID)
    write(tmp_path, "bad-one", VALID.replace("difficulty = 1", "difficulty = 0"))
    write(tmp_path, "bad-two",
          VALID.replace('kind = "single_choice"', 'kind = "multiple_choice"').replace("correct = true", "correct = false"))
    exercises, problems = load_catalog(tmp_path)
    assert [e.slug for e in exercises] == ["good-one"]
    assert {p.path.split("/")[0] for p in problems} == {"bad-one", "bad-two"}


def test_digest_follows_content(tmp_path):
    folder = write(tmp_path, "pick-one", VALID)
    first, _ = read_exercise(folder)
    again, _ = read_exercise(folder)
    assert first.digest == again.digest
    (folder / "exercise.toml").write_text(VALID.replace("Pick one", "Pick one, please"))
    edited, _ = read_exercise(folder)
    assert edited.digest != first.digest
    (folder / "notes.md").write_text("extra")
    assert read_exercise(folder)[0].digest != edited.digest
    # A byte moved between path and content must not collide.
    assert content_digest({"ab": b"c"}) != content_digest({"a": b"bc"})


def test_editor_leftovers_do_not_change_the_version(tmp_path):
    folder = write(tmp_path, "pick-one", VALID)
    before, _ = read_exercise(folder)
    (folder / "__pycache__").mkdir()
    (folder / "__pycache__" / "x.pyc").write_bytes(b"\0")
    (folder / ".exercise.toml.swp").write_text("swap")
    assert read_exercise(folder)[0].digest == before.digest


# The repository's own content.

REPO_EXERCISES = PROJECT_ROOT / "exercises"


@pytest.fixture(scope="module")
def repo_catalog():
    exercises, problems = load_catalog(REPO_EXERCISES)
    return exercises, problems


def test_repository_exercises_are_valid(repo_catalog):
    _, problems = repo_catalog
    assert [str(p) for p in problems] == []


def test_content_covers_the_lesson(repo_catalog):
    exercises, _ = repo_catalog
    quizzes = [e for e in exercises if e.spec["kind"] in QUIZ_KINDS]
    assert len(quizzes) >= 12
    assert {e.spec["kind"] for e in quizzes} == set(QUIZ_KINDS)
    prompts = [e.spec["prompt"] for e in quizzes]
    assert any("What must backward return for an input that needs no gradient, like a bound?" in p for p in prompts)
    # The lesson's worked figures are asked as numeric answers.
    numeric_values = [e.spec["answer"]["value"] for e in quizzes if e.spec["kind"] == "numeric"]
    for figure in ([6.0], [2.0], 16.0, 8.0, [-1.0, -0.5, 0.3, 1.0], [0.0, 1.0, 1.0, 0.0]):
        assert any(v == figure or v == [figure] or [v] == figure for v in numeric_values), figure


def test_each_quiz_grades_its_own_correct_answer_as_correct(repo_catalog):
    exercises, _ = repo_catalog
    for exercise in (e for e in exercises if e.spec["kind"] in QUIZ_KINDS):
        grade = QUIZ_KINDS[exercise.spec["kind"]].grade(exercise.spec, correct_answer(exercise.spec))
        assert (grade.score, grade.correct) == (1.0, True), exercise.slug


def test_each_declared_wrong_answer_earns_feedback_not_credit(repo_catalog):
    exercises, _ = repo_catalog
    kind = QUIZ_KINDS
    for exercise in exercises:
        spec = exercise.spec
        if spec["kind"] in ("single_choice", "multiple_choice"):
            for choice in (c for c in spec["choices"] if not c["correct"]):
                answer = choice["id"] if spec["kind"] == "single_choice" else [choice["id"]]
                grade = kind[spec["kind"]].grade(spec, answer)
                assert not grade.correct and grade.score == 0.0, (exercise.slug, choice["id"])
        elif spec["kind"] in ("short_answer", "numeric"):
            for wrong in spec["answer"].get("wrong", []):
                answer = wrong["match"] if spec["kind"] == "short_answer" else wrong["value"]
                grade = kind[spec["kind"]].grade(spec, answer)
                assert not grade.correct, (exercise.slug, answer)
                assert grade.feedback and grade.feedback[0]["feedback"] == wrong["feedback"], (exercise.slug, answer)


def test_a_field_line_is_never_found_inside_a_multi_line_string():
    text = 'title = "t"\nprompt = """\nSet\ndifficulty = 2\n[code]\n"""\ndifficulty = 9\n\n[code]\nentry_point = "A"\n'
    assert (toml_field_line(text, "difficulty"), toml_field_line(text, "code.entry_point")) == (7, 10)
    assert toml_field_line(text, "code.inputs[0].range_") == 9  # the nearest table holding it
    assert toml_field_line(text, "(top level)") is None


def test_the_scoring_rules_in_exercise_toml_are_checked_with_a_clear_message(tmp_path):
    rules = '\n[rules]\nscoring = "{}"\nscoring_cap = {}\n'
    exercise, problems = read_exercise(write(tmp_path, "scored-one", VALID + rules.format("partial", 0.5)))
    assert problems == [] and exercise.spec["rules"] == {"scoring": "partial", "scoring_cap": 0.5}
    _, problems = read_exercise(write(tmp_path, "scored-two", VALID + rules.format("partial_credit", 1.5)))
    assert [(p.field, p.message) for p in problems] == [
        ("rules.scoring", "Must be one of: partial, all_or_nothing, gate."),
        ("rules.scoring_cap", "Must be greater than or equal to 0 and less than or equal to 1.")]
