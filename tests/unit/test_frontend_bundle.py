"""service/static/vendor/ (committed) is exactly what frontend/build.mjs builds from the lockfile.

The build test copies frontend/ (without node_modules) to a temporary folder, runs `npm ci` there
from frontend/package-lock.json and the build into another, and compares every file byte for byte:
a hand edit, a stale file, a file the build no longer makes, or a lockfile change without
`make static` fails it. It needs Node.js and npm (.ci/run installs Debian's when missing) and
npm's cache or the registry: about 2 s with npm's cache warm; a cold cache downloads about 9 MB.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from service.config import PROJECT_ROOT
from tests.helpers import node_tool

FRONTEND = PROJECT_ROOT / "frontend"
VENDOR_DIR = PROJECT_ROOT / "service" / "static" / "vendor"  # served by service/frontend.py
EXACT_VERSION = re.compile(r"\d+\.\d+\.\d+")


def tree(root: Path) -> dict[str, bytes]:
    return {path.relative_to(root).as_posix(): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


def run(command: list[str], cwd: Path) -> None:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"


def test_dependencies_are_pinned_exactly_in_the_lockfile():
    package = json.loads((FRONTEND / "package.json").read_text())
    lock = json.loads((FRONTEND / "package-lock.json").read_text())
    declared = {**package.get("dependencies", {}), **package.get("devDependencies", {})}
    assert declared, "no dependencies"
    for name, version in declared.items():
        assert EXACT_VERSION.fullmatch(version), f"{name}: {version!r} is a range, not an exact version"
        assert lock["packages"][f"node_modules/{name}"]["version"] == version, name
    root = lock["packages"][""]
    assert root.get("dependencies", {}) == package.get("dependencies", {})
    assert root.get("devDependencies", {}) == package.get("devDependencies", {})
    for path, entry in lock["packages"].items():
        if path:
            # Every package checked against its registry hash; none fetched from a URL of its own.
            assert entry.get("integrity", "").startswith("sha512-"), path
            assert "resolved" not in entry, path
    # No install script runs (frontend/.npmrc): @scarf/scarf's would report the install.
    assert "ignore-scripts=true" in (FRONTEND / ".npmrc").read_text().splitlines()


def test_the_committed_bundle_is_what_the_lockfile_builds(frontend_packages: Path, tmp_path: Path):
    work, out = frontend_packages, tmp_path / "vendor"
    run([node_tool("node"), "build.mjs", "--out", str(out)], work)

    built, committed = tree(out), tree(VENDOR_DIR)
    assert "swagger-ui/swagger-ui-bundle.js" in built and "api-docs.js" in built
    assert sorted(built) == sorted(committed), "the build makes other files than service/static/vendor/ holds: make static"
    differ = [path for path in built if built[path] != committed[path]]
    assert differ == [], f"service/static/vendor/ differs from the build in {differ}: make static"
    # The prebuilt files are the package's own bytes, not a copy of a copy.
    package_file = work / "node_modules" / "swagger-ui-dist" / "swagger-ui-bundle.js"
    assert committed["swagger-ui/swagger-ui-bundle.js"] == package_file.read_bytes()


def test_the_build_leaves_a_folder_it_did_not_make_alone(tmp_path: Path):
    node = node_tool("node")
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("not the build's")
    done = subprocess.run([node, str(FRONTEND / "build.mjs"), "--out", str(foreign)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 1 and "left alone" in done.stderr, done.stderr
    assert (foreign / "keep.txt").read_text() == "not the build's"
