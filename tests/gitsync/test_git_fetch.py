"""How git is run for a sync (service/gitsync/fetch.py): what its command line and environment hold.
The fetch itself, against a real git server, is in test_git_sync.py."""

from __future__ import annotations

import subprocess

from service.config import Settings
from service.gitsync import fetch
from tests.gitsync.support import DEPLOY_TOKEN, EXERCISES, GIT_HOST


def test_git_runs_hardened_pinned_to_the_checked_address_with_the_token_only_in_its_environment(
        git_server, repository, monkeypatch, tmp_path):
    repository.copy_exercise(EXERCISES / "square-function")
    repository.push("first")
    started: list[tuple[list[str], dict[str, str]]] = []
    real_popen = subprocess.Popen

    def recording_popen(command, *args, **kwargs):
        started.append((list(command), dict(kwargs["env"])))
        return real_popen(command, *args, **kwargs)

    monkeypatch.setattr(fetch.subprocess, "Popen", recording_popen)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")  # the service's environment: not git's
    settings = Settings.from_env({}, env="testing", secret_key="x" * 32, git_allowed_hosts=(GIT_HOST,))
    with fetch.fetched(settings, git_server.url("course"), "main", DEPLOY_TOKEN) as (commit, git_dir):
        folders = fetch.exercise_folders(git_dir, "")
    assert len(commit) == 40 and [f.slug for f in folders] == ["square-function"]

    [(command, env)] = [(c, e) for c, e in started if "clone" in c]
    assert all(DEPLOY_TOKEN not in part for c, _env in started for part in c)
    assert all("GIT_CONFIG_VALUE_0" not in e for c, e in started if "clone" not in c)  # local reads: no header
    options = {command[i + 1] for i, part in enumerate(command) if part == "-c"}
    assert {"core.hooksPath=/dev/null", "protocol.allow=never", "protocol.https.allow=always",
            "protocol.http.allow=always", "http.followRedirects=false", "credential.helper=",
            f"http.curloptResolve=127.0.0.1:{git_server.port}:127.0.0.1"} <= options
    assert command[command.index("clone"):][:8] == ["clone", "--bare", "--depth", "1", "--single-branch", "--no-tags",
                                                    "--branch", "main"]
    assert env["GIT_TERMINAL_PROMPT"] == "0" and env["GIT_CONFIG_NOSYSTEM"] == "1" and "HTTPS_PROXY" not in env
    assert env["HOME"] != "/root" and env["GIT_CONFIG_KEY_0"] == "http.extraHeader"
    assert env["GIT_CONFIG_VALUE_0"].startswith("Authorization: Basic ")
    assert env["GIT_CONFIG_VALUE_0"].split()[-1] not in " ".join(command)


def test_plain_http_is_not_allowed_to_git_for_an_https_url(monkeypatch):
    repo = fetch.RepoAddress("https://git.example.edu/course.git", "git.example.edu", 443, "203.0.113.7")
    options = fetch._git_options(repo)
    assert "protocol.http.allow=always" not in options
    assert "http.curloptResolve=git.example.edu:443:203.0.113.7" in options


def test_the_allow_list_names_hosts_or_host_and_port():
    settings = Settings.from_env({}, env="testing", secret_key="x" * 32,
                                 git_allowed_hosts=("github.com", "git.example.edu:8443"))
    assert fetch.host_allowed("GitHub.com", 443, settings)
    assert fetch.host_allowed("git.example.edu", 8443, settings)
    assert not fetch.host_allowed("git.example.edu", 443, settings)
    assert not fetch.host_allowed("evilgithub.com", 443, settings)
    assert fetch.url_problem("ssh://github.com/a/b.git", settings) == "The repository URL must be an https:// URL."
    assert fetch.url_problem("file:///etc", settings) == "The repository URL must be an https:// URL."
