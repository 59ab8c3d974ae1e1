"""The sandbox layers around each child of the zygote: what submitted code can and cannot reach.

Loaded by the zygote as a plain module from this folder (like `protocol` and `harness`) and also
imported by the judge for the layer names. Stdlib only at import; pyseccomp (over Debian's
libseccomp) is imported by the zygote when the seccomp layer is wanted.

Layers, each applied in the spare child after its warm-up and before it reads a task (so their cost
is off the critical path when the spare is ready), in this order:

  namespaces  its own network namespace (no interface up, loopback included), IPC, UTS and a
              private mount namespace
  filesystem  the root is an empty private tmpfs (chroot): the child's scratch space, a few MiB,
              gone with the child; nothing of the project, /proc, /etc or the database is reachable
  user        a distinct unprivileged uid per slot, no supplementary groups, no new privileges,
              not dumpable (so it cannot ptrace or read /proc of anything)
  limits      rlimits: CPU seconds, address space (absolute, above the zygote's mapping), open
              files, file size, threads (per uid, so with "user"), no core dumps
  seccomp     a filter built once in the zygote and loaded as raw BPF by each child: exec, fork,
              clone of processes, ptrace, mount and namespaces, sockets, SysV/POSIX IPC, keys,
              io_uring, bpf, perf, privilege changes kill the process (SIGSYS: verdict
              "forbidden"); threads stay allowed

A layer the machine cannot provide is reported (`probe`) and skipped; the worker says so at
start-up and, in production, refuses to start without the layers the configuration requires.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import tempfile
from collections.abc import Iterable
from typing import Any

LAYERS = ("limits", "user", "namespaces", "filesystem", "seccomp")

CLONE_THREAD = 0x00010000
CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWNET = 0x40000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP = 1, 4, 38, 22
SECCOMP_MODE_FILTER = 2

#: uids of sandboxed children: UID_BASE + a number per zygote and slot, never a real account.
UID_BASE = 1_000_000
SLOTS_PER_ZYGOTE = 64
SCRATCH_BYTES = 8 * 1024 * 1024
OPEN_FILES = 64
FILE_BYTES = 4 * 1024 * 1024
THREADS = 256

#: Killed on sight (x86_64 and aarch64 names; a name the architecture lacks is skipped).
DENIED_SYSCALLS = (
    "execve", "execveat", "fork", "vfork", "ptrace", "process_vm_readv", "process_vm_writev",
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "open_tree", "move_mount",
    "fsopen", "fsmount", "fsconfig", "fspick", "socket", "socketpair",
    "shmget", "shmat", "msgget", "semget", "mq_open", "keyctl", "add_key", "request_key",
    "io_uring_setup", "io_uring_enter", "io_uring_register", "bpf", "perf_event_open",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "userfaultfd",
    "setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setgroups", "setfsuid",
    "setfsgid", "personality", "acct", "swapon", "swapoff", "reboot", "syslog", "quotactl",
    "name_to_handle_at", "open_by_handle_at", "lookup_dcookie", "iopl", "ioperm",
)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def child_uid(zygote_pid: int, slot: int) -> int:
    return UID_BASE + (zygote_pid % 1_000_000) * SLOTS_PER_ZYGOTE + slot % SLOTS_PER_ZYGOTE


def build_seccomp_bpf() -> bytes:
    """The filter as raw BPF (struct sock_filter[]), built once by libseccomp in the zygote."""
    import pyseccomp as seccomp

    f = seccomp.SyscallFilter(seccomp.ALLOW)
    for name in DENIED_SYSCALLS:
        try:
            f.add_rule(seccomp.KILL_PROCESS, name)
        except (OSError, RuntimeError, ValueError):
            pass  # not a syscall of this architecture
    # clone: threads (CLONE_THREAD) only; clone3 cannot be filtered on its flags (they are behind
    # a pointer), so it fails with ENOSYS and the C library falls back to clone.
    f.add_rule(seccomp.KILL_PROCESS, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, CLONE_THREAD, 0))
    f.add_rule(seccomp.ERRNO(38), "clone3")
    r, w = os.pipe()
    try:
        with os.fdopen(w, "wb", closefd=True) as pipe_w:
            f.export_bpf(pipe_w)
        chunks = []
        while chunk := os.read(r, 65536):
            chunks.append(chunk)
    finally:
        os.close(r)
    return b"".join(chunks)


def _load_bpf(libc: ctypes.CDLL, bpf: bytes) -> None:
    buf = ctypes.create_string_buffer(bpf, len(bpf))
    prog = _SockFprog(len(bpf) // 8, ctypes.cast(buf, ctypes.c_void_p).value)
    _check(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0), "seccomp")


class Sandbox:
    """The zygote's view: which layers are on, and how to apply them in a child."""

    def __init__(self, wanted: Iterable[str] | None) -> None:
        self.wanted = tuple(LAYERS if wanted is None else [name for name in LAYERS if name in set(wanted)])
        self.active: list[str] = []
        self.unavailable: dict[str, str] = {}
        self.root_dir: str | None = None
        self.bpf: bytes | None = None
        self.libc = _libc()
        self.mapped_bytes = 0

    # ---- in the zygote

    def probe(self) -> None:
        """Find which wanted layers this machine supports: each is tried in a throwaway child."""
        if "filesystem" in self.wanted:
            self.root_dir = tempfile.mkdtemp(prefix="gradquiz-root-")
            os.chmod(self.root_dir, 0o555)
        if "seccomp" in self.wanted:
            try:
                self.bpf = build_seccomp_bpf()
            except Exception as exc:  # no libseccomp, or no binding: say so
                self.unavailable["seccomp"] = f"cannot build the filter: {exc}"
        for layer in self.wanted:
            if layer in self.unavailable:
                continue
            reason = self._try_in_child([*self.active, layer])
            if reason is None:
                self.active.append(layer)
            else:
                self.unavailable[layer] = reason

    def _try_in_child(self, layers: list[str]) -> str | None:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:
                self._apply(layers, slot_uid=child_uid(os.getppid(), SLOTS_PER_ZYGOTE - 1), memory_mb=0, cpu_seconds=5)
                os.write(w, b"ok")
            except BaseException as exc:  # noqa: BLE001 - reported to the zygote, not raised
                os.write(w, str(exc)[:300].encode() or type(exc).__name__.encode())
            finally:
                os._exit(0)
        os.close(w)
        try:
            answer = b""
            while chunk := os.read(r, 4096):
                answer += chunk
        finally:
            os.close(r)
            os.waitpid(pid, 0)
        return None if answer == b"ok" else (answer.decode("utf-8", "replace") or "the probe child died")

    def close(self) -> None:
        if self.root_dir:
            try:
                os.rmdir(self.root_dir)
            except OSError:
                pass

    def report(self, zygote_pid: int) -> dict[str, Any]:
        return {"wanted": list(self.wanted), "active": list(self.active), "unavailable": dict(self.unavailable),
                "child_uid_base": child_uid(zygote_pid, 0) if "user" in self.active else None}

    # ---- in each child

    def lower_memory(self, memory_mb: int) -> None:
        """Lower the address-space limit to what the task allows (a limit can only go down)."""
        if "limits" not in self.active or memory_mb <= 0 or not self.mapped_bytes:
            return
        limit = self.mapped_bytes + memory_mb * 1024 * 1024
        soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
        if soft == resource.RLIM_INFINITY or limit < soft:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    def apply(self, slot_uid: int, memory_mb: int, cpu_seconds: int) -> None:
        self._apply(self.active, slot_uid, memory_mb, cpu_seconds)

    def _apply(self, layers: list[str], slot_uid: int, memory_mb: int, cpu_seconds: int) -> None:
        libc = self.libc
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        with open("/proc/self/statm") as f:  # read before /proc is out of reach
            mapped_bytes = self.mapped_bytes = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        if "namespaces" in layers or "filesystem" in layers:
            flags = CLONE_NEWNS | (CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS if "namespaces" in layers else 0)
            _check(libc.unshare(flags), "unshare")
            # Private: nothing mounted here propagates back to the machine.
            _check(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "mount --make-rprivate /")
        if "filesystem" in layers:
            if not self.root_dir:
                raise OSError("no root directory")
            owner = slot_uid if "user" in layers else 0
            options = f"size={SCRATCH_BYTES},nr_inodes=256,mode=0700,uid={owner},gid={owner}".encode()
            _check(libc.mount(b"tmpfs", self.root_dir.encode(), b"tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, options),
                   "mount tmpfs")
            os.chroot(self.root_dir)
            os.chdir("/")
        if "limits" in layers:
            for limit, value in ((resource.RLIMIT_NOFILE, OPEN_FILES), (resource.RLIMIT_FSIZE, FILE_BYTES),
                                 (resource.RLIMIT_NPROC, THREADS), (resource.RLIMIT_MEMLOCK, 0)):
                resource.setrlimit(limit, (value, value))
            resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
            if memory_mb > 0:
                # Absolute: the zygote already maps several hundred MiB (torch), shared with us.
                limit = mapped_bytes + memory_mb * 1024 * 1024
                resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        if "user" in layers:
            os.setgroups([])
            os.setresgid(slot_uid, slot_uid, slot_uid)
            os.setresuid(slot_uid, slot_uid, slot_uid)
            # A uid change clears these: set them again.
            _check(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "parent-death signal")
        _check(libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "not dumpable")
        _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no new privileges")
        if "seccomp" in layers:
            if self.bpf is None:
                raise OSError("no seccomp filter")
            _load_bpf(libc, self.bpf)
