# make run   — serve the API and its grading workers on the embedded SQLite database
#              (creates .venv, migrates, syncs the exercises, makes instance/secret_key once)
# make test  — the whole test suite, on SQLite and on PostgreSQL
# make lint  — ruff and mypy (pyproject.toml; docs/operations.md, "Lint and types")
# make docs  — the manual in docs/, built by MkDocs into build/site; a broken link or anchor fails it
# make static — the front-end files in service/static/vendor/ (committed), from frontend/ (needs npm)
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
FLASK := $(PY) -m flask --app wsgi
BIND ?= 127.0.0.1:8000

.PHONY: run test lint docs static validate bench bench-api clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# A stamp per requirements set: reinstall only when a requirements file changes.
$(VENV)/.installed-dev: requirements.txt requirements-worker.txt requirements-dev.txt | $(PY)
	$(PY) -m pip install -q -r requirements-dev.txt
	@touch $@

$(VENV)/.installed-run: requirements.txt requirements-worker.txt | $(PY)
	$(PY) -m pip install -q -r requirements-worker.txt
	@touch $@

# The first command makes the deployment's random SECRET_KEY, instance/secret_key (owner-only), and
# every later start reads it (docs/operations.md#the-secret-key); ensure-dev prints, the first time,
# a client key for the API and an admin key for the dashboard; dev-link, each time, the lesson's address
# signed in as a development learner (a learner token in the fragment; refused with ENV=production).
run: $(VENV)/.installed-run
	@mkdir -p -m 700 instance
	$(FLASK) db upgrade
	$(FLASK) exercises sync
	@$(FLASK) clients ensure-dev
	@echo "gradquiz API: http://$(BIND)/api/v1/exercises"
	@echo "API docs:     http://$(BIND)/api/docs   (OpenAPI: http://$(BIND)/api/v1/openapi.json)"
	@echo "Dashboard:    http://$(BIND)/admin      (sign in with an admin or instructor key)"
	@echo "Lesson:       http://$(BIND)/learn      (exercise pages at /learn/<slug>; docs/learners.md)"
	-@$(FLASK) clients dev-link --base-url http://$(BIND)
	@# The grading workers run beside gunicorn and stop with it (Ctrl-C stops both).
	@$(FLASK) worker & workers=$$!; \
	trap 'kill $$workers 2>/dev/null; wait $$workers' EXIT INT TERM; \
	BIND=$(BIND) $(VENV)/bin/gunicorn -c gunicorn.conf.py wsgi:app

test: $(VENV)/.installed-dev
	$(PY) -m pytest

# Both run over everything and report everything before failing.
lint: $(VENV)/.installed-dev
	@status=0; \
	$(VENV)/bin/ruff check . || status=1; \
	$(VENV)/bin/mypy || status=1; \
	exit $$status

# Strict (mkdocs.yml): a broken link or anchor between the pages fails the build.
docs: $(VENV)/.installed-dev
	$(PY) -m mkdocs build --strict --site-dir build/site

# npm ci installs frontend/package-lock.json's exact packages; build.mjs rewrites service/static/vendor/
# from them, byte for byte the same each time (tests/unit/test_frontend_bundle.py checks). Commit the result.
static:
	@command -v npm >/dev/null || { echo "make static needs Node.js and npm (Debian: apt-get install nodejs npm)"; exit 1; }
	cd frontend && npm ci --include=dev
	cd frontend && node build.mjs

# Check and prove every exercise (docs/authoring.md#proof): the worker's requirements, torch included,
# since the proof runs each exercise's code in the sandbox.
validate: $(VENV)/.installed-run
	$(FLASK) exercises validate

bench: $(VENV)/.installed-dev
	$(PY) bench/grading.py

# The API under load, PostgreSQL restarted under load, 10k to 1M attempts (docs/performance.md).
# Needs the local PostgreSQL and wrk (Debian: apt-get install wrk).
bench-api: $(VENV)/.installed-dev
	@command -v wrk >/dev/null || { echo "bench-api needs wrk: apt-get install wrk"; exit 1; }
	$(PY) bench/api_load.py
	$(PY) bench/db_fault.py
	$(PY) bench/growth.py

clean:
	rm -rf $(VENV) instance .pytest_cache .ruff_cache .mypy_cache build frontend/node_modules
