"""Settings from the environment; production refuses to start without what it needs."""

import subprocess
import sys

import pytest

from service.config import PROJECT_ROOT, ConfigError, Settings


def test_defaults_need_nothing():
    settings = Settings.from_env({})
    assert settings.env == "development"
    assert settings.database_url.startswith("sqlite:///") and settings.database_url.endswith("instance/gradquiz.sqlite3")


def test_values_are_parsed():
    settings = Settings.from_env({
        "DATABASE_URL": "postgresql://u@db/gq", "CORS_ORIGINS": "https://a.example, https://b.example",
        "MAX_REQUEST_BYTES": "4096"})
    assert settings.sqlalchemy_url == "postgresql+psycopg://u@db/gq"
    assert settings.cors_origins == ("https://a.example", "https://b.example")
    assert settings.max_request_bytes == 4096
    numbers = Settings.from_env({"GRADING_WORKERS": "3", "GRADING_LEASE_SECONDS": "45", "GRADING_MAX_TRIES": "5"})
    assert (numbers.grading_workers, numbers.grading_lease_seconds, numbers.grading_max_tries) == (3, 45, 5)
    assert Settings.from_env({"DATABASE_URL": "postgres://u@db/gq"}).sqlalchemy_url == "postgresql+psycopg://u@db/gq"


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"ENV": "production", "DATABASE_URL": "postgresql://db/gq"}, "SECRET_KEY is required"),
        ({"ENV": "production", "SECRET_KEY": "x" * 40}, "DATABASE_URL is required"),
        ({"ENV": "production", "SECRET_KEY": "short", "DATABASE_URL": "postgresql://db/gq"}, "at least 32"),
        ({"MAX_REQUEST_BYTES": "lots"}, "MAX_REQUEST_BYTES must be an integer"),
        ({"DATABASE_URL": "mysql://db"}, "DATABASE_URL must be"),
        ({"ENV": "staging"}, "ENV must be"),
    ],
)
def test_bad_settings_name_themselves(environ, message):
    with pytest.raises(ConfigError, match=message):
        Settings.from_env(environ)


def test_production_start_stops_with_one_line():
    env = {"PATH": "/usr/bin:/bin", "ENV": "production", "DATABASE_URL": "postgresql://db/gq"}
    result = subprocess.run([sys.executable, "-c", "import wsgi"], cwd=PROJECT_ROOT, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "gradquiz: configuration error: SECRET_KEY is required when ENV=production"]


def test_sandbox_layers_and_what_production_requires():
    from service.grading.sandbox import LAYERS

    development = Settings.from_env({})
    assert development.wanted_layers is None and development.required_layers == ()
    production = Settings.from_env({"ENV": "production", "DATABASE_URL": "postgresql://u@db/gq", "SECRET_KEY": "k" * 40})
    assert production.required_layers == LAYERS
    chosen = Settings.from_env({"SANDBOX_LAYERS": "limits, seccomp", "SANDBOX_REQUIRED": "seccomp"})
    assert chosen.wanted_layers == ("limits", "seccomp") and chosen.required_layers == ("seccomp",)
    with pytest.raises(ConfigError, match="SANDBOX_LAYERS names unknown layers network"):
        Settings.from_env({"SANDBOX_LAYERS": "network"})
    with pytest.raises(ConfigError, match="GRADING_TIMEOUT_SECONDS"):
        Settings.from_env({"GRADING_TIMEOUT_SECONDS": "60"})


def test_a_worker_without_a_required_layer_refuses_to_start(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "DATABASE_URL": f"sqlite:///{tmp_path / 'w.sqlite3'}",
           "SANDBOX_LAYERS": "limits", "SANDBOX_REQUIRED": "seccomp"}
    result = subprocess.run([sys.executable, "-m", "service.jobs.worker"], cwd=PROJECT_ROOT, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 3, result.stderr[-2000:]
    assert "sandbox layers active: limits" in result.stderr
    assert "required sandbox layers are not active: seccomp" in result.stderr
