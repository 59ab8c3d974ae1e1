"""The warm zygote: a process with torch preloaded that forks one fresh child per run.

Started by the judge with exec (`python -I zygote.py <control-fd>`) and a clean, minimal
environment, so it holds no secret, no reference solution and nothing of the judge's memory: a
child forked from here that walks gc, frames or the raw environment block finds only torch.

Command line: `zygote.py <control-fd> <config JSON>`, the config being {"layers": [names] or
null for every layer, "cpu_seconds": n, "custom_ops": whether to preload what custom ops import}.

Control channel: a SOCK_SEQPACKET socket (fd given on the command line), one JSON object per
message. Judge -> zygote: {"op": "spawn", "id": n, "memory_mb": m, "slot": s, "warm": bool} and
{"op": "exit"}.
Zygote -> judge: {"op": "ready", ...} once; {"op": "spawned", "id": n, "pid": p} with four fds
attached (SCM_RIGHTS): the write end of the child's task pipe and the read ends of its result,
stdout and stderr pipes; {"op": "exited", "pid": p, "code"|"signal": n} when a child ends.

Each child: its own session and process group (the judge kills the group), stdin from /dev/null,
stdout/stderr on pipes, every other fd closed, parent-death signal, one trusted pass through the
harness to warm up (unless the spawn says warm: false, its task being ready), then the sandbox layers (sandbox.py: namespaces, empty root, own uid, limits,
seccomp); then it blocks reading one task frame, runs it (harness.run_task), writes its result
frames to the dedicated result pipe and exits. A child whose layers cannot all be applied exits at
once: it never runs a task with fewer layers than the zygote reported.

Run by path, not as part of the `service` package: it imports only the stdlib, torch, pyseccomp
and its sibling modules `protocol`, `draws`, `harness` and `sandbox`.
"""

from __future__ import annotations

import ctypes
import gc
import io
import json
import os
import selectors
import signal
import socket
import sys
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
MADV_COLLAPSE = 25  # Linux 6.1
HUGE_PAGE = 2 * 1024 * 1024


def _threads_to_one() -> None:
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
        os.environ[var] = "1"


def _load() -> tuple[Any, Any, Any, Any]:
    """Import torch (single-threaded before anything starts a pool) and the harness."""
    _threads_to_one()
    import torch

    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    sys.path.insert(0, _HERE)
    try:  # before fork: a child has no filesystem to import from
        import draws  # noqa: F401 - the harness's and the judge's shared choices, imported by harness too
        import harness
        import protocol
        import sandbox
    finally:
        sys.path.remove(_HERE)
    try:  # what submissions may import, loaded before fork
        import math  # noqa: F401

        import numpy

        # numpy imports these on first use (np.fft.rfft): a child has no filesystem to do it
        import numpy.fft
        import numpy.linalg
        import numpy.random  # noqa: F401
    except ImportError:
        pass
    return torch, harness, protocol, sandbox


def _libc() -> Any:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def _thread_count() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return -1


def _collapse_to_huge_pages(libc: Any) -> int:
    """Back the zygote's anonymous memory (the heap: torch's and Python's objects, about 190 MB)
    with transparent huge pages, synchronously (MADV_COLLAPSE); returns the MiB collapsed.

    A fork copies one page-table entry per 4 KiB page it shares and an exit drops them all: with
    2 MiB pages that work is 512 times smaller (measured: a fork of the zygote 7-8 ms of CPU before,
    1.3-1.8 ms after; a child's teardown 10 ms before, 3 ms after). Copy-on-write still copies
    4 KiB: a child's write splits its mapping of the huge page, never the zygote's. A kernel
    without MADV_COLLAPSE (before 6.1) or with THP off says no; forks then cost what they did."""
    if libc is None:
        return 0
    madvise = libc.madvise
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    collapsed = 0
    try:
        with open("/proc/self/maps") as f:
            maps = f.read().splitlines()
    except OSError:
        return 0
    for line in maps:
        fields = line.split()
        # private writable memory with no file behind it: the brk heap and anonymous mmaps
        if fields[1] != "rw-p" or (len(fields) > 5 and fields[5] != "[heap]"):
            continue
        start, end = (int(x, 16) for x in fields[0].split("-"))
        start = (start + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1)
        end &= ~(HUGE_PAGE - 1)
        if end - start >= HUGE_PAGE and madvise(start, end - start, MADV_COLLAPSE) == 0:
            collapsed += end - start
    return collapsed // (1024 * 1024)


def _close_fds_except(keep: set[int]) -> None:
    try:
        fds = [int(n) for n in os.listdir("/proc/self/fd")]
    except OSError:
        fds = list(range(3, 1024))
    for fd in fds:
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _child_main(task_r: int, result_w: int, out_w: int, err_w: int, layers: Any, uid: int, memory_mb: int,
                cpu_seconds: int, libc: Any, harness: Any, protocol: Any, warm: bool = True) -> None:
    try:
        os.setsid()
        os.nice(5)  # the judge, at nice 0, wins the core back when it wakes (e.g. to kill us)
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        if libc is not None:
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        _close_fds_except({0, 1, 2, task_r, result_w})
        for stream in (sys.stdout, sys.stderr):
            if isinstance(stream, io.TextIOWrapper):
                stream.reconfigure(line_buffering=True)
        # Trusted code, at once, before the layers. Measured (bench/grading.py, runs interleaved):
        # the isolated grade 2.28-2.33x bare gradcheck this way, 2.75-3.13x when the spare first
        # waited 50 ms for a task and warmed up only if none came (which saved a burst's children
        # their warm-up's CPU): a learner's wait comes first. A child whose task is already
        # waiting (the judge says so: warm is false) skips it; the layers are the same.
        if warm:
            harness.warm_up(gradcheck=False)
        try:
            layers.apply(uid, memory_mb, cpu_seconds)
        except BaseException:
            os._exit(70)  # never run a task with fewer layers than reported
        protocol.write_all(result_w, protocol.encode({"type": "ready"}))  # warm: the judge may poll for this
        task = protocol.read_frame_blocking(task_r)
        if isinstance(task.get("memory_mb"), int):
            layers.lower_memory(task["memory_mb"])
        harness.run_task(task, result_w, lambda: protocol.read_frame_blocking(task_r))
    except BaseException:
        pass
    finally:
        os._exit(0)


class _Server:
    """The zygote's control loop: forks a sandboxed child per "spawn", reports each child's exit."""

    def __init__(self, sock: socket.socket, config: dict[str, Any]) -> None:
        self.sock = sock
        self.torch, self.harness, self.protocol, self.sandbox = _load()
        self.libc = _libc()
        # lazy imports and first-use initialisation happen once, here
        self.harness.warm_up(custom_ops=bool(config.get("custom_ops", True)))
        self.layers = self.sandbox.Sandbox(config.get("layers"))
        self.layers.probe()
        self.cpu_seconds = int(config.get("cpu_seconds", 31))
        self.pid = os.getpid()
        self.children: set[int] = set()
        # Children start with every object the zygote made in the permanent generation: their
        # collections never walk (and so never copy-on-write) the pages of torch's objects.
        gc.freeze()
        self.huge_pages_mb = _collapse_to_huge_pages(self.libc)
        if self.libc is not None:
            self.libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # orphaned grandchildren come back to us
        self.wake_r, wake_w = os.pipe()
        os.set_blocking(wake_w, False)
        os.set_blocking(self.wake_r, False)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)

    def send(self, obj: dict[str, Any], fds: list[int] | None = None) -> None:
        data = json.dumps(obj).encode()
        if fds:
            socket.send_fds(self.sock, [data], fds)
        else:
            self.sock.send(data)

    def announce(self) -> None:
        with open("/proc/self/status") as f:
            rss = next((line.split()[1] for line in f if line.startswith("VmRSS")), "0")
        self.send({"op": "ready", "pid": self.pid, "threads": _thread_count(), "rss_kb": int(rss),
                   "torch": self.torch.__version__, "num_threads": self.torch.get_num_threads(),
                   "huge_pages_mb": self.huge_pages_mb,
                   "sandbox": self.layers.report(self.pid)})

    def reap(self) -> None:
        """Collect every dead child, kill what it left in its group, tell the judge how it ended."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid not in self.children:
                continue
            self.children.discard(pid)
            try:
                os.killpg(pid, signal.SIGKILL)  # anything the child left in its group
            except OSError:
                pass
            msg = {"op": "exited", "pid": pid}
            if os.WIFSIGNALED(status):
                msg["signal"] = os.WTERMSIG(status)
            else:
                msg["code"] = os.waitstatus_to_exitcode(status)
            try:
                self.send(msg)
            except OSError:
                pass

    def spawn(self, msg: dict[str, Any]) -> None:
        """Fork a child with its four pipes; the judge gets our ends of them."""
        task_r, task_w = os.pipe()
        result_r, result_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            uid = self.sandbox.child_uid(self.pid, int(msg.get("slot", 0)))
            _child_main(task_r, result_w, out_w, err_w, self.layers, uid, int(msg.get("memory_mb", 0)),
                        self.cpu_seconds, self.libc, self.harness, self.protocol,
                        warm=msg.get("warm", True) is not False)  # never returns
        self.children.add(pid)
        for fd in (task_r, result_w, out_w, err_w):
            os.close(fd)
        try:
            self.send({"op": "spawned", "id": msg["id"], "pid": pid}, [task_w, result_r, out_r, err_r])
        finally:
            for fd in (task_w, result_r, out_r, err_r):
                os.close(fd)

    def serve(self) -> None:
        """Until the judge says "exit" or closes the socket."""
        sel = selectors.DefaultSelector()
        sel.register(self.sock, selectors.EVENT_READ, "control")
        sel.register(self.wake_r, selectors.EVENT_READ, "wake")
        while True:
            for key, _ in sel.select():
                if key.data == "wake":
                    try:
                        os.read(self.wake_r, 4096)
                    except BlockingIOError:
                        pass
                    self.reap()
                    continue
                try:
                    data = self.sock.recv(65536)
                except InterruptedError:
                    continue
                msg = json.loads(data) if data else {"op": "exit"}
                if msg.get("op") == "exit":
                    return
                if msg.get("op") == "spawn":
                    self.spawn(msg)
            self.reap()

    def shutdown(self) -> None:
        self.reap()
        for pid in list(self.children):
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
        self.layers.close()


def main() -> None:
    config = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
    server = _Server(socket.socket(fileno=int(sys.argv[1])), config)
    server.announce()
    server.serve()
    server.shutdown()
    os._exit(0)


if __name__ == "__main__":
    main()
