"""Fetching a course's repository and reading its exercise folders, with `git` as a subprocess.

What may be fetched: an https:// URL (plain http:// only to a network OUTBOUND_ALLOWED_NETWORKS
allows, a git server on loopback in tests) whose host is in GIT_ALLOWED_HOSTS, with no user name or
password in it. The host is resolved once and every address checked by the outbound policy
(service/outbound/http.py); git is then pinned to the checked address (`http.curloptResolve`), so a
name that rebinds between the check and the connection reaches nothing else.

How git runs: a clean environment (no system or global configuration, HOME a fresh folder, no
terminal prompt, no credential helper, no proxy from the environment), no hooks, https (or the
allowed http) as the only protocol, no redirects followed, a shallow bare clone of the one branch
without tags, a wall-clock deadline and a size cap on what it writes, its process group killed
past either. The deploy token goes in an `Authorization` header through GIT_CONFIG_COUNT/KEY/VALUE
in git's environment: never in the URL, the command line or a message.

Reading: the exercise folders are read from git's objects (`ls-tree`, `cat-file`), never from a
checkout: nothing of the repository is written as files, a symbolic link or submodule is refused
as an entry, and no path can lead outside the tree. Nothing in it runs.
"""

from __future__ import annotations

import base64
import ipaddress
import os
import re
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from ..config import Settings
from ..outbound.http import HttpError, outbound_policy

BRANCH_PATTERN = re.compile(r"^(?!-)(?!/)(?!.*\.\.)(?!.*//)[A-Za-z0-9._/-]{1,255}(?<!/)(?<!\.lock)$")
FOLDER_PATTERN = re.compile(r"^(?!.*\.\.)[A-Za-z0-9._/-]{0,255}$")
# Git's modes for entries that are not plain files: a symbolic link, a submodule.
SYMLINK_MODE, SUBMODULE_MODE = "120000", "160000"
# How often the size of what git wrote is measured while it runs.
WATCH_SECONDS = 0.2
# The user name sent with a token that names none (GitHub's convention; GitLab takes any name).
TOKEN_USER = "x-access-token"


class FetchRefused(Exception):
    """The repository could not be fetched, or may not be: the message says why, for the course's
    staff, and holds no secret."""


@dataclass(frozen=True)
class RepoAddress:
    """A checked repository URL: its host, port, and the address git is pinned to."""

    url: str
    host: str
    port: int
    address: str


@dataclass
class ExerciseFolder:
    """One folder holding exercise.toml: its files (path inside the folder -> bytes), or the
    entries refused in it."""

    slug: str
    files: dict[str, bytes] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)


def url_problem(url: str, settings: Settings) -> str | None:
    """What is wrong with a repository URL before any lookup (the scheme, credentials in it, a
    host outside GIT_ALLOWED_HOSTS), or None."""
    if not settings.git_allowed_hosts:
        return "Git sync is off on this server (the operator allows no git host: GIT_ALLOWED_HOSTS)."
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "The repository URL cannot be read."
    if parts.scheme not in ("https", "http") or not parts.hostname:
        return "The repository URL must be an https:// URL."
    if parts.username is not None or parts.password is not None:
        return "The repository URL must not hold a user name or password: give a deploy token instead."
    if parts.query or parts.fragment:
        return "The repository URL must not have a query or a fragment."
    if not host_allowed(parts.hostname, port or (443 if parts.scheme == "https" else 80), settings):
        return (f"The host {parts.hostname} is not one this server may sync from (allowed: "
                f"{', '.join(settings.git_allowed_hosts)}).")
    return None


def host_allowed(host: str, port: int, settings: Settings) -> bool:
    """Whether GIT_ALLOWED_HOSTS names the host (any port) or host:port."""
    host = host.lower().rstrip(".")
    for entry in settings.git_allowed_hosts:
        name, _, allowed_port = entry.strip().lower().rpartition(":") if ":" in entry else (entry.strip().lower(), "", "")
        if name == host and (not allowed_port or allowed_port == str(port)):
            return True
    return False


def branch_problem(branch: str) -> str | None:
    if not BRANCH_PATTERN.match(branch):
        return "The branch must be a plain branch name (letters, digits, '.', '_', '-', '/')."
    return None


def folder_problem(path: str) -> str | None:
    if not FOLDER_PATTERN.match(path) or path.startswith("/"):
        return "The path must be a folder inside the repository (letters, digits, '.', '_', '-', '/'; no '..')."
    return None


def check_address(url: str, settings: Settings) -> RepoAddress:
    """The URL checked: allowed, its host resolved once and the address allowed by the outbound
    policy; FetchRefused otherwise."""
    problem = url_problem(url, settings)
    if problem is not None:
        raise FetchRefused(problem)
    parts = urlsplit(url)
    assert parts.hostname is not None
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        addresses = outbound_policy(settings).check(url)
    except HttpError as exc:
        raise FetchRefused(f"The repository's host is refused: {exc}") from None
    address = addresses[0]
    pinned = f"[{address}]" if isinstance(address, ipaddress.IPv6Address) else str(address)
    return RepoAddress(url, parts.hostname, port, pinned)


def _git_environment(home: str, token: str | None) -> dict[str, str]:
    """git's whole environment: nothing of the service's (no proxy, no configuration), and the
    token's header as configuration given through the environment."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home, "LC_ALL": "C",
           "GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    if token:
        user, _, secret = token.partition(":") if ":" in token else (TOKEN_USER, "", token)
        credentials = base64.b64encode(f"{user}:{secret}".encode()).decode()
        env.update({"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "http.extraHeader",
                    "GIT_CONFIG_VALUE_0": f"Authorization: Basic {credentials}"})
    return env


def _git_options(repo: RepoAddress) -> list[str]:
    options = ["-c", "core.hooksPath=/dev/null", "-c", "credential.helper=", "-c", "core.askPass=",
               "-c", "protocol.allow=never", "-c", "protocol.https.allow=always",
               "-c", "http.followRedirects=false", "-c", "http.proxy=",
               "-c", f"http.curloptResolve={repo.host}:{repo.port}:{repo.address}"]
    if repo.url.startswith("http://"):
        options += ["-c", "protocol.http.allow=always"]  # checked: only to a network the operator allows
    return options


def _size(folder: Path) -> int:
    total = 0
    for root, _dirs, names in os.walk(folder):
        for name in names:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass  # git renames its temporary files as it goes
    return total


def _scrubbed(text: str, token: str | None) -> str:
    """git's last words, for the sync record: without the token, should git ever echo it."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    message = lines[-1] if lines else "no message"
    if token:
        for secret in {token, *token.split(":")}:
            if secret:
                message = message.replace(secret, "***")
    return message[:300]


def _too_large(settings: Settings) -> str:
    cap = settings.git_sync_max_bytes
    size = f"{cap / (1024 * 1024):g} MiB" if cap >= 1024 * 1024 else f"{cap / 1024:g} KiB"
    return f"The branch's last commit takes more than {size} (GIT_SYNC_MAX_BYTES): keep the exercises in a smaller repository."


def clone(settings: Settings, url: str, branch: str, token: str | None, into: Path) -> str:
    """Fetch the branch's head of the repository into `into` (a bare, shallow clone); its commit.
    FetchRefused when the URL is refused, git fails, or the deadline or size cap is passed."""
    repo = check_address(url, settings)
    if branch_problem(branch):
        raise FetchRefused(branch_problem(branch))
    home = into.parent / "home"
    home.mkdir(exist_ok=True)
    command = ["git", *_git_options(repo), "clone", "--bare", "--depth", "1", "--single-branch", "--no-tags",
               "--branch", branch, "--", url, str(into)]
    deadline = time.monotonic() + settings.git_sync_timeout_seconds
    with tempfile.TemporaryFile() as stderr:
        process = subprocess.Popen(command, env=_git_environment(str(home), token), stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True)
        try:
            while True:
                try:
                    code = process.wait(timeout=WATCH_SECONDS)
                    break
                except subprocess.TimeoutExpired:
                    pass
                if time.monotonic() > deadline:
                    raise FetchRefused(f"Fetching the repository took longer than {settings.git_sync_timeout_seconds} s.")
                if into.exists() and _size(into) > settings.git_sync_max_bytes:
                    raise FetchRefused(_too_large(settings))
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        if code != 0:
            stderr.seek(0)
            said = _scrubbed(stderr.read().decode("utf-8", "replace"), token)
            if "terminal prompts disabled" in said or "Authentication failed" in said:
                raise FetchRefused("The git host refused access: the repository needs a deploy token, or the "
                                   "token given is wrong or expired.")
            raise FetchRefused(f"git could not fetch branch {branch!r} of the repository: {said}")
    if _size(into) > settings.git_sync_max_bytes:
        raise FetchRefused(_too_large(settings))
    return _git(into, "rev-parse", "HEAD").decode().strip()


def _git(git_dir: Path, *args: str, data: bytes | None = None) -> bytes:
    """A local git command on the fetched repository (no network: protocols are all refused)."""
    result = subprocess.run(["git", "-c", "protocol.allow=never", "--git-dir", str(git_dir), *args], input=data,
                            capture_output=True, env=_git_environment(str(git_dir.parent / "home"), None), timeout=60,
                            check=False)
    if result.returncode != 0:
        said = _scrubbed(result.stderr.decode("utf-8", "replace"), None)
        raise FetchRefused(f"git could not read the fetched repository: {said}")
    return result.stdout


def _ignored(parts: list[str]) -> bool:
    """Hidden files and caches, as the catalog's reader skips them (service/catalog/loader.py)."""
    return any(part.startswith((".", "__pycache__")) for part in parts)


def exercise_folders(git_dir: Path, folder: str) -> list[ExerciseFolder]:
    """Every folder directly under `folder` (the repository's root when "") holding exercise.toml,
    with its files read from git's objects; symbolic links and submodules are refused entries."""
    prefix = folder.strip("/")
    listing = _git(git_dir, "ls-tree", "-r", "-z", "--full-tree", "HEAD", *([prefix] if prefix else []))
    if prefix and not listing:
        raise FetchRefused(f"The branch has no folder {prefix!r}.")
    entries: dict[str, list[tuple[str, str, str]]] = {}
    for record in listing.decode("utf-8", "surrogateescape").split("\0"):
        if not record:
            continue
        meta, _, path = record.partition("\t")
        mode, _kind, oid = meta.split(" ")
        rel = path[len(prefix) + 1:] if prefix else path
        if prefix and not path.startswith(prefix + "/"):
            continue
        parts = rel.split("/")
        if len(parts) < 2 or parts[0].startswith((".", "_")) or _ignored(parts[1:]):
            continue
        entries.setdefault(parts[0], []).append((mode, oid, "/".join(parts[1:])))
    folders = []
    for slug, found in sorted(entries.items()):
        if not any(rel == "exercise.toml" for _mode, _oid, rel in found):
            continue
        exercise = ExerciseFolder(slug)
        blobs = [(oid, rel) for mode, oid, rel in found if mode not in (SYMLINK_MODE, SUBMODULE_MODE)]
        exercise.refused = [rel for mode, _oid, rel in found if mode in (SYMLINK_MODE, SUBMODULE_MODE)]
        exercise.files = dict(zip([rel for _oid, rel in blobs], _blobs(git_dir, [oid for oid, _rel in blobs]),
                                  strict=True))
        folders.append(exercise)
    return folders


def _blobs(git_dir: Path, oids: list[str]) -> list[bytes]:
    """The objects' contents, in order, read in one `cat-file --batch`."""
    if not oids:
        return []
    out = _git(git_dir, "cat-file", "--batch", data="".join(f"{oid}\n" for oid in oids).encode())
    contents, at = [], 0
    for _ in oids:
        header_end = out.index(b"\n", at)
        size = int(out[at:header_end].split(b" ")[2])
        contents.append(out[header_end + 1:header_end + 1 + size])
        at = header_end + 1 + size + 1
    return contents


@contextmanager
def fetched(settings: Settings, url: str, branch: str, token: str | None) -> Iterator[tuple[str, Path]]:
    """The branch's head fetched into a temporary folder, removed afterwards: (commit, git dir)."""
    with tempfile.TemporaryDirectory(prefix="gradquiz-git-") as work:
        git_dir = Path(work) / "repo.git"
        commit = clone(settings, url, branch, token, git_dir)
        yield commit, git_dir
