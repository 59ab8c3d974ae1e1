"""The trusted judge: grades a submission in a fresh child of a warm zygote and decides the verdict.

Process layout (see ../../../shared/DESIGN.md)::

    worker process ── Judge (this module; trusted; holds the secret; imports no torch)
        │  SOCK_SEQPACKET control socket, pipes' fds passed with SCM_RIGHTS
        zygote (exec'd: `python -I zygote.py`, clean minimal environment, torch preloaded, 1 thread)
        │  fork: one child per run, a spare kept forked and warmed per slot
        child (own process group; task pipe in, result pipe out, stdout/stderr pipes)

For each grade the judge takes the slot's spare child (already warmed up and inside its sandbox),
asks the zygote for the next spare, writes the task frame (code + plan) to the child, reads the
result frame from the dedicated result pipe as soon as it arrives (not waiting for the child to
exit), drains stdout/stderr (capped), and kills the child's process group. A wall-clock deadline
kills the group too. The reference runs the same plan in a separate trusted child, once per
exercise version (cached); the judge then compares the two reports in pure Python (`verdict`).
"""

from __future__ import annotations

import ast
import math
import hashlib
import json
import os
import queue
import selectors
import signal
import fcntl
import socket
import struct
import subprocess
import termios
import sys
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any, Iterable

from . import protocol
from .errors import BadOutput, GraderFault
from .plan import base_cases, canonical, complete_cases, task_cases
from .spec import (
    CHECKS,
    DEFAULT_TIMEOUT,
    LIKELY_CAUSES,
    MAX_CODE_BYTES,
    parse_code_table,
)
from .runs import plan_run, summarize_run
from .verdict import Verdict, assemble, torch_messages, validate_report

GRADER_VERSION = 1
ZYGOTE_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "zygote.py")
OUTPUT_LIMIT = 64 * 1024
TRUSTED_TIMEOUT = 60.0
SPAWN_TIMEOUT = 30.0
_SIGNAL_NAMES = {int(s): s.name for s in signal.Signals}
#: Signals that name a limit rather than a crash: (verdict, message for the learner).
SIGNAL_VERDICTS = {
    signal.SIGSYS: ("forbidden", "your code tried an operation the sandbox forbids (starting a process, opening a "
                                 "network connection, or another system call that grading code never needs) and was stopped"),
    signal.SIGXCPU: ("timeout", "your code used more CPU time than it is allowed and was stopped"),
    signal.SIGXFSZ: ("output_limit", "your code wrote a file larger than it is allowed and was stopped"),
}
#: An output flood: past this many times the output cap, the child is stopped.
OUTPUT_FLOOD_FACTOR = 16


def _perf_ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000.0, 3)


def _out_of_memory(error: dict | None) -> bool:
    """Whether the learner's code failed for want of memory (its allowance is the sandbox's)."""
    if not error:
        return False
    return error.get("type") == "MemoryError" or "can't allocate memory" in str(error.get("message", ""))


def clean_environment() -> dict[str, str]:
    """The zygote's whole environment: nothing of the worker's (no secrets, no DB URL)."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "HOME": "/nonexistent"}
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
        env[var] = "1"
    return env


def _python_for_zygote() -> str:
    """The interpreter of this venv (torch lives in its site-packages)."""
    return sys.executable


@dataclass
class _Child:
    pid: int
    task_w: int
    result_r: int
    out_r: int
    err_r: int
    closed: bool = False

    def is_warm(self, timeout: float = 0.0) -> bool:
        """True once the child has finished its warm-up (its "ready" frame is readable)."""
        sel = selectors.DefaultSelector()
        try:
            sel.register(self.result_r, selectors.EVENT_READ)
            return bool(sel.select(timeout))
        finally:
            sel.close()

    def kill(self) -> None:
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            for fd in (self.task_w, self.result_r, self.out_r, self.err_r):
                try:
                    os.close(fd)
                except OSError:
                    pass


class _Zygote:
    """The exec'd zygote process and its control channel (a reader thread dispatches replies)."""

    def __init__(self, python: str, config: dict, startup_timeout: float = 120.0) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock = ours
        self._send_lock = threading.Lock()
        self._ids = iter(range(1, 1 << 62))
        self._pending: dict[int, Future] = {}
        self._exits: OrderedDict[int, dict] = OrderedDict()
        self._exit_cond = threading.Condition()
        self.dead = False
        self.ready: dict = {}
        try:
            self.proc = subprocess.Popen(
                [python, "-I", ZYGOTE_SCRIPT, str(theirs.fileno()), json.dumps(config)],
                env=clean_environment(),
                cwd="/",
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                pass_fds=(theirs.fileno(),),
                close_fds=True,
                start_new_session=True,
            )
        finally:
            theirs.close()
        ours.settimeout(startup_timeout)
        try:
            msg = ours.recv(65536)
        except (socket.timeout, OSError) as exc:
            self.kill()
            raise GraderFault(f"zygote did not start: {exc}") from exc
        if not msg:
            code = self.proc.wait(timeout=5)
            raise GraderFault(f"zygote exited during start-up (exit code {code})")
        self.ready = json.loads(msg)
        ours.settimeout(None)
        self._reader = threading.Thread(target=self._read_loop, name="zygote-reader", daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _read_loop(self) -> None:
        try:
            while True:
                msg, fds, _flags, _addr = socket.recv_fds(self.sock, 65536, 8)
                if not msg:
                    break
                obj = json.loads(msg)
                op = obj.get("op")
                if op == "spawned":
                    fut = self._pending.pop(obj["id"], None)
                    if fut is None or len(fds) != 4:
                        for fd in fds:
                            os.close(fd)
                        if obj.get("pid"):
                            try:
                                os.killpg(obj["pid"], signal.SIGKILL)
                            except OSError:
                                pass
                        continue
                    fut.set_result(_Child(obj["pid"], *fds))
                elif op == "exited":
                    with self._exit_cond:
                        self._exits[obj["pid"]] = obj
                        while len(self._exits) > 4096:
                            self._exits.popitem(last=False)
                        self._exit_cond.notify_all()
                else:
                    for fd in fds:
                        os.close(fd)
        except (OSError, ValueError):
            pass
        finally:
            self.dead = True
            for fut in list(self._pending.values()):
                if not fut.done():
                    fut.set_exception(GraderFault("the zygote died"))
            self._pending.clear()
            with self._exit_cond:
                self._exit_cond.notify_all()

    def spawn(self, memory_mb: int, slot: int) -> Future:
        fut: Future = Future()
        if self.dead:
            fut.set_exception(GraderFault("the zygote is not running"))
            return fut
        with self._send_lock:
            n = next(self._ids)
            self._pending[n] = fut
            try:
                self.sock.send(json.dumps({"op": "spawn", "id": n, "memory_mb": memory_mb, "slot": slot}).encode())
            except OSError as exc:
                self._pending.pop(n, None)
                fut.set_exception(GraderFault(f"cannot reach the zygote: {exc}"))
        return fut

    def exit_status(self, pid: int, timeout: float) -> dict | None:
        end = time.monotonic() + timeout
        with self._exit_cond:
            while pid not in self._exits and not self.dead:
                left = end - time.monotonic()
                if left <= 0:
                    return None
                self._exit_cond.wait(left)
            return self._exits.pop(pid, None)

    def close(self) -> None:
        try:
            with self._send_lock:
                self.sock.send(b'{"op": "exit"}')
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
        try:
            self.sock.close()
        except OSError:
            pass

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except Exception:
            pass


class _Session:
    """One child running one task: frames in, output drained and capped, then killed."""

    def __init__(self, child: _Child, task: bytes, deadline: float, output_limit: int, result_limit: int) -> None:
        self.child = child
        self.deadline = deadline
        self.output_limit = output_limit
        self.frames: list[dict] = []
        self.reader = protocol.FrameReader(result_limit)
        self.out = {child.out_r: bytearray(), child.err_r: bytearray()}
        self.out_total = {child.out_r: 0, child.err_r: 0}
        self.bad: str | None = None
        self.flooded = False
        self.eof = False
        self.timed_out = False
        self._pending = memoryview(task)
        self.after_finish: Any = None
        self.sel = selectors.DefaultSelector()
        for fd in (child.task_w, child.result_r, child.out_r, child.err_r):
            os.set_blocking(fd, False)
        self.sel.register(child.task_w, selectors.EVENT_WRITE, "task")
        self.sel.register(child.result_r, selectors.EVENT_READ, "result")
        self.sel.register(child.out_r, selectors.EVENT_READ, "out")
        self.sel.register(child.err_r, selectors.EVENT_READ, "out")
        self._pump_write()  # most tasks fit the pipe: written before the first select

    def _pump_write(self) -> None:
        while self._pending:
            try:
                n = os.write(self.child.task_w, self._pending)
            except BlockingIOError:
                return
            except BrokenPipeError:
                self._pending = memoryview(b"")
                break
            self._pending = self._pending[n:]
        try:
            self.sel.unregister(self.child.task_w)
        except (KeyError, ValueError):
            pass

    def _read_out(self, fd: int) -> str:
        """Read what is available from stdout/stderr: "data", "again" (nothing now) or "eof"."""
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            return "again"
        except OSError:
            data = b""
        if not data:
            try:
                self.sel.unregister(fd)
            except (KeyError, ValueError):
                pass
            return "eof"
        self.out_total[fd] += len(data)
        if self.out_total[fd] > OUTPUT_FLOOD_FACTOR * self.output_limit:
            self.flooded = True
        room = self.output_limit - len(self.out[fd])
        if room > 0:
            self.out[fd] += data[:room]
        return "data"

    def wait_frames(self, n: int, deadline: float | None = None) -> bool:
        """Pump until n frames have arrived; False on timeout, EOF or bad output."""
        deadline = self.deadline if deadline is None else min(deadline, self.deadline)
        while len(self.frames) < n:
            if self.bad or self.eof or self.flooded:
                return False
            left = deadline - time.monotonic()
            if left <= 0:
                if deadline >= self.deadline:
                    self.timed_out = True
                return False
            # No busy-waiting: under load the child needs this core more than we do.
            for key, _ in self.sel.select(left):
                if key.data == "task":
                    self._pump_write()
                elif key.data == "out":
                    self._read_out(key.fd)
                else:
                    try:
                        data = os.read(key.fd, 1 << 20)
                    except BlockingIOError:
                        continue
                    except OSError:
                        data = b""
                    if not data:
                        self.eof = True
                        self.sel.unregister(key.fd)
                        continue
                    try:
                        for frame in self.reader.feed(data):
                            if not self.frames and frame.get("type") == "ready":
                                continue  # the spare's warm-up is done (sent before the task)
                            self.frames.append(frame)
                    except protocol.FrameError as exc:
                        self.bad = str(exc)
        return True

    def task_consumed(self) -> bool:
        """Whether the child read its whole task (if not, it died before starting: our fault)."""
        if self._pending:
            return False
        try:
            buf = fcntl.ioctl(self.child.task_w, termios.FIONREAD, b"\0\0\0\0")
            return struct.unpack("i", buf)[0] == 0
        except OSError:
            return True

    def request_more(self, frame: dict) -> None:
        """Send a follow-up frame to the child (e.g. "go on with torch's gradcheck")."""
        try:
            protocol.write_all(self.child.task_w, protocol.encode(frame))
        except OSError:
            pass

    def finish(self) -> dict:
        """Take what is already in the output pipes (the child flushed them before its frame;
        no waiting for its exit), kill the group, close everything."""
        for fd in (self.child.out_r, self.child.err_r):
            for _ in range(256):
                if self._read_out(fd) != "data":
                    break
        self.child.kill()
        self.sel.close()
        self.child.close()
        if self.after_finish is not None:
            self.after_finish()
        truncated = any(self.out_total[fd] > len(self.out[fd]) for fd in self.out)
        return {
            "stdout": self.out[self.child.out_r].decode("utf-8", "replace"),
            "stderr": self.out[self.child.err_r].decode("utf-8", "replace"),
            "truncated": truncated,
        }


@dataclass
class _Prepared:
    code: dict
    cases: list[dict]
    task_prefix: bytes
    ref: dict
    reference_ms: float


@dataclass
class _Slot:
    index: int
    spare: Future | None = None
    history: list = field(default_factory=list)
    # Guards `spare`: a grade takes it while the janitor may be installing the next one.
    lock: threading.Lock = field(default_factory=threading.Lock)

    def take_spare(self) -> Future | None:
        with self.lock:
            fut, self.spare = self.spare, None
            return fut


class Judge:
    """Grades code submissions. Thread-safe: up to `slots` grades run at once.

    `secret` seeds the generated inputs and grad_outputs (keep it out of the exercise files and
    the same across workers, so every worker grades one version identically). `layers` names the
    sandbox layers to apply (sandbox.LAYERS); None: every layer the machine supports.
    """

    def __init__(
        self,
        secret: bytes,
        *,
        slots: int = 1,
        timeout: float = DEFAULT_TIMEOUT,
        output_limit: int = OUTPUT_LIMIT,
        memory_mb: int = 1024,
        python: str | None = None,
        cache_size: int = 512,
        layers: Iterable[str] | None = None,
    ) -> None:
        if not isinstance(secret, (bytes, bytearray)) or len(secret) < 16:
            raise ValueError("secret must be at least 16 bytes")
        if slots < 1:
            raise ValueError("slots must be at least 1")
        self._secret = bytes(secret)
        self.timeout = float(timeout)
        self.output_limit = int(output_limit)
        self.memory_mb = int(memory_mb)
        self._python = python or _python_for_zygote()
        self._cache: OrderedDict[str, _Prepared] = OrderedDict()
        self._cache_size = cache_size
        self._cache_lock = threading.Lock()
        self._prep_locks: dict[str, threading.Lock] = {}
        self._zygote_lock = threading.Lock()
        self._closed = False
        self._zygote_config = {"layers": None if layers is None else sorted(set(layers)),
                               "cpu_seconds": int(math.ceil(max(self.timeout, TRUSTED_TIMEOUT))) + 1}
        self._zygote = _Zygote(self._python, self._zygote_config)
        # Off-critical-path chores (asking the zygote for the next spare wakes it, and on two
        # cores its fork would preempt the judge before the verdict is returned).
        self._janitor: queue.Queue = queue.Queue()
        threading.Thread(target=self._janitor_loop, name="judge-janitor", daemon=True).start()
        self._slots = [_Slot(i) for i in range(slots)]
        self._free: queue.Queue[_Slot] = queue.Queue()
        for s in self._slots:
            s.spare = self._spawn(s)
            self._free.put(s)

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> "Judge":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._janitor.put(None)
        for s in self._slots:
            self._discard_spare(s)
        self._zygote.close()

    def info(self) -> dict:
        """Process facts for health checks and the benchmark."""
        z = self._zygote
        spares = []
        for s in self._slots:
            fut = s.spare
            if fut is not None and fut.done() and not fut.exception():
                spares.append(fut.result().pid)
        report = z.ready.get("sandbox", {})
        base = report.get("child_uid_base")
        sandbox = {"active": report.get("active", []), "unavailable": report.get("unavailable", {}),
                   "child_uid": base, "child_uids": [base + s.index for s in self._slots] if base is not None else []}
        return {"judge_pid": os.getpid(), "zygote_pid": z.pid, "zygote": z.ready, "spare_pids": spares,
                "zygote_alive": not z.dead and z.proc.poll() is None, "sandbox": sandbox}

    def _janitor_loop(self) -> None:
        while True:
            job = self._janitor.get()
            if job is None:
                return
            try:
                job()
            except Exception:
                pass

    def wait_warm(self, timeout: float = 30.0) -> bool:
        """Block until every idle slot's spare child is forked and warmed up (benchmarks, tests)."""
        end = time.monotonic() + timeout
        for s in self._slots:
            while s.spare is None and time.monotonic() < end and not self._closed:
                time.sleep(0.0005)  # the janitor is about to request it
            fut = s.spare
            if fut is None:
                return False
            try:
                child = fut.result(timeout=max(0.0, end - time.monotonic()))
            except Exception:
                return False
            if not child.is_warm(max(0.0, end - time.monotonic())):
                return False
        return True

    def _discard_spare(self, slot: _Slot) -> None:
        self._discard(slot.take_spare())

    @staticmethod
    def _discard(fut: Future | None) -> None:
        if fut is None:
            return
        try:
            child = fut.result(timeout=SPAWN_TIMEOUT)
        except Exception:
            return
        child.kill()
        child.close()

    def _ensure_zygote(self) -> None:
        with self._zygote_lock:
            if self._closed:
                raise GraderFault("the judge is closed")
            if not self._zygote.dead and self._zygote.proc.poll() is None:
                return
            old = self._zygote
            old.kill()
            self._zygote = _Zygote(self._python, self._zygote_config)

    def _take_child(self, slot: _Slot) -> tuple[_Child, bool]:
        """The slot's warm spare (and a new spare requested at once, off the critical path)."""
        for _ in range(2):
            self._ensure_zygote()
            zygote = self._zygote
            # Taken, so the slot has no spare: the next is forked once this child is dead (_execute).
            fut = slot.take_spare()
            if fut is None or getattr(fut, "zygote", None) is not zygote:
                self._discard(fut)
                fut = self._spawn(slot)
            ready = fut.done()
            try:
                child = fut.result(timeout=SPAWN_TIMEOUT)
                return child, ready and child.is_warm(0)
            except FutureTimeout as exc:
                raise GraderFault("the zygote did not fork a child in time") from exc
            except GraderFault:
                continue  # the zygote died: restart it once
        raise GraderFault("no child could be started")

    def _spawn(self, slot: _Slot) -> Future:
        fut = self._zygote.spawn(self.memory_mb, slot.index)
        fut.zygote = self._zygote  # type: ignore[attr-defined]
        return fut

    def _execute(self, task: bytes, timeout: float, slot: _Slot, wait: bool = True) -> tuple[_Session, bool, float]:
        child, ready = self._take_child(slot)
        t0 = time.perf_counter()
        session = _Session(child, protocol.encode_raw(task), time.monotonic() + timeout, self.output_limit, protocol.MAX_RESULT_FRAME)

        def next_spare() -> None:
            # Forked after the verdict's child is killed, not while it runs: on two cores a fork
            # and a warm-up next to the graded child cost it more than the fork saves.
            with slot.lock:
                if slot.spare is None and not self._closed:
                    try:
                        slot.spare = self._spawn(slot)
                    except Exception:
                        slot.spare = None

        session.after_finish = lambda: self._janitor.put(next_spare)
        if wait:
            session.wait_frames(1)
        return session, ready, t0

    def _crash_verdict(self, session: _Session) -> tuple[str, str]:
        """The verdict and message for a child that ended (or was stopped) without a result frame."""
        if session.flooded:
            return "output_limit", f"your code kept writing output far past the {self.output_limit // 1024} KiB limit and was stopped"
        st = self._zygote.exit_status(session.child.pid, 1.0)
        if st is None:
            return "crashed", "the process running your code ended before reporting its results"
        if "signal" in st:
            verdict = SIGNAL_VERDICTS.get(st["signal"])
            if verdict is not None:
                return verdict
            name = _SIGNAL_NAMES.get(st["signal"], str(st["signal"]))
            return "crashed", f"the process running your code was killed by signal {name} before reporting its results"
        return "crashed", (f"the process running your code exited (exit code {st.get('code')}) before reporting its "
                           "results, e.g. through os._exit or a crash")

    # ------------------------------------------------------------------ reference

    def _trusted_run(self, slot: _Slot, code: str, entry_point: str, cases: list[dict]) -> dict:
        task = json.dumps({"op": "grade", "code": code, "entry_point": entry_point, "module_name": "reference",
                           "cases": cases}, separators=(",", ":")).encode()
        session, _, _ = self._execute(task, TRUSTED_TIMEOUT, slot)
        try:
            if not session.frames:
                reason = "timed out" if session.timed_out else (session.bad or "ended without a result")
                out = session.finish()
                raise GraderFault(f"reference run {reason}; stderr: {out['stderr'][-2000:]}")
            return session.frames[0]
        finally:
            if not session.child.closed:
                session.finish()

    def _prepare(self, exercise: dict, slot: _Slot) -> tuple[_Prepared, bool]:
        spec, files, slug = exercise["spec"], exercise["files"], exercise["slug"]
        reference = files.get("reference.py")
        key = hashlib.sha256(canonical({"slug": slug, "code": spec.get("code"), "reference": reference}).encode()).hexdigest()
        with self._cache_lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return hit, False
            lock = self._prep_locks.setdefault(key, threading.Lock())
        with lock:
            with self._cache_lock:
                if key in self._cache:
                    return self._cache[key], False
            t0 = time.perf_counter()
            prepared = self._build(slug, spec, reference, slot)
            prepared.reference_ms = _perf_ms(t0)
            with self._cache_lock:
                self._cache[key] = prepared
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
                self._prep_locks.pop(key, None)
            return prepared, True

    def _build(self, slug: str, spec: dict, reference: str | None, slot: _Slot) -> _Prepared:
        code, problems = parse_code_table(spec)
        if problems:
            raise GraderFault(f"exercise {slug}: invalid [code] table: {problems[:3]}")
        if not reference:
            raise GraderFault(f"exercise {slug}: no reference.py")
        ep = code["entry_point"]
        cases0 = base_cases(code, self._secret, slug)
        probe = self._trusted_run(slot, reference, ep, task_cases(cases0))
        self._check_reference(slug, probe, cases0, probe_mode=True)
        cases = complete_cases(code, cases0, probe, self._secret, slug)
        ref = self._trusted_run(slot, reference, ep, task_cases(cases))
        self._check_reference(slug, ref, cases, probe_mode=False)
        # The reference must pass its own grade: otherwise the exercise (or the grader) is broken.
        v = Verdict(code, cases, ref, ref, source=reference)
        v.run()
        summary = assemble(code, v.results, v.diagnostics, "")
        if summary["score"] < 1.0:
            failed = [f"{c['name']}: {c['message']}" for c in summary["checks"] if not c["passed"]]
            raise GraderFault(f"exercise {slug}: the reference fails its own checks: {failed[:3]}")
        for case in cases:
            eg = case.get("expected_grad")
            if not eg or "ones" not in case.get("vjp_kinds", []):
                continue
            rv = v.ref_cases[case["id"]]["vjps"][case["vjp_kinds"].index("ones")]["grads"]
            diff_in = [i for i, a in enumerate(case["args"]) if a["t"] == "tensor" and a.get("rg")]
            names = [inp["name"] for inp in code["inputs"]]
            for pos, arg_i in enumerate(diff_in):
                want = eg.get(names[arg_i])
                if want is not None and rv[pos] != want and not all(abs(a - b) <= 1e-9 for a, b in zip(rv[pos] or [], want)):
                    raise GraderFault(f"exercise {slug}: reference gradient {rv[pos]} at {case['name']} differs from expected_grad {want}")
        cases_json = json.dumps(task_cases(cases), separators=(",", ":"))
        memory_mb = min(code["memory_mb"], self.memory_mb)
        prefix = (f'{{"op":"grade","entry_point":{json.dumps(ep)},"module_name":"submission","torch_checks":"wait",'
                  f'"memory_mb":{memory_mb},"cases":{cases_json},"code":').encode()
        return _Prepared(code, cases, prefix, ref, 0.0)

    def _check_reference(self, slug: str, rep: dict, cases: list[dict], probe_mode: bool) -> None:
        try:
            validate_report(rep, cases)
        except BadOutput as exc:
            raise GraderFault(f"exercise {slug}: reference report invalid: {exc}") from exc
        if not rep["load"]["ok"]:
            raise GraderFault(f"exercise {slug}: reference.py raised on load: {rep['load']['error']['message']}")
        if not (rep.get("entry") or {}).get("is_function"):
            raise GraderFault(f"exercise {slug}: reference.py lacks the entry point")
        if len(rep["cases"]) != len(cases):
            raise GraderFault(f"exercise {slug}: reference report incomplete")
        for c in rep["cases"]:
            if not c["forward"]["ok"]:
                raise GraderFault(f"exercise {slug}: reference forward raised on {c['id']}: {c['forward']['error']['message']}")
            for vr in c.get("vjps", []):
                if not vr["ok"]:
                    raise GraderFault(f"exercise {slug}: reference backward raised on {c['id']}: {vr['error']['message']}")
            for k in ("gradcheck", "gradgrad"):
                if k in c and not c[k]["ok"]:
                    raise GraderFault(f"exercise {slug}: reference {k} raised on {c['id']}: {c[k]['error']['message']}")

    def prepare(self, exercise: dict) -> float:
        """Compute and cache the reference results of an exercise version (optional warm-up);
        returns the milliseconds it took (0 when cached)."""
        slot = self._free.get()
        try:
            prepared, fresh = self._prepare(exercise, slot)
            return prepared.reference_ms if fresh else 0.0
        finally:
            self._free.put(slot)

    # ------------------------------------------------------------------ grading

    @staticmethod
    def _parse(code: str) -> dict | None:
        """A syntax error as the learner should see it, or None when the code parses."""
        try:
            compile(code, "submission.py", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
            return None
        except SyntaxError as exc:
            line, col = exc.lineno, exc.offset
            text = (exc.text or "").rstrip("\n")
            where = f"line {line}, column {col}" if line else "somewhere"
            return {"where": "parse", "type": type(exc).__name__, "message": f"{exc.msg} ({where})", "line": line,
                    "column": col, "traceback": f'  File "submission.py", line {line}\n    {text}\n{type(exc).__name__}: {exc.msg}\n' if line else ""}
        except (ValueError, RecursionError, MemoryError, OverflowError) as exc:
            return {"where": "parse", "type": type(exc).__name__, "message": str(exc)[:500], "line": None, "column": None, "traceback": ""}

    def _verdict_only(self, code_table: dict, status: str, message: str, *, parses: bool, error: dict | None = None) -> dict:
        results = {"parses": {"passed": parses, "message": "The code parses." if parses else message}}
        summary = assemble(code_table, results, [], message)
        summary["score"] = 0.0
        return {"score": 0.0, "status": status, "checks": summary["checks"], "diagnostics": [], "likely_causes": [],
                "feedback": [], "error": error}

    def grade(self, exercise: dict, code: str, *, timeout: float | None = None) -> dict:
        """Grade `code` against `exercise` ({"slug", "spec", "files"}). Never raises for the
        submission's faults; raises GraderFault for the grader's own."""
        t_start = time.perf_counter()
        if not isinstance(code, str):
            raise TypeError("code must be a string")
        slot = self._free.get()
        wait_ms = _perf_ms(t_start)
        try:
            try:
                prepared, fresh = self._prepare(exercise, slot)
            except GraderFault:
                raise
            except (KeyError, TypeError, ValueError) as exc:
                raise GraderFault(f"cannot prepare exercise: {exc!r}") from exc
            result = self._grade_prepared(prepared, code, timeout, slot)
        finally:
            self._free.put(slot)
        result["timings"]["wait_slot_ms"] = wait_ms
        if fresh:
            result["timings"]["reference_ms"] = prepared.reference_ms
        result["timings"]["total_ms"] = _perf_ms(t_start)
        return result

    def _grade_prepared(self, prepared: _Prepared, code: str, timeout: float | None, slot: _Slot) -> dict:
        ctab = prepared.code
        limit = timeout if timeout is not None else min(ctab["timeout"], self.timeout)
        timings: dict[str, Any] = {}
        empty_output = {"stdout": "", "stderr": "", "truncated": False}
        if len(code.encode("utf-8", "replace")) > MAX_CODE_BYTES:
            r = self._verdict_only(ctab, "too_large", f"the code is larger than {MAX_CODE_BYTES // 1024} KiB", parses=False)
            return self._finish_result(r, empty_output, timings)
        task = prepared.task_prefix + json.dumps(code).encode() + b"}"
        session, ready, t0 = self._execute(task, limit, slot, wait=False)
        timings["spare_ready"] = ready
        try:
            # Parse here, in the trusted process, while the child works (off the critical path).
            err = self._parse(code)
            if err is not None:
                session.finish()
                r = self._verdict_only(ctab, "syntax_error", f"the code does not parse: {err['message']}", parses=False, error=err)
                r["checks"][0]["message"] = f"Syntax error: {err['message']}."
                return self._finish_result(r, empty_output, timings)
            session.wait_frames(1)
            if not session.frames:
                timings["child_ms"] = _perf_ms(t0)
                output = session.finish()
                if session.timed_out:
                    msg = f"your code ran longer than the {limit:g} s limit and was stopped"
                    return self._finish_result(self._verdict_only(ctab, "timeout", msg, parses=True), output, timings)
                if session.bad:
                    msg = "the process running your code sent something that is not a valid result"
                    return self._finish_result(self._verdict_only(ctab, "bad_output", msg, parses=True), output, timings)
                if not session.task_consumed():
                    raise GraderFault("the child ended before it read its task")
                status, msg = self._crash_verdict(session)
                return self._finish_result(self._verdict_only(ctab, status, msg, parses=True), output, timings)
            timings["child_ms"] = _perf_ms(t0)
            t1 = time.perf_counter()
            report = session.frames[0]
            if isinstance(report, dict) and isinstance(report.get("ms"), (int, float)):
                timings["child_self_ms"] = report["ms"]  # as the child tells it: informative only
            try:
                validate_report(report, prepared.cases)
            except BadOutput:
                output = session.finish()
                msg = "the process running your code sent something that is not a valid result"
                return self._finish_result(self._verdict_only(ctab, "bad_output", msg, parses=True), output, timings)
            try:
                v = Verdict(ctab, prepared.cases, prepared.ref, report, source=code)
                v.run()
                if any(not r["passed"] and name in ("gradcheck", "gradgradcheck") for name, r in v.results.items()):
                    # torch's own message helps here: let the child run it, wait briefly
                    session.request_more({"op": "torch_checks"})
                    if session.wait_frames(2, time.monotonic() + min(2.0, limit)) and len(session.frames) > 1:
                        v = Verdict(ctab, prepared.cases, prepared.ref, report, torch_messages(session.frames[1]), source=code)
                        v.run()
                summary = assemble(ctab, v.results, v.diagnostics, "an earlier check failed")
            except GraderFault:
                raise
            except Exception as exc:  # a bug of ours on a well-formed report
                session.finish()
                raise GraderFault(f"verdict failed: {exc!r}") from exc
            timings["judge_ms"] = _perf_ms(t1)
            output = session.finish()
        finally:
            if not session.child.closed:
                session.finish()
        status = "passed" if summary["score"] >= 1.0 - 1e-9 else "failed"
        if status == "failed" and _out_of_memory(v.error):
            status = "memory_limit"
        result = {
            "score": summary["score"],
            "status": status,
            "checks": summary["checks"],
            "diagnostics": v.diagnostics,
            "likely_causes": summary["likely_causes"],
            "feedback": [LIKELY_CAUSES[c] for c in summary["likely_causes"] if c in LIKELY_CAUSES],
            "error": v.error,
        }
        return self._finish_result(result, output, timings)

    @staticmethod
    def _finish_result(result: dict, output: dict, timings: dict) -> dict:
        result["output"] = output
        result["timings"] = timings
        result["grader_version"] = GRADER_VERSION
        return result

    # ------------------------------------------------------------------ "Try it yourself"

    def run(self, code: str, entry_point: str | None = None, inputs: list | None = None, *, timeout: float | None = None) -> dict:
        """Run code as the lesson's Run button would: stdout, stderr, the exception if any, and,
        with `entry_point` and `inputs` (see spec.py, "Input specs"), forward, the gradients for
        grad_output = ones (as after `y.sum().backward()`) and the check engine's verdicts
        (runs.py). Raises ValueError for an invalid input spec (validate first with
        spec.validate_run_inputs)."""
        t_start = time.perf_counter()
        if not isinstance(code, str):
            raise TypeError("code must be a string")
        limit = min(timeout or self.timeout, self.timeout)
        plan = plan_run(code, entry_point, inputs)
        result: dict[str, Any] = {"status": "ok", "error": None, "forward": None, "gradcheck": None}
        empty_output = {"stdout": "", "stderr": "", "truncated": False}
        if len(code.encode("utf-8", "replace")) > MAX_CODE_BYTES:
            result.update(status="too_large")
            return self._finish_result(result, empty_output, {"total_ms": _perf_ms(t_start)})
        err = self._parse(code)
        if err is not None:
            result.update(status="syntax_error", error=err)
            return self._finish_result(result, empty_output, {"total_ms": _perf_ms(t_start)})
        task = json.dumps({"op": "run", "code": code, "entry_point": entry_point, "module_name": "__main__", "torch_checks": "now",
                           "cases": task_cases(plan.cases)}, separators=(",", ":")).encode()
        slot = self._free.get()
        timings: dict[str, Any] = {}
        try:
            session, ready, t0 = self._execute(task, limit, slot)
            timings["spare_ready"] = ready
            try:
                if session.frames and plan.has_function:
                    session.wait_frames(2, time.monotonic() + min(5.0, limit))
                timings["child_ms"] = _perf_ms(t0)
                if not session.frames:
                    output = session.finish()
                    if session.timed_out:
                        result.update(status="timeout", message=f"your code ran longer than the {limit:g} s limit and was stopped")
                    elif session.bad:
                        result.update(status="bad_output", message="the process running your code sent something that is not a valid result")
                    else:
                        status, message = self._crash_verdict(session)
                        result.update(status=status, message=message)
                    return self._finish_result(result, output, timings)
                report = session.frames[0]
                extra = torch_messages(session.frames[1]) if len(session.frames) > 1 else {}
                output = session.finish()
            finally:
                if not session.child.closed:
                    session.finish()
        finally:
            self._free.put(slot)
        t1 = time.perf_counter()
        try:
            result = summarize_run(plan, report, extra, entry_point, code)
        except (BadOutput, KeyError, TypeError, ValueError, IndexError):
            result.update(status="bad_output", message="the process running your code sent something that is not a valid result")
        timings["judge_ms"] = _perf_ms(t1)
        timings["total_ms"] = _perf_ms(t_start)
        return self._finish_result(result, output, timings)


__all__ = ["Judge", "GraderFault", "CHECKS"]
