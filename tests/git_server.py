"""A git server on 127.0.0.1: `git http-backend` (git's own smart HTTP server, as a CGI program)
behind a small HTTP server, serving bare repositories made in a folder. For the git sync's tests
and bench/git_sync.py.

`GitServer(root, token=...)` asks for HTTP basic auth with that token as the password (any user
name), as a host asks for a deploy token, and records each Authorization header it was sent;
`delay_seconds` makes it a slow host.
`Repository` is a working copy pushing to one bare repository of the server.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

GIT_IDENTITY = {"GIT_AUTHOR_NAME": "Teacher", "GIT_AUTHOR_EMAIL": "teacher@example.edu",
                "GIT_COMMITTER_NAME": "Teacher", "GIT_COMMITTER_EMAIL": "teacher@example.edu"}


def _git(cwd: Path, *args: str) -> str:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": os.devnull, **GIT_IDENTITY}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


class _Handler(BaseHTTPRequestHandler):
    """Each request run through `git http-backend` as a CGI program."""

    server: _Server

    def do_GET(self) -> None:
        self._backend()

    def do_POST(self) -> None:
        self._backend()

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _backend(self) -> None:
        git = self.server.git
        time.sleep(git.delay_seconds)
        authorization = self.headers.get("Authorization")
        if authorization:
            git.authorizations.append(authorization)
        if git.token is not None and not git.authorized(authorization):
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="git"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        parts = urlsplit(self.path)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_PROJECT_ROOT": str(git.root),
               "GIT_HTTP_EXPORT_ALL": "1", "REQUEST_METHOD": self.command, "PATH_INFO": parts.path,
               "QUERY_STRING": parts.query, "CONTENT_TYPE": self.headers.get("Content-Type", ""),
               "CONTENT_LENGTH": str(len(body)), "REMOTE_ADDR": self.client_address[0],
               "REMOTE_USER": "teacher", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
               "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
               "GIT_PROTOCOL": self.headers.get("Git-Protocol", "")}
        result = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True, check=False)
        head, _, payload = result.stdout.partition(b"\r\n\r\n")
        status, headers = 200, []
        for line in head.decode().split("\r\n"):
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers.append((name, value.strip()))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class _Server(ThreadingHTTPServer):
    git: GitServer


class GitServer:
    def __init__(self, root: Path, token: str | None = None) -> None:
        self.root, self.token = root, token
        self.authorizations: list[str] = []
        # A slow host: each answer waits this long first.
        self.delay_seconds = 0.0
        self.httpd = _Server(("127.0.0.1", 0), _Handler)
        self.httpd.git = self
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def authorized(self, authorization: str | None) -> bool:
        if not authorization or not authorization.startswith("Basic "):
            return False
        _user, _, password = base64.b64decode(authorization[6:]).decode().partition(":")
        return password == self.token

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}.git"

    def repository(self, name: str, work: Path) -> Repository:
        """A new bare repository `name` on the server (branch main), and a working copy in `work`."""
        bare = self.root / f"{name}.git"
        bare.mkdir(parents=True)
        _git(bare, "init", "--bare", "--initial-branch=main")
        work.mkdir(parents=True)
        _git(work, "init", "--initial-branch=main")
        _git(work, "remote", "add", "origin", str(bare))
        return Repository(work)

    def __enter__(self) -> GitServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class Repository:
    """A working copy: copy exercise folders in, write files, commit and push to the bare repository."""

    def __init__(self, work: Path) -> None:
        self.work = work

    def copy_exercise(self, source: Path, under: str = "", slug: str | None = None) -> None:
        """The exercise folder `source` copied to `under`/`slug` (default: its own name)."""
        shutil.copytree(source, self.work / under / (slug or source.name),
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))

    def write(self, path: str, text: str) -> None:
        target = self.work / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)

    def remove(self, path: str) -> None:
        shutil.rmtree(self.work / path)

    def push(self, message: str, branch: str = "main") -> str:
        """Commit everything and push it to `branch`; the commit."""
        _git(self.work, "add", "-A")
        _git(self.work, "commit", "--allow-empty", "-q", "-m", message)
        _git(self.work, "push", "-q", "origin", f"HEAD:refs/heads/{branch}")
        return _git(self.work, "rev-parse", "HEAD").strip()
