"""The grading core for code exercises: pure Python, no Flask, no database.

- `spec`: the [code] table of an exercise (validation, the learner's view); torch-free, safe to
  import in the web process.
- `judge`: the trusted `Judge` that grades submissions in children forked from a warm zygote
  (worker processes only).
- `errors`: `GraderFault` (a fault of the grader, to retry) and friends.

Importing this package imports nothing heavy: import the submodule you need.
"""
