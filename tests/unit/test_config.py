"""Settings from the environment; production refuses to start without what it needs."""

import stat
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from service import config
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


def _secret_file_settings(monkeypatch, folder, environ=None):
    monkeypatch.setattr(config, "INSTANCE_DIR", folder)
    return Settings.from_env(environ or {})


def test_without_secret_key_each_instance_folder_makes_its_own_random_one(monkeypatch, tmp_path):
    first = _secret_file_settings(monkeypatch, tmp_path / "one").secret_key
    second = _secret_file_settings(monkeypatch, tmp_path / "two").secret_key
    assert first != second and len(first) >= 32 and len(second) >= 32
    secret_file = tmp_path / "one" / config.SECRET_KEY_FILE
    assert stat.S_IMODE(secret_file.stat().st_mode) == 0o600
    assert secret_file.read_text().strip() == first
    assert [p.name for p in (tmp_path / "one").iterdir()] == [config.SECRET_KEY_FILE]  # no temporary file left
    # No secret is built in: a Settings made without one has none, and one set is kept as given.
    assert Settings().secret_key == ""
    assert _secret_file_settings(monkeypatch, tmp_path / "three", {"SECRET_KEY": "s" * 40}).secret_key == "s" * 40
    assert not (tmp_path / "three").exists()


def test_a_restart_reuses_the_instance_secret_and_its_sessions(monkeypatch, tmp_path):
    from service import create_app
    from service.learner_tokens import LearnerScope, mint_learner_token, read_learner_token

    monkeypatch.setattr(config, "INSTANCE_DIR", tmp_path)
    before = create_app({"database_url": "sqlite://"})
    after = create_app({"database_url": "sqlite://"})  # the next start, from the same instance folder
    assert before.config["SECRET_KEY"] == after.config["SECRET_KEY"] == (tmp_path / "secret_key").read_text().strip()
    token = mint_learner_token(before.config["SECRET_KEY"], LearnerScope(client_id=1, learner="ada", exercises=None), 600).token
    assert read_learner_token(after.config["SECRET_KEY"], token).learner == "ada"


def test_processes_starting_at_once_agree_on_the_instance_secret(tmp_path):
    with ThreadPoolExecutor(8) as pool:
        made = set(pool.map(lambda _: config.instance_secret_key(tmp_path), range(16)))
    assert len(made) == 1


def test_an_unusable_instance_secret_stops_start_up_with_one_line(monkeypatch, tmp_path):
    (tmp_path / "folder-is-a-file").write_text("")
    with pytest.raises(ConfigError, match=r"SECRET_KEY is not set and .*/secret_key cannot be read \(Not a directory\)$"):
        _secret_file_settings(monkeypatch, tmp_path / "folder-is-a-file")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "secret_key").write_text("\n")
    with pytest.raises(ConfigError, match="holds no usable secret: delete it"):
        _secret_file_settings(monkeypatch, tmp_path / "empty")
    with pytest.raises(ConfigError, match="SECRET_KEY must not be empty"):
        Settings.from_env({"SECRET_KEY": ""})
