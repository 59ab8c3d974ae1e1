"""The grading core for code exercises: pure Python, no Flask, no database.

- `spec`: the [code] table of an exercise (validation, the learner's view); torch-free, safe to
  import in the web process.
- `judge`: the trusted `Judge` that grades submissions in children forked from a warm zygote
  (worker processes only).
- `errors`: `GraderFault` (a fault of the grader, to retry) and friends.
- `terms`: the words of grading (checks, likely causes, error stages, statuses), one table;
  `diagnosis`: a result's headline, likely cause and one example in the learner's terms. Both
  torch-free, for the web process.

Importing this package imports nothing heavy: import the submodule you need.
"""
