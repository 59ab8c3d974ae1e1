"""The process pool: the zygote, the children it forks, and one slot per concurrent task.

Process layout (see docs/sandbox.md)::

    worker process ── Judge (trusted; holds the secret; imports no torch)
        │  SOCK_SEQPACKET control socket, pipes' fds passed with SCM_RIGHTS
        zygote (exec'd: `python -I zygote.py`, clean minimal environment, torch preloaded, 1 thread)
        │  fork: one child per task, a spare kept forked and warmed per slot
        child (own process group; task pipe in, result pipe out, stdout/stderr pipes)

A task takes its slot's spare child (already warm and inside its sandbox), writes the task frame to
it, reads result frames from the dedicated result pipe as soon as they arrive (not waiting for the
child to exit), drains stdout/stderr (capped) and kills the child's process group; a wall-clock
deadline kills the group too. The next spare is forked after the child is dead, off the critical
path. What the frames mean is not this module's business (judge.py, references.py).
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import queue
import selectors
import signal
import socket
import struct
import subprocess
import sys
import termios
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, TimeoutError as FutureTimeout
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from . import protocol
from .errors import GraderFault

ZYGOTE_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "zygote.py")
OUTPUT_LIMIT = 64 * 1024
#: The floor of every child's CPU-time limit (each task's wall clock is its own, see Session).
TRUSTED_TIMEOUT = 60.0
SPAWN_TIMEOUT = 30.0
#: How long closing the pool waits for each slot's spare child still being forked.
CLOSE_SPARE_TIMEOUT = 1.0
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


def clean_environment() -> dict[str, str]:
    """The zygote's whole environment: nothing of the worker's (no secrets, no DB URL)."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "HOME": "/nonexistent"}
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
        env[var] = "1"
    return env


@dataclass
class Child:
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


class Zygote:
    """The exec'd zygote process and its control channel (a reader thread dispatches replies)."""

    def __init__(self, python: str, config: dict[str, Any], startup_timeout: float = 120.0) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock = ours
        self._send_lock = threading.Lock()
        self._ids = iter(range(1, 1 << 62))
        self._pending: dict[int, Future[Child]] = {}
        self._exits: OrderedDict[int, dict[str, Any]] = OrderedDict()
        self._exit_cond = threading.Condition()
        self.dead = False
        self.ready: dict[str, Any] = {}
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
        except (TimeoutError, OSError) as exc:
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

    def _read_loop(self) -> None:  # noqa: C901
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
                    task_w, result_r, out_r, err_r = fds
                    fut.set_result(Child(obj["pid"], task_w, result_r, out_r, err_r))
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

    def spawn(self, memory_mb: int, slot: int, warm: bool = True) -> Future[Child]:
        """A child for `slot`; `warm`: it runs the harness's warm-up before its layers (see
        ChildPool.backlog)."""
        fut: Future[Child] = Future()
        if self.dead:
            fut.set_exception(GraderFault("the zygote is not running"))
            return fut
        with self._send_lock:
            n = next(self._ids)
            self._pending[n] = fut
            try:
                self.sock.send(json.dumps({"op": "spawn", "id": n, "memory_mb": memory_mb, "slot": slot,
                                           "warm": warm}).encode())
            except OSError as exc:
                self._pending.pop(n, None)
                fut.set_exception(GraderFault(f"cannot reach the zygote: {exc}"))
        return fut

    def exit_status(self, pid: int, timeout: float) -> dict[str, Any] | None:
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


class Session:
    """One child running one task: frames in, output drained and capped, then killed."""

    def __init__(self, child: Child, task: bytes, deadline: float, output_limit: int, result_limit: int) -> None:
        self.child = child
        self.deadline = deadline
        self.output_limit = output_limit
        self.frames: list[dict[str, Any]] = []
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

    def wait_frames(self, n: int, deadline: float | None = None) -> bool:  # noqa: C901
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
            unread: int = struct.unpack("i", buf)[0]
            return unread == 0
        except OSError:
            return True

    def request_more(self, frame: dict[str, Any]) -> None:
        """Send a follow-up frame to the child (e.g. "go on with torch's gradcheck")."""
        try:
            protocol.write_all(self.child.task_w, protocol.encode(frame))
        except OSError:
            pass

    def finish(self) -> dict[str, Any]:
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
class Slot:
    index: int
    spare: Future[Child] | None = None
    # Guards `spare`: a grade takes it while the janitor may be installing the next one.
    lock: threading.Lock = field(default_factory=threading.Lock)

    def take_spare(self) -> Future[Child] | None:
        with self.lock:
            fut, self.spare = self.spare, None
            return fut


class ChildPool:
    """The zygote and `slots` slots, each with a warm spare child. Thread-safe: a task holds a slot
    (`with pool.slot() as slot:`) for as long as it runs children.

    `timeout` bounds every task's CPU time (with TRUSTED_TIMEOUT); `layers` names the sandbox
    layers to apply (sandbox.LAYERS); None: every layer the machine supports.
    """

    def __init__(self, *, slots: int, timeout: float, output_limit: int, memory_mb: int,
                 python: str | None = None, layers: Iterable[str] | None = None, custom_ops: bool = True) -> None:
        if slots < 1:
            raise ValueError("slots must be at least 1")
        self.output_limit = int(output_limit)
        self.memory_mb = int(memory_mb)
        self.timeout = float(timeout)
        # The interpreter of this venv (torch lives in its site-packages).
        self._python = python or sys.executable
        self._zygote_lock = threading.Lock()
        self._closed = False
        self._zygote_config = {"layers": None if layers is None else sorted(set(layers)),
                               "cpu_seconds": int(math.ceil(max(timeout, TRUSTED_TIMEOUT))) + 1,
                               "custom_ops": bool(custom_ops)}
        self._zygote = Zygote(self._python, self._zygote_config)
        # Whether more tasks are waiting for this pool (set by the caller, see Judge.set_backlog).
        # A spare forked meanwhile skips the warm-up: a warm-up takes the page faults of a first
        # run before the task comes, which pays when the spare waits idle for its task (the
        # isolated grade), but costs a child that is given its task at once about 8 ms of CPU
        # to save the task 2-3 ms (measured: 22 against 16 ms of CPU per child, one slot).
        self.backlog = False
        # Off-critical-path chores (asking the zygote for the next spare wakes it, and on two
        # cores its fork would preempt the judge before the verdict is returned).
        self._janitor: queue.Queue[Callable[[], None] | None] = queue.Queue()
        threading.Thread(target=self._janitor_loop, name="judge-janitor", daemon=True).start()
        self._slots = [Slot(i) for i in range(slots)]
        self._free: queue.Queue[Slot] = queue.Queue()
        for s in self._slots:
            s.spare = self._spawn(s)
            self._free.put(s)

    @contextmanager
    def slot(self) -> Iterator[Slot]:
        """A free slot, waiting for one if every slot is busy."""
        slot = self._free.get()
        try:
            yield slot
        finally:
            self._free.put(slot)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._janitor.put(None)
        for s in self._slots:
            # A spare the zygote has not answered yet is not waited for: the zygote's exit ends it
            # (its children die with it: parent-death signal), and a worker told to stop stops now.
            self._discard(s.take_spare(), timeout=CLOSE_SPARE_TIMEOUT)
        self._zygote.close()

    def info(self) -> dict[str, Any]:
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

    @staticmethod
    def _discard(fut: Future[Child] | None, timeout: float = SPAWN_TIMEOUT) -> None:
        if fut is None:
            return
        try:
            child = fut.result(timeout=timeout)
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
            self._zygote = Zygote(self._python, self._zygote_config)

    def _take_child(self, slot: Slot) -> tuple[Child, bool]:
        """The slot's warm spare (and a new spare requested at once, off the critical path)."""
        for _ in range(2):
            self._ensure_zygote()
            zygote = self._zygote
            # Taken, so the slot has no spare: the next is forked once this child is dead (execute).
            fut = slot.take_spare()
            if fut is None or getattr(fut, "zygote", None) is not zygote:
                self._discard(fut)
                fut = self._spawn(slot, warm=False)  # its task is ready: a warm-up would only delay it
            ready = fut.done()
            try:
                child = fut.result(timeout=SPAWN_TIMEOUT)
                return child, ready and child.is_warm(0)
            except FutureTimeout as exc:
                raise GraderFault("the zygote did not fork a child in time") from exc
            except GraderFault:
                continue  # the zygote died: restart it once
        raise GraderFault("no child could be started")

    def _spawn(self, slot: Slot, warm: bool | None = None) -> Future[Child]:
        fut = self._zygote.spawn(self.memory_mb, slot.index, warm=not self.backlog if warm is None else warm)
        fut.zygote = self._zygote  # type: ignore[attr-defined]
        return fut

    def execute(self, task: bytes, timeout: float, slot: Slot, wait: bool = True) -> tuple[Session, bool, float]:
        child, ready = self._take_child(slot)
        t0 = time.perf_counter()
        session = Session(child, protocol.encode_raw(task), time.monotonic() + timeout, self.output_limit, protocol.MAX_RESULT_FRAME)

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

    def crash_verdict(self, session: Session) -> tuple[str, str]:
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
