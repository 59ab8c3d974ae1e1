"""Helpers of the hostile suite: the judge under attack, canaries, and the containment checks.

A hostile submission is a ClampFn module whose backward has the wrong sign everywhere (so no grade
of it can honestly pass) plus an attack that runs at import time or inside forward/backward. When
an attack gets through, it prints MARKER (built at run time, so the submission's own source, which
may appear in a traceback, never contains it); the checks fail on any MARKER in the result.

Placeholders in attack sources (replaced by `render`): @@REF@@ (absolute path of the exercise's
reference.py), @@EXDIR@@ (the exercise folder), @@PROJECT@@, @@JUDGE_PID@@, @@ZYGOTE_PID@@,
@@OPEN@@ (a world-writable canary folder in /tmp), @@NEW@@ (a /tmp path that must not appear),
@@TMP@@ (the test's tmp_path), @@UUID@@ (this test's id), @@PORT@@ (a listening TCP port of the
test process, when the test opened one).
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import pathlib
import shutil
import signal
import socket
import time
import uuid

from service.grading.registry import gradient_score
from tests.grading.support import EXERCISES, WRONG_SIGN_CLAMPFN as TAMPER_HEADER, load_exercise

PROJECT = EXERCISES.parent
REFERENCE_PATH = EXERCISES / "clamp-function" / "reference.py"
MARKER = "PWNED:"


def _revealing_secret() -> bytes:
    """A secret unique to this run (so a leak is unmistakable) whose gradcheck case puts some x
    inside [-1, 1]. The grade's inputs are drawn from the secret, and for 1 secret in 256 all 8
    values of its gradcheck case fall where ClampFn's gradient is zero: a backward of the wrong
    sign then passes gradcheck honestly (torch's gradcheck would too), and "no gradient check
    passes" could not be asserted."""
    from service.grading.plan import base_cases
    from service.grading.spec import load_code_spec

    code, _ = load_code_spec(load_exercise("clamp-function")["spec"])
    while True:
        secret = ("hostile-secret-" + uuid.uuid4().hex).encode()
        gradcheck_case = base_cases(code, secret, "clamp-function")[0]  # random-1 (plan.complete_cases)
        if any(-1.0 < v < 1.0 for v in gradcheck_case.args[0].values):
            return secret


#: The secret of every judge of this suite.
SECRET = _revealing_secret()
CANARY_VAR = "GRADQUIZ_TEST_CANARY"
CANARY_VALUE = "canary-" + uuid.uuid4().hex
ALL_LAYERS = ("limits", "user", "namespaces", "filesystem", "seccomp")

#: The learner-side half of every hostile module: test_tamper's ClampFn (correct-looking, wrong
#: sign in backward) after a helper that reports an attack that got through.
HEADER = '''import os
import sys


def _leak(tag, data=""):
    sys.stdout.write("PW" + "NED:" + str(tag) + ":" + repr(data)[:3000] + "\\n")
    sys.stdout.flush()

''' + TAMPER_HEADER + "\n"


def reference_source() -> str:
    return REFERENCE_PATH.read_text(encoding="utf-8")


def secret_strings() -> list[str]:
    """What must never appear in a result: the judge's secret, the test process's secret-looking
    environment value, and the reference beyond its import line (its lines with `mask`)."""
    ref = reference_source()
    body = ref.split("\n", 1)[1].strip()
    lines = [line.strip() for line in ref.splitlines() if "mask" in line]
    assert lines, "the reference of clamp-function changed: update the hostile suite's secrets"
    return [SECRET.decode(), CANARY_VALUE, body, *lines]


def set_canary_environment() -> str | None:
    """Put the canary variable into this process's environment (before any judge starts)."""
    old = os.environ.get(CANARY_VAR)
    os.environ[CANARY_VAR] = CANARY_VALUE
    return old


def make_judge(layers=None, *, timeout: float = 3.0, memory_mb: int = 512, output_limit: int = 65536):
    from service.grading.judge import Judge

    if os.environ.get(CANARY_VAR) != CANARY_VALUE:
        set_canary_environment()
    # a judge of some layers only tests those layers: it skips the custom ops' preload (2.5 s a zygote)
    kwargs = {} if layers is None else {"layers": set(layers), "custom_ops": False}
    return Judge(SECRET, slots=1, timeout=timeout, memory_mb=memory_mb, output_limit=output_limit, **kwargs)


def clamp() -> dict:
    return load_exercise("clamp-function")


# --------------------------------------------------------------------------- canaries


def _snapshot(folder: pathlib.Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


class Canaries:
    """Paths hostile code tries to write; `check` asserts they are untouched and cleans up."""

    def __init__(self, tmp_path: pathlib.Path) -> None:
        self.uuid = uuid.uuid4().hex
        self.tmp = tmp_path / "canary"
        self.tmp.mkdir()
        # World-writable, so only the sandbox (not file permissions) keeps a child out of it.
        self.open_dir = pathlib.Path(f"/tmp/gradquiz-hostile-{self.uuid}")
        self.open_dir.mkdir(mode=0o777)
        os.chmod(self.open_dir, 0o777)
        self.new_path = pathlib.Path(f"/tmp/gradquiz-hostile-{self.uuid}.new")
        self.exdir = REFERENCE_PATH.parent
        self.before = _snapshot(self.exdir)
        self.must_not_exist: list[pathlib.Path] = [self.new_path, pathlib.Path(f"/leftover-{self.uuid}"),
                                                   pathlib.Path(f"/big-{self.uuid}.bin"),
                                                   pathlib.Path(f"/dev/shm/gradquiz-hostile-{self.uuid}")]
        self.port: int | None = None

    def substitutions(self, judge) -> dict[str, str]:
        info = judge.info()
        return {
            "@@REF@@": str(REFERENCE_PATH),
            "@@EXDIR@@": str(self.exdir),
            "@@PROJECT@@": str(PROJECT),
            "@@JUDGE_PID@@": str(info["judge_pid"]),
            "@@ZYGOTE_PID@@": str(info["zygote_pid"]),
            "@@OPEN@@": str(self.open_dir),
            "@@NEW@@": str(self.new_path),
            "@@TMP@@": str(self.tmp),
            "@@UUID@@": self.uuid,
            "@@PORT@@": str(self.port or 9),
        }

    def render(self, judge, source: str) -> str:
        for key, value in self.substitutions(judge).items():
            source = source.replace(key, value)
        return source

    def problems(self) -> list[str]:
        found = []
        for folder in (self.tmp, self.open_dir):
            if os.path.ismount(folder):
                found.append(f"something was mounted on {folder}")
        if any(self.tmp.iterdir()):
            found.append(f"{self.tmp} holds {sorted(p.name for p in self.tmp.iterdir())}")
        if any(self.open_dir.iterdir()):
            found.append(f"{self.open_dir} holds {sorted(p.name for p in self.open_dir.iterdir())}")
        for p in self.must_not_exist:
            if os.path.lexists(p):
                found.append(f"{p} exists")
        after = _snapshot(self.exdir)
        if after != self.before:
            found.append(f"{self.exdir} changed: {sorted(set(after.items()) ^ set(self.before.items()))}")
        return found

    def cleanup(self) -> None:
        for folder in (self.tmp, self.open_dir):
            if os.path.ismount(folder):
                ctypes.CDLL(None, use_errno=True).umount2(str(folder).encode(), 2)  # MNT_DETACH
        shutil.rmtree(self.open_dir, ignore_errors=True)
        for p in self.must_not_exist:
            try:
                if p.is_dir() and not p.is_symlink():
                    shutil.rmtree(p, ignore_errors=True)
                elif os.path.lexists(p):
                    p.unlink()
            except OSError:
                pass
        for rel in set(_snapshot(self.exdir)) - set(self.before):
            try:
                (self.exdir / rel).unlink()
            except OSError:
                pass


# --------------------------------------------------------------------------- processes


def _status_fields(pid: str) -> dict[str, str]:
    fields = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
    except OSError:
        pass
    return fields


def slot_processes(judge) -> list[tuple[int, str]]:
    """Processes of the judge's slots other than its spare children: (pid, name)."""
    info = judge.info()
    sandbox = info.get("sandbox") or {}
    uids = set(sandbox.get("child_uids") or [])
    if sandbox.get("child_uid") is not None:
        uids.add(sandbox["child_uid"])
    spares = set(info.get("spare_pids") or [])
    zygote = info["zygote_pid"]
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in spares:
            continue
        fields = _status_fields(name)
        if not fields:
            continue
        if uids:
            mine = int(fields.get("Uid", "-1").split()[0]) in uids
        else:
            mine = fields.get("PPid") == str(zygote)
        if mine:
            found.append((int(name), f"{fields.get('Name')} state={fields.get('State')}"))
    return found


def assert_no_slot_process_left(judge, grace: float = 2.5) -> None:
    end = time.monotonic() + grace
    while True:
        if hasattr(judge, "wait_warm"):
            judge.wait_warm(5.0)
        left = slot_processes(judge)
        if not left:
            return
        if time.monotonic() > end:
            for pid, _ in left:  # reported once: the next case starts clean
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            raise AssertionError(f"processes of the slot outlived the grade: {left}")
        time.sleep(0.05)


# --------------------------------------------------------------------------- the containment check


def active_layers(judge) -> list[str]:
    return list((judge.info().get("sandbox") or {}).get("active") or [])


def assert_no_secret(result: dict) -> None:
    blob = json.dumps(result)
    raw = "".join(str(result.get("output", {}).get(k, "")) for k in ("stdout", "stderr"))
    for secret in secret_strings():
        assert secret not in blob and secret not in raw, f"a secret leaked into the result: {secret[:40]!r}"
    assert MARKER not in blob and MARKER not in raw, f"an attack got through: {_markers(raw or blob)}"


def _markers(text: str) -> list[str]:
    return [line[:300] for line in text.splitlines() if MARKER in line][:5]


def assert_contained(judge, result: dict, expect: set[str], *, canaries: Canaries, exercise: dict,
                     forbidden: bool = False, wrong_backward: bool = True) -> None:
    """Every promise of the sandbox, after one hostile grade."""
    try:
        status = result["status"]
        detail = f"status {status!r}, checks {[c['message'] for c in result.get('checks', [])][-2:]}, " \
                 f"output {str(result.get('output'))[:600]}"
        # 1. the verdict
        assert status != "passed" and result["score"] < 1.0, detail
        assert status in expect, detail
        if forbidden and "seccomp" in active_layers(judge):
            assert status == "forbidden", detail
        if wrong_backward:
            assert gradient_score(result) == 0.0, [c for c in result["checks"] if c["passed"]]
        # 5. no secret in any output, and no attack reported success
        assert_no_secret(result)
        # 2. the zygote survived the attack (with the user layer nothing may kill it)
        info = judge.info()
        if "user" in active_layers(judge):
            assert info["zygote_alive"], "the hostile submission killed the zygote"
        # 3. nothing of the slot is left running
        assert_no_slot_process_left(judge)
        # 4. nothing written outside the child's scratch
        problems = canaries.problems()
        assert not problems, problems
    finally:
        canaries.cleanup()
    # 6. the next correct submission still passes, and the zygote is (again) alive
    ref = judge.grade(exercise, exercise["files"]["reference.py"])
    assert ref["status"] == "passed" and ref["score"] == 1.0, ref["checks"]
    assert judge.info()["zygote_alive"]


def listening_socket() -> socket.socket:
    """A TCP listener of the test process on loopback: what a child must not reach."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    return s


# --------------------------------------------------------------------------- SysV shared memory


def sysv_segment_exists(key: int) -> bool:
    try:
        with open("/proc/sysvipc/shm") as f:
            next(f)
            return any(line.split() and int(line.split()[0]) == key for line in f)
    except OSError:
        return False


def remove_sysv_segment(key: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    shmid = libc.shmget(key, 0, 0)
    if shmid >= 0:
        libc.shmctl(shmid, 0, None)  # IPC_RMID
