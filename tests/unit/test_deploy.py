"""docker-compose.yml, Dockerfile, Makefile and requirements: what can be checked without Docker."""

import json
import re
import shlex
import subprocess
import sys
import textwrap

import yaml

from service import create_app
from service.config import PROJECT_ROOT


def compose():
    return yaml.safe_load((PROJECT_ROOT / "docker-compose.yml").read_text())


def test_compose_has_the_expected_services():
    services = compose()["services"]
    assert {"db", "redis", "migrate", "api", "worker"} <= set(services)
    assert services["api"]["build"]["target"] == "api" and services["worker"]["build"]["target"] == "worker"
    assert services["db"]["image"].startswith("postgres:")
    assert services["api"]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert services["migrate"]["depends_on"]["db"]["condition"] == "service_healthy"
    for name in ("db", "redis", "api", "worker"):
        assert "healthcheck" in services[name], name
    # Workers scale with --scale worker=N: nothing in them may be unique to one container.
    assert not {"container_name", "ports", "hostname"} & set(services["worker"])
    assert services["worker"]["environment"]["GRADING_BACKEND"] == "celery"
    assert services["worker"]["environment"]["CELERY_BROKER_URL"].startswith("${CELERY_BROKER_URL:-redis://redis:6379")
    worker = services["worker"]
    # The sandbox's layers need these capabilities, and nothing else is given.
    assert worker["cap_drop"] == ["ALL"]
    assert set(worker["cap_add"]) == {"SYS_ADMIN", "SYS_CHROOT", "SETUID", "SETGID", "KILL"}
    env = services["api"]["environment"]
    assert env["ENV"] == "production" and env["DATABASE_URL"].startswith("postgresql://")
    assert "SECRET_KEY" in env


def _flask_commands(command: list[str]) -> list[list[str]]:
    text = command[-1] if command[:2] == ["sh", "-c"] else shlex.join(command)
    return [shlex.split(part)[3:] for part in text.split("&&") if shlex.split(part)[:3] == ["flask", "--app", "wsgi"]]


def test_each_compose_command_is_a_real_entry_point():
    app = create_app({"env": "testing", "database_url": "sqlite://"})
    services = compose()["services"]
    commands = _flask_commands(services["migrate"]["command"])
    assert [c[:2] for c in commands] == [["db", "upgrade"], ["exercises", "sync"]]
    for args in commands:
        group = app.cli.get_command(None, args[0])
        assert group is not None and group.get_command(None, args[1]) is not None, args
    worker = _flask_commands(services["worker"]["command"])
    assert worker == [["worker"]] and app.cli.get_command(None, "worker") is not None
    api = services["api"]["command"]
    assert api[:3] == ["gunicorn", "-c", "gunicorn.conf.py"]
    module, _, attr = api[3].partition(":")
    assert (PROJECT_ROOT / f"{module}.py").is_file() and attr == "app"
    assert (PROJECT_ROOT / "gunicorn.conf.py").is_file()


def test_dockerfile_copies_what_exists():
    dockerfile = (PROJECT_ROOT / "Dockerfile").read_text()
    for line in dockerfile.splitlines():
        if line.startswith("COPY "):
            for source in line.split()[1:-1]:
                assert (PROJECT_ROOT / source).exists(), source
    assert "requirements.txt" in dockerfile
    # The worker image pins torch to the CPU release before its requirements see it.
    assert re.search(r"--index-url \S+ torch==2\.13\.0", dockerfile)
    web_pins = [line.split("==")[0].lower() for line in (PROJECT_ROOT / "requirements.txt").read_text().splitlines()
                if line and not line.startswith("#")]
    assert "torch" not in web_pins and "numpy" not in web_pins


def test_torch_is_pinned_to_the_cpu_release_exactly():
    pins = {}
    for name in ("requirements.txt", "requirements-worker.txt", "requirements-dev.txt"):
        for line in (PROJECT_ROOT / name).read_text().splitlines():
            line = line.split("#")[0].strip()
            if line and not line.startswith("-r"):
                match = re.match(r"^([A-Za-z0-9_.\-\[\]]+)==([^\s;]+)$", line)
                assert match, f"{name}: {line!r} is not an exact pin"
                pins[match.group(1).lower()] = match.group(2)
    assert pins["torch"] == "2.13.0"


def test_makefile_has_run_and_test():
    makefile = (PROJECT_ROOT / "Makefile").read_text()
    assert re.search(r"^run:", makefile, re.M) and re.search(r"^test:", makefile, re.M)
    readme = (PROJECT_ROOT / "README.md").read_text()
    assert "make run" in readme and "make test" in readme
    assert "make test" in (PROJECT_ROOT / ".ci" / "run").read_text()


def _pinned(*files: str) -> set[str]:
    names = set()
    for name in files:
        for line in (PROJECT_ROOT / name).read_text().splitlines():
            line = line.split("#")[0].strip()
            if line and not line.startswith("-r"):
                names.add(re.split(r"[\[=]", line)[0].lower().replace("_", "-"))
    return names


def _third_party_imports(paths) -> set[str]:
    import ast
    import sys

    modules, local = set(), set()
    for path in paths:
        local.add(path.stem)  # scripts run by path import their neighbours (zygote -> harness)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules.add(node.module.split(".")[0])
    return {m for m in modules - local if m not in sys.stdlib_module_names and m != "service"}


def _unpinned(modules: set[str], pins: set[str]) -> list[str]:
    from importlib.metadata import packages_distributions

    distributions = packages_distributions()
    return [m for m in sorted(modules)
            if not {d.lower().replace("_", "-") for d in distributions.get(m, [m])} & pins]


def test_every_package_the_service_imports_is_pinned():
    # The exercise templates (service/catalog/templates) are exercise files, run in the sandbox.
    templates = PROJECT_ROOT / "service" / "catalog" / "templates"
    sources = [p for p in (PROJECT_ROOT / "service").rglob("*.py") if not p.is_relative_to(templates)]
    grading = [p for p in sources if "grading" in p.parts]
    web = [p for p in sources if "grading" not in p.parts]
    assert _unpinned(_third_party_imports(web), _pinned("requirements.txt")) == []
    assert _unpinned(_third_party_imports(grading), _pinned("requirements-worker.txt", "requirements.txt")) == []


def _gunicorn_config(source: str, **env: str) -> dict:
    """Run `source` after loading gunicorn.conf.py as gunicorn does, in a fresh interpreter (it sets
    environment variables and the metrics directory); its last line is JSON."""
    script = "import json, runpy\nconfig = runpy.run_path('gunicorn.conf.py')\n" + textwrap.dedent(source)
    result = subprocess.run([sys.executable, "-c", script], cwd=PROJECT_ROOT, capture_output=True, text=True,
                            timeout=60, env={"PATH": "/usr/bin:/bin", **env})
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout.splitlines()[-1])


def test_a_web_process_pools_a_connection_per_thread():
    # Below the threads, each request past the pool opened and closed a database connection.
    found = _gunicorn_config("""
        from service.config import Settings
        from service.database import make_engine
        size = Settings.from_env().database_pool_size
        print(json.dumps({"threads": config["threads"], "pool": make_engine("sqlite:////tmp/gq-pool.sqlite3", size).pool.size()}))
    """, WEB_THREADS="7")
    assert found == {"threads": 7, "pool": 7}
    from service.config import Settings

    assert Settings.from_env({}).database_pool_size == 5  # a worker or a CLI command: a few


def test_gunicorn_builds_no_access_line():
    # The app writes its own (service/logs.py); gunicorn's logger would build one per request to drop it.
    found = _gunicorn_config("""
        logger = config["logger_class"].__new__(config["logger_class"])
        def atoms(*args):
            raise AssertionError("atoms built")
        logger.atoms = atoms
        print(json.dumps({"access": logger.access(None, None, {}, 0.001)}))
    """)
    assert found == {"access": None}


def test_the_workers_garbage_collector_leaves_the_preloaded_app_alone():
    # gunicorn calls pre_fork in the master, after the app is loaded (preload_app), before each fork.
    found = _gunicorn_config("""
        import gc
        from service import create_app
        app = create_app({"env": "testing", "database_url": "sqlite://"})
        frozen_before = gc.get_freeze_count()
        config["pre_fork"](None, None)
        print(json.dumps({"preload": config["preload_app"], "frozen_before": frozen_before,
                          "app_frozen": gc.get_freeze_count() > 100_000, "left_to_collect": len(gc.get_objects())}))
    """)
    assert found["preload"] is True and found["frozen_before"] == 0 and found["app_frozen"]
    assert found["left_to_collect"] < 100
