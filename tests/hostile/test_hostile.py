"""Hostile submissions against a judge with every sandbox layer the machine has (issue 4).

Each case is a ClampFn module whose backward has the wrong sign (see support.HEADER) plus one
attack. Every case asserts its set of acceptable verdicts (never "passed"), and then, through
`assert_contained`: the zygote is alive, no process of the slot is left, nothing was written
outside the child's scratch, no secret or successful-attack marker is in the result, and the
reference still passes. Cases flagged `forbidden` must end as "forbidden" when seccomp is active.
"""

from __future__ import annotations

import os
import platform
import socket
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from service.grading.sandbox import LAYERS
from tests.hostile.support import (
    HEADER,
    Canaries,
    active_layers,
    assert_contained,
    assert_no_secret,
    assert_no_slot_process_left,
    listening_socket,
    make_judge,
    remove_sysv_segment,
    sysv_segment_exists,
)

X86_64 = platform.machine() in ("x86_64", "AMD64")

FAILED = {"failed"}
FORBIDDEN = {"forbidden", "failed"}  # "failed" only where seccomp is not active (see `forbidden`)
TIMEOUT = {"timeout"}
CRASHED = {"crashed"}
MEMORY = {"memory_limit", "failed"}
PATCHED = {"failed", "bad_output"}


@dataclass
class Case:
    code: str
    expect: set[str]
    forbidden: bool = False  # seccomp must kill it
    followup: str | None = None  # a second submission, graded right after the first
    followup_expect: set[str] = field(default_factory=lambda: set(FAILED))
    x86: bool = False  # raw syscall numbers of x86_64
    listener: bool = False  # the test opens a TCP and an abstract unix listener to attack
    check: Callable[[dict], None] | None = None


def _truncated(result: dict) -> None:
    assert result["output"]["truncated"] is True
    assert len(result["output"]["stdout"]) <= 65536


LIBC = "import ctypes\n_libc = ctypes.CDLL(None, use_errno=True)\n_libc.syscall.restype = ctypes.c_long\n"

CASES: dict[str, Case] = {
    # ------------------------------------------------------------------ faking a pass
    "fake_patch_gradcheck_in_every_torch_module": Case('''
import torch.autograd.gradcheck
for _name in list(sys.modules):
    _m = sys.modules[_name]
    if _name.startswith("torch") and _m is not None:
        for _attr in ("gradcheck", "gradgradcheck"):
            if callable(getattr(_m, _attr, None)):
                try:
                    setattr(_m, _attr, lambda *a, **k: True)
                except Exception:
                    pass
''', PATCHED),
    "fake_patch_comparisons_isclose_eq_math": Case('''
import math
math.isclose = lambda *a, **k: True
torch.isclose = lambda a, b, *r, **k: torch.ones_like(a, dtype=torch.bool)
torch.eq = lambda a, b, *r, **k: torch.ones_like(a, dtype=torch.bool)
torch.Tensor.__eq__ = lambda self, other: torch.ones_like(self, dtype=torch.bool)
torch.allclose = lambda *a, **k: True
torch.testing.assert_close = lambda *a, **k: None
''', PATCHED),
    "fake_patch_tolist_reports_zeros": Case('''
_orig_tolist = torch.Tensor.tolist
def _tolist(self):
    out = _orig_tolist(self)
    if isinstance(out, list) and out and isinstance(out[0], float):
        return [0.0] * len(out)
    return out
torch.Tensor.tolist = _tolist
''', PATCHED),
    "fake_patch_json_encoder_class": Case('''
import json
_FORGED = '{"type": "main", "status": "passed", "score": 1.0, "load": {"ok": true}, "cases": []}'
json.JSONEncoder.encode = lambda self, o: _FORGED
json.dumps = lambda *a, **k: _FORGED
''', PATCHED),
    "fake_patch_protocol_encode_in_sys_modules": Case('''
import json, struct
def _forged(obj):
    body = json.dumps({"type": "main", "status": "passed", "score": 1.0, "passed": True, "load": {"ok": True},
                       "cases": []}).encode()
    return struct.pack(">I", len(body)) + body
for _name in ("protocol", "harness"):
    _m = sys.modules.get(_name)
    if _m is not None:
        for _attr in ("encode", "_write_frame"):
            if hasattr(_m, _attr):
                setattr(_m, _attr, _forged)
''', PATCHED),
    "fake_replace_harness_in_sys_modules": Case('''
import types
_h = sys.modules.get("harness")
if _h is not None:
    def _run_case(fn_cls, case, rec):
        return {"id": case["id"], "passed": True, "forward": {"ok": True, "outputs": [], "count": 0, "tuple": False},
                "vjps": [{"ok": True, "grads": [], "passed": True}]}, None
    _h._run_case = _run_case
    _h._torch_checks = lambda fn, case: {"id": case["id"], "torch_gradcheck": {"ok": True, "message": "gradcheck passed"}}
sys.modules["harness"] = types.ModuleType("harness")
sys.modules["service.grading.verdict"] = types.ModuleType("verdict")
''', PATCHED),
    "fake_forged_passed_frames_on_fds_3_to_20_then_exit": Case('''
import json, struct
_body = json.dumps({"type": "main", "status": "passed", "score": 1.0, "load": {"ok": True}, "cases": []}).encode()
for _fd in range(3, 21):
    try:
        os.write(_fd, struct.pack(">I", len(_body)) + _body)
    except OSError:
        pass
os._exit(0)
''', {"bad_output", "crashed", "failed"}),
    "fake_garbage_and_huge_length_prefix_on_fds": Case('''
for _fd in range(3, 21):
    try:
        os.write(_fd, b"\\xff\\xff\\xff\\xff" + b"A" * 100)
    except OSError:
        pass
''', {"bad_output", "failed", "crashed"}),
    "fake_ready_then_passed_frame_in_backward_then_exit": Case('''
import json, struct
def _frame(obj):
    body = json.dumps(obj).encode()
    return struct.pack(">I", len(body)) + body
def _backward(ctx, g):
    for _fd in range(3, 21):
        try:
            os.write(_fd, _frame({"type": "ready"}) + _frame({"type": "main", "status": "passed", "score": 1.0}))
        except OSError:
            pass
    os._exit(0)
ClampFn.backward = staticmethod(_backward)
''', {"bad_output", "crashed", "failed"}),
    "fake_stdout_and_stderr_claims": Case('''
print('{"score": 1.0, "status": "passed", "checks": [{"name": "gradcheck", "passed": true}]}')
sys.stderr.write("All checks passed. Score: 100%\\n")
os.write(1, b"gradcheck passed\\n")
''', FAILED),
    "fake_exit_zero_in_forward": Case('''
def _forward(ctx, x, low, high):
    os._exit(0)
ClampFn.forward = staticmethod(_forward)
''', CRASHED),
    "fake_sigkill_self_in_backward": Case('''
import signal
def _backward(ctx, g):
    os.kill(os.getpid(), signal.SIGKILL)
ClampFn.backward = staticmethod(_backward)
''', CRASHED),
    "fake_subclass_torch_function_always_agrees": Case('''
class _Agree(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        r = super().__torch_function__(func, types, args, kwargs or {})
        name = getattr(func, "__name__", "")
        if name in ("eq", "__eq__", "isclose", "allclose", "equal", "le", "ge", "__le__", "__ge__"):
            return True if isinstance(r, bool) else torch.ones_like(torch.as_tensor(r), dtype=torch.bool)
        if name in ("ne", "__ne__", "lt", "gt", "__lt__", "__gt__"):
            return False if isinstance(r, bool) else torch.zeros_like(torch.as_tensor(r), dtype=torch.bool)
        return r
_fw, _bw = ClampFn.forward, ClampFn.backward
def _forward(ctx, x, low, high):
    return _fw(ctx, x, low, high).as_subclass(_Agree)
def _backward(ctx, g):
    gx, a, b = _bw(ctx, g)
    return gx.as_subclass(_Agree), a, b
ClampFn.forward, ClampFn.backward = staticmethod(_forward), staticmethod(_backward)
''', PATCHED),
    "fake_subclass_with_lying_tolist_and_bool": Case('''
class _Liar(torch.Tensor):
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    def __bool__(self): return True
    def tolist(self): return [float("nan")] * self.numel()
_bw = ClampFn.backward
def _backward(ctx, g):
    gx, a, b = _bw(ctx, g)
    return gx.as_subclass(_Liar), a, b
ClampFn.backward = staticmethod(_backward)
''', PATCHED),
    "fake_nan_forward_and_backward": Case('''
def _forward(ctx, x, low, high):
    ctx.save_for_backward(x)
    return x * float("nan")
def _backward(ctx, g):
    return g * float("nan"), None, None
ClampFn.forward, ClampFn.backward = staticmethod(_forward), staticmethod(_backward)
''', FAILED),
    "fake_nan_only_where_the_gradient_is_zero": Case('''
_bw = ClampFn.backward
def _backward(ctx, g):
    gx, a, b = _bw(ctx, g)
    return torch.where(gx == 0, torch.full_like(gx, float("nan")), gx), a, b
ClampFn.backward = staticmethod(_backward)
''', FAILED),
    "fake_infinite_gradient": Case('''
def _backward(ctx, g):
    return g * float("inf"), None, None
ClampFn.backward = staticmethod(_backward)
''', FAILED),
    "fake_patch_builtins_all_any": Case('''
import builtins
builtins.all = lambda it: True
builtins.any = lambda it: False
builtins.abs = lambda v: 0.0
''', PATCHED),
    # ------------------------------------------------------------------ reading secrets
    "secret_reference_by_absolute_path": Case('''
with open("@@REF@@") as _f:
    _leak("reference", _f.read())
''', FAILED),
    "secret_reference_by_relative_and_proc_paths": Case('''
_errors = []
for _p in ("exercises/clamp-function/reference.py", "../exercises/clamp-function/reference.py",
           "../../exercises/clamp-function/reference.py", "work/main/exercises/clamp-function/reference.py",
           "../../../../work/main/exercises/clamp-function/reference.py",
           "/proc/self/cwd/exercises/clamp-function/reference.py", "/proc/1/root@@REF@@",
           "/proc/@@ZYGOTE_PID@@/root@@REF@@", "/proc/@@JUDGE_PID@@/cwd/exercises/clamp-function/reference.py",
           "/proc/@@JUDGE_PID@@/root@@REF@@"):
    try:
        with open(_p) as _f:
            _leak(_p, _f.read())
    except OSError as _e:
        _errors.append(type(_e).__name__)
print("reads:", _errors)
''', FAILED),
    "secret_reference_by_walking_the_filesystem": Case('''
import time
_t0 = time.monotonic()
for _root, _dirs, _files in os.walk("/"):
    if time.monotonic() - _t0 > 1.5:
        break
    _dirs[:] = [d for d in _dirs if d not in ("proc", "sys", "dev", "usr", "lib", "lib64", "var", "boot")]
    if "reference.py" in _files:
        try:
            with open(os.path.join(_root, "reference.py")) as _f:
                _leak(_root, _f.read())
        except OSError:
            pass
''', FAILED),
    "secret_directory_listings": Case('''
for _d in ("/", "/work", "@@PROJECT@@", "@@EXDIR@@", "/proc", "/etc", "/tmp", "/var/run/postgresql", "..", "/.."):
    try:
        _names = os.listdir(_d)
    except OSError as _e:
        print(_d, type(_e).__name__)
        continue
    print(_d, sorted(_names)[:40])
    if set(_names) & {"work", "etc", "usr", "proc", "main", "exercises", "wsgi.py", "reference.py", "passwd", "self"}:
        _leak("listing " + _d, sorted(_names)[:40])
''', FAILED),
    "secret_proc_environ_of_self_parent_init_judge": Case('''
for _p in ("/proc/self/environ", "/proc/%d/environ" % os.getppid(), "/proc/1/environ",
           "/proc/@@JUDGE_PID@@/environ", "/proc/@@ZYGOTE_PID@@/environ"):
    try:
        with open(_p, "rb") as _f:
            _data = _f.read()
    except OSError as _e:
        print(_p, type(_e).__name__)
        continue
    print(_p, _data[:3000])
    if _p != "/proc/self/environ":
        _leak(_p, _data[:3000])
''', FAILED),
    "secret_os_environ_and_raw_environ_block": Case('''
import ctypes
print(dict(os.environ))
_env = ctypes.POINTER(ctypes.c_char_p).in_dll(ctypes.CDLL(None), "environ")
_vals, _i = [], 0
while _env[_i] and _i < 1000:
    _vals.append(_env[_i])
    _i += 1
print(_vals)
''', FAILED),
    "secret_gc_walk_for_secret_canary_reference": Case('''
import gc
_needles = ("hostile-" + "secret", "GRADQUIZ_TEST_" + "CANARY", "canary-", "mask = (x", "reference" + ".py")
_hits = []
def _scan(s):
    for n in _needles:
        i = s.find(n)
        if i >= 0:
            _hits.append(s[max(0, i - 20): i + 100])
for _o in gc.get_objects():
    try:
        if isinstance(_o, dict):
            _items = list(_o.keys()) + list(_o.values())
        elif isinstance(_o, (list, tuple, set, frozenset)):
            _items = list(_o)
        elif hasattr(_o, "__code__"):
            _items = list(_o.__code__.co_consts)
        else:
            continue
        for _v in _items:
            if isinstance(_v, str):
                _scan(_v)
            elif isinstance(_v, (bytes, bytearray)):
                _scan(bytes(_v).decode("latin-1"))
    except Exception:
        pass
print(len(_hits), _hits[:30])
''', FAILED),
    "secret_frame_walk_from_load_and_backward": Case('''
def _walk():
    _f = sys._getframe()
    _out = []
    while _f is not None:
        for _scope in (_f.f_locals, _f.f_globals):
            for _k, _v in list(_scope.items()):
                try:
                    _r = repr(_v)
                except Exception:
                    continue
                for _n in ("hostile-" + "secret", "canary-", "mask = (x"):
                    _i = _r.find(_n)
                    if _i >= 0:
                        _out.append((_f.f_code.co_name, _k, _r[_i:_i + 100]))
        _f = _f.f_back
    print("frames:", _out[:30])
_walk()
_bw = ClampFn.backward
def _backward(ctx, g):
    _walk()
    return _bw(ctx, g)
ClampFn.backward = staticmethod(_backward)
''', FAILED),
    "secret_proc_mem_of_the_zygote_and_the_judge": Case('''
import time
def _scan_mem(pid):
    try:
        _maps = open("/proc/%s/maps" % pid).read().splitlines()
        _mem = open("/proc/%s/mem" % pid, "rb", 0)
    except OSError as e:
        print("mem", pid, type(e).__name__)
        return
    _leak("opened the memory of", pid)
    _t0, _hits = time.monotonic(), []
    for _line in _maps:
        if time.monotonic() - _t0 > 1.0:
            break
        _addr, _perms = _line.split()[:2]
        _lo, _hi = (int(v, 16) for v in _addr.split("-"))
        if not _perms.startswith("rw") or _hi - _lo > (64 << 20):
            continue
        try:
            _mem.seek(_lo)
            _data = _mem.read(_hi - _lo)
        except (OSError, ValueError, OverflowError):
            continue
        for _n in (b"hostile-" + b"secret", b"canary-"):
            _i = _data.find(_n)
            if _i >= 0:
                _hits.append(_data[_i:_i + 80])
    _leak("memory", _hits[:10])
_scan_mem(os.getppid())
_scan_mem(@@ZYGOTE_PID@@)
_scan_mem(@@JUDGE_PID@@)
''', FAILED),
    "secret_proc_mem_of_the_judge_by_heap": Case('''
with open("/proc/@@JUDGE_PID@@/mem", "rb", 0) as _mem:
    for _line in open("/proc/@@JUDGE_PID@@/maps").read().splitlines():
        if "[heap]" in _line:
            _lo, _hi = (int(v, 16) for v in _line.split()[0].split("-"))
            _mem.seek(_lo)
            _leak("the judge's heap", _mem.read(min(_hi - _lo, 4096)))
''', FAILED),
    "secret_process_vm_readv_of_the_judge": Case(LIBC + '''
_buf = ctypes.create_string_buffer(64)
class _Iov(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
_local = _Iov(ctypes.cast(_buf, ctypes.c_void_p), 64)
_remote = _Iov(0x400000, 64)
_r = _libc.syscall(310, @@JUDGE_PID@@, ctypes.byref(_local), 1, ctypes.byref(_remote), 1, 0)
if _r >= 0:
    _leak("process_vm_readv", _buf.raw)
raise OSError(ctypes.get_errno(), "process_vm_readv failed")
''', FORBIDDEN, forbidden=True, x86=True),
    "secret_inherited_fds_0_to_255": Case('''
import stat
_seen = []
for _fd in range(0, 256):
    try:
        _st = os.fstat(_fd)
    except OSError:
        continue
    try:
        _target = os.readlink("/proc/self/fd/%d" % _fd)
    except OSError:
        _target = "?"
    _data = b""
    if _fd not in (1, 2):
        try:
            os.set_blocking(_fd, False)
            _data = os.read(_fd, 65536)
        except OSError as e:
            _data = type(e).__name__.encode()
    _seen.append((_fd, stat.filemode(_st.st_mode), _target, _data[:200]))
    if stat.S_ISREG(_st.st_mode) or stat.S_ISSOCK(_st.st_mode) or stat.S_ISDIR(_st.st_mode):
        _leak("fd %d is %s %s" % (_fd, stat.filemode(_st.st_mode), _target), _data[:200])
print("fds:", _seen)
''', FAILED),
    "secret_hijack_an_inherited_control_socket": Case('''
import socket
for _fd in range(3, 256):
    try:
        _s = socket.socket(fileno=_fd)
    except OSError:
        continue
    try:
        _s.send(b'{"op": "spawn", "id": 1, "memory_mb": 0}')
        _s.send(b'{"op": "exit"}')
        _leak("wrote to the socket on fd", _fd)
    except OSError as _e:
        print(_fd, _e)
    finally:
        _s.detach()
''', FAILED),
    "secret_write_outside_the_scratch_space": Case('''
for _p in ("@@TMP@@/pwned", "@@OPEN@@/pwned", "@@NEW@@", "@@EXDIR@@/pwned-@@UUID@@.py",
           "/proc/@@JUDGE_PID@@/cwd/exercises/clamp-function/pwned-@@UUID@@.py", "/proc/1/root@@NEW@@"):
    try:
        with open(_p, "w") as _f:
            _f.write("from the sandbox")
        _leak("wrote", _p)
    except OSError as _e:
        print(_p, type(_e).__name__)
try:
    os.close(os.open("@@REF@@", os.O_WRONLY | os.O_APPEND))  # opened, nothing written
    _leak("the reference is writable")
except OSError as _e:
    print("reference", type(_e).__name__)
''', FAILED),
    # ------------------------------------------------------------------ attacking processes
    "proc_ptrace_seize_the_parent": Case(LIBC + '''
_libc.ptrace.restype = ctypes.c_long
if _libc.ptrace(0x4206, os.getppid(), None, None) == 0:  # PTRACE_SEIZE: does not stop the tracee
    _leak("ptrace of the zygote")
raise OSError(ctypes.get_errno(), "ptrace failed")
''', FORBIDDEN, forbidden=True),
    "proc_ptrace_seize_the_judge": Case(LIBC + '''
_libc.ptrace.restype = ctypes.c_long
if _libc.ptrace(0x4206, @@JUDGE_PID@@, None, None) == 0:
    _leak("ptrace of the judge")
raise OSError(ctypes.get_errno(), "ptrace failed")
''', FORBIDDEN, forbidden=True),
    "proc_kill_the_parent": Case('''
import signal
os.kill(os.getppid(), signal.SIGKILL)
_leak("killed the parent")
''', {"failed", "crashed"}),
    "proc_stop_the_zygote_by_pid": Case('''
import signal
os.kill(@@ZYGOTE_PID@@, signal.SIGSTOP)
os.kill(@@ZYGOTE_PID@@, signal.SIGCONT)
_leak("stopped the zygote")
''', FAILED),
    "proc_signal_the_judge": Case('''
import signal
os.kill(@@JUDGE_PID@@, signal.SIGURG)  # harmless if it lands: it only proves permission
_leak("signalled the judge")
''', FAILED),
    "proc_kill_everything_minus_one": Case('''
import signal
if os.getuid() == 0:
    raise RuntimeError("running as root: kill(-1) would take the machine down; the user layer is missing")
os.kill(-1, signal.SIGKILL)  # succeeds on the slot's own unreaped (dead) children: no marker
raise RuntimeError("still alive after kill(-1)")
''', FAILED),
    "proc_killpg_the_zygote_group": Case('''
import signal
_pg = os.getpgid(@@ZYGOTE_PID@@)
os.killpg(_pg, signal.SIGKILL)
_leak("killed the zygote's process group", _pg)
''', {"failed", "crashed"}),
    "proc_fork_bomb": Case('''
import time
_root = os.getpid()
for _i in range(6):
    os.fork()
if os.getpid() != _root:
    time.sleep(30)
    os._exit(0)
_leak("forked 63 processes")
''', FORBIDDEN, forbidden=True),
    "proc_subprocess_run_sh_id": Case('''
import subprocess
_r = subprocess.run(["sh", "-c", "id; cat @@REF@@"], capture_output=True, timeout=2)
_leak("subprocess", _r.stdout)
''', FORBIDDEN, forbidden=True),
    "proc_os_system": Case('''
_rc = os.system("id > @@OPEN@@/id.txt")
if _rc == 0:
    _leak("os.system ran a shell")
''', FORBIDDEN, forbidden=True),
    "proc_os_execv": Case('''
os.execv("/bin/sh", ["sh", "-c", "echo PW""NED:exec"])
''', FORBIDDEN, forbidden=True),
    "proc_raw_clone_syscall_without_clone_thread": Case(LIBC + '''
_r = _libc.syscall(56, 17, 0, 0, 0, 0)  # clone(SIGCHLD): a new process
if _r == 0:
    _libc._exit(0)
if _r > 0:
    _leak("raw clone made process", _r)
raise OSError(ctypes.get_errno(), "clone failed")
''', FORBIDDEN, forbidden=True, x86=True),
    "proc_raw_execve_syscall": Case(LIBC + '''
_argv = (ctypes.c_char_p * 2)(b"sh", None)
_r = _libc.syscall(59, b"/bin/sh", _argv, None)
raise OSError(ctypes.get_errno(), "execve failed")
''', FORBIDDEN, forbidden=True, x86=True),
    "proc_thread_lingers_after_backward": Case('''
import threading, time
def _linger():
    for _i in range(200):
        time.sleep(0.05)
        try:
            with open("@@OPEN@@/from-thread-%d" % _i, "w") as _f:
                _f.write("x")
            _leak("a lingering thread wrote outside")
        except OSError:
            pass
_bw = ClampFn.backward
def _backward(ctx, g):
    threading.Thread(target=_linger).start()  # not a daemon
    return _bw(ctx, g)
ClampFn.backward = staticmethod(_backward)
''', FAILED),
    "proc_start_5000_threads": Case('''
import threading
_ev = threading.Event()
_started = 0
for _i in range(5000):
    threading.Thread(target=_ev.wait, daemon=True).start()
    _started += 1
_leak("started threads", _started)
''', {"failed", "memory_limit"}),
    # ------------------------------------------------------------------ exhausting resources
    "res_busy_loop_at_import": Case('''
while True:
    pass
''', TIMEOUT),
    "res_busy_loop_ignoring_sigxcpu_in_backward": Case('''
import signal
signal.signal(signal.SIGXCPU, signal.SIG_IGN)
def _backward(ctx, g):
    while True:
        pass
ClampFn.backward = staticmethod(_backward)
''', {"timeout", "crashed"}),
    "res_sleep_60_in_forward": Case('''
import time
def _forward(ctx, x, low, high):
    time.sleep(60)
ClampFn.forward = staticmethod(_forward)
''', TIMEOUT),
    "res_block_every_signal_and_sleep": Case('''
import signal, time
signal.pthread_sigmask(signal.SIG_BLOCK, set(signal.Signals) - {signal.SIGKILL, signal.SIGSTOP})
time.sleep(60)
''', TIMEOUT),
    "res_memory_bytearray_4gib": Case('''
_big = bytearray(4 * 1024 ** 3)
_leak("allocated 4 GiB")
''', MEMORY),
    "res_memory_growing_list": Case('''
_chunks = []
while len(_chunks) < 8192:
    _chunks.append(b"x" * (1 << 20))
_leak("8 GiB in a list")
''', MEMORY),
    "res_memory_torch_empty_1e10": Case('''
_t = torch.empty(10 ** 10)
_t.fill_(1.0)
_leak("allocated torch.empty(10**10)")
''', MEMORY),
    "res_memory_anonymous_mmap_4gib_in_backward": Case('''
import mmap
def _backward(ctx, g):
    _m = mmap.mmap(-1, 4 << 30)
    _m[:: 1 << 20] = b"x" * len(range(0, 4 << 30, 1 << 20))
    _leak("mapped 4 GiB")
ClampFn.backward = staticmethod(_backward)
''', MEMORY),
    "res_print_50_mb": Case('''
_line = "x" * (1 << 20)
for _i in range(50):
    print(_line)
''', {"output_limit"}),
    "res_stderr_flood_forever": Case('''
while True:
    os.write(2, b"e" * 65536)
''', {"output_limit"}),
    "res_a_little_too_much_output_is_truncated": Case('''
print("y" * (200 * 1024))
''', FAILED, check=_truncated),
    "res_write_100_mb_file_in_scratch": Case('''
with open("big-@@UUID@@.bin", "wb") as _f:
    for _i in range(100):
        _f.write(b"\\0" * (1 << 20))
        _f.flush()
_leak("wrote 100 MiB")
''', {"failed", "output_limit", "crashed"}),
    "res_fd_exhaustion_with_pipes": Case('''
_fds = []
try:
    while len(_fds) < 20000:
        _fds.extend(os.pipe())
finally:
    print("pipes opened:", len(_fds) // 2)
    for _fd in _fds:
        os.close(_fd)
_leak("opened 10000 pipes")
''', FAILED),
    "res_fd_exhaustion_left_open_with_dup": Case('''
_fds = []
while len(_fds) < 20000:
    _fds.append(os.dup(1))
_leak("20000 fds")
''', {"failed", "crashed"}),
    # ------------------------------------------------------------------ reaching out
    "net_tcp_to_postgres_5432": Case('''
import socket
_s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
_s.settimeout(1)
_s.connect(("127.0.0.1", 5432))
_leak("CONNECTED to 127.0.0.1:5432")
''', FORBIDDEN, forbidden=True),
    # (urllib resolves through getaddrinfo, whose "idna" codec may not be importable in the
    # sandbox: that failure is as good as seccomp's, so this one is not held to "forbidden")
    "net_http_to_the_service_8000": Case('''
import urllib.request
_r = urllib.request.urlopen("http://127.0.0.1:8000/api/v1/exercises", timeout=1)
_leak("CONNECTED to the service", _r.read(200))
''', FORBIDDEN),
    "net_tcp_to_the_service_8000": Case('''
import socket
_s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
_s.settimeout(1)
_s.connect(("127.0.0.1", 8000))
_leak("CONNECTED to 127.0.0.1:8000")
''', FORBIDDEN, forbidden=True),
    "net_tcp_to_a_listener_of_the_test": Case('''
import socket
_s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
_s.settimeout(1)
_s.connect(("127.0.0.1", @@PORT@@))
_leak("CONNECTED to the test's listener")
''', FORBIDDEN, forbidden=True, listener=True),
    "net_unix_socket_of_postgres": Case('''
import socket
_s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
_s.connect("/var/run/postgresql/.s.PGSQL.5432")
_leak("CONNECTED to postgres' unix socket")
''', FORBIDDEN, forbidden=True),
    "net_abstract_unix_socket": Case('''
import socket
for _name in ("\\0gradquiz", "\\0gradquiz-hostile-@@UUID@@"):
    _s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        _s.connect(_name)
        _leak("CONNECTED to abstract socket", _name)
    except OSError as _e:
        print(repr(_name), _e)
raise RuntimeError("no abstract socket reached")
''', FORBIDDEN, forbidden=True, listener=True),
    "net_tcp_to_public_1_1_1_1_53": Case('''
import socket
_s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
_s.settimeout(1)
_s.connect(("1.1.1.1", 53))
_leak("CONNECTED to 1.1.1.1:53")
''', FORBIDDEN, forbidden=True),
    "net_udp_dns_query_to_public_address": Case('''
import socket
_s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
_s.settimeout(1)
_s.sendto(b"\\x12\\x34\\x01\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00"
          b"\\x07example\\x03com\\x00\\x00\\x01\\x00\\x01", ("1.1.1.1", 53))
_leak("DNS answer", _s.recv(512))
''', FORBIDDEN, forbidden=True),
    "net_netlink_socket": Case('''
import socket
_s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
_leak("netlink socket", _s.fileno())
''', FORBIDDEN, forbidden=True),
    "net_socketpair": Case('''
import socket
_a, _b = socket.socketpair()
''', FORBIDDEN, forbidden=True),
    # ------------------------------------------------------------------ escaping
    "esc_unshare_user_namespace": Case(LIBC + '''
if _libc.unshare(0x10000000) == 0:  # CLONE_NEWUSER
    _leak("a new user namespace")
raise OSError(ctypes.get_errno(), "unshare failed")
''', FORBIDDEN, forbidden=True),
    "esc_setuid_root": Case('''
_before = os.getuid()
os.setuid(0)
if _before != 0 and os.getuid() == 0:
    _leak("became root")
''', FORBIDDEN, forbidden=True),
    "esc_chroot_dotdot": Case('''
os.chroot("/..")
if "work" in os.listdir("/"):
    _leak("chroot /.. shows the machine", os.listdir("/"))
''', FORBIDDEN, forbidden=True),
    "esc_classic_chroot_breakout": Case('''
os.mkdir("esc-@@UUID@@")
os.chroot("esc-@@UUID@@")
for _i in range(64):
    os.chdir("..")
os.chroot(".")
if "work" in os.listdir("/"):
    _leak("escaped the chroot", os.listdir("/"))
''', FORBIDDEN, forbidden=True),
    "esc_mount_tmpfs_over_a_host_folder": Case(LIBC + '''
if _libc.mount(b"none", b"@@OPEN@@", b"tmpfs", 0, None) == 0:
    _leak("mounted a tmpfs")
raise OSError(ctypes.get_errno(), "mount failed")
''', FORBIDDEN, forbidden=True),
    "esc_umount_the_root": Case(LIBC + '''
if os.getuid() == 0:
    raise RuntimeError("running as root without the user layer: not unmounting anything")
if _libc.umount2(b"/", 2) == 0:  # MNT_DETACH
    _leak("unmounted /")
raise OSError(ctypes.get_errno(), "umount2 failed")
''', FORBIDDEN, forbidden=True),
    "esc_setns_into_init_namespaces": Case(LIBC + '''
try:
    _fd = os.open("/proc/1/ns/net", os.O_RDONLY)
except OSError:
    _fd = 0
if _libc.setns(_fd, 0) == 0:
    _leak("joined another namespace")
raise OSError(ctypes.get_errno(), "setns failed")
''', FORBIDDEN, forbidden=True),
    "esc_raise_rlimit_as_to_infinity": Case('''
import resource
resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
_big = bytearray(4 * 1024 ** 3)
_leak("4 GiB after raising RLIMIT_AS")
''', MEMORY),
    "esc_raise_nofile_and_read_others_limits": Case('''
import resource
for _pid in (@@ZYGOTE_PID@@, @@JUDGE_PID@@):
    try:
        _leak("read the limits of", (_pid, resource.prlimit(_pid, resource.RLIMIT_NOFILE)))
    except OSError as _e:
        print(_pid, _e)
resource.setrlimit(resource.RLIMIT_NOFILE, (1 << 20, 1 << 20))
_leak("raised RLIMIT_NOFILE")
''', FAILED),
    "esc_io_uring_setup": Case(LIBC + '''
_params = ctypes.create_string_buffer(120)
_r = _libc.syscall(425, 8, _params)
if _r >= 0:
    _leak("io_uring fd", _r)
raise OSError(ctypes.get_errno(), "io_uring_setup failed")
''', FORBIDDEN, forbidden=True, x86=True),
    "esc_bpf": Case(LIBC + '''
_attr = ctypes.create_string_buffer(128)
_r = _libc.syscall(321, 0, _attr, 128)  # BPF_MAP_CREATE with an empty attr
if _r >= 0:
    _leak("bpf fd", _r)
raise OSError(ctypes.get_errno(), "bpf failed")
''', FORBIDDEN, forbidden=True, x86=True),
    "esc_userfaultfd": Case(LIBC + '''
_r = _libc.syscall(323, 0)
if _r >= 0:
    _leak("userfaultfd", _r)
raise OSError(ctypes.get_errno(), "userfaultfd failed")
''', FORBIDDEN, forbidden=True, x86=True),
    "esc_perf_event_open": Case(LIBC + '''
_attr = ctypes.create_string_buffer(128)
_r = _libc.syscall(298, _attr, 0, -1, -1, 0)
if _r >= 0:
    _leak("perf event fd", _r)
raise OSError(ctypes.get_errno(), "perf_event_open failed")
''', FORBIDDEN, forbidden=True, x86=True),
    # ------------------------------------------------------------------ state for the next submission
    "state_sysv_shared_memory": Case(LIBC + '''
_id = _libc.shmget(@@SHMKEY@@, 4096, 0o1000 | 0o666)  # IPC_CREAT
raise OSError(ctypes.get_errno(), "shmget: %d" % _id)
''', FORBIDDEN, forbidden=True, followup=LIBC + '''
_id = _libc.shmget(@@SHMKEY@@, 0, 0)
if _id >= 0:
    _leak("the previous submission's SysV segment", _id)
raise OSError(ctypes.get_errno(), "shmget")
''', followup_expect=FORBIDDEN),
    "state_posix_shared_memory": Case('''
import _posixshmem
_fd = _posixshmem.shm_open("/gradquiz-hostile-@@UUID@@", os.O_CREAT | os.O_RDWR, 0o666)
os.write(_fd, b"left for the next one")
''', FAILED, followup='''
import _posixshmem
_fd = _posixshmem.shm_open("/gradquiz-hostile-@@UUID@@", os.O_RDONLY, 0)
_leak("the previous submission's POSIX shm", os.read(_fd, 100))
'''),
    "state_posix_message_queue": Case(LIBC + '''
_r = _libc.syscall(240, b"gradquiz-hostile-@@UUID@@", os.O_CREAT | os.O_RDWR, 0o666, None)  # mq_open
if _r >= 0:
    _leak("a message queue", _r)
raise OSError(ctypes.get_errno(), "mq_open failed")
''', FORBIDDEN, forbidden=True, x86=True),
    "state_keyctl_named_session_keyring": Case(LIBC + '''
_ring = _libc.syscall(250, 1, b"gradquiz-hostile-@@UUID@@")  # KEYCTL_JOIN_SESSION_KEYRING
if _ring >= 0:
    _libc.syscall(248, b"user", b"gq-leak", b"secret-for-the-next", 19, _ring)  # add_key
raise OSError(ctypes.get_errno(), "keyctl: %d" % _ring)
''', FORBIDDEN, forbidden=True, x86=True, followup=LIBC + '''
_ring = _libc.syscall(250, 1, b"gradquiz-hostile-@@UUID@@")
if _ring >= 0 and _libc.syscall(250, 10, _ring, b"user", b"gq-leak", 0) >= 0:  # KEYCTL_SEARCH
    _leak("the previous submission's key")
raise OSError(ctypes.get_errno(), "keyctl: %d" % _ring)
''', followup_expect=FORBIDDEN),
    "state_patch_torch_globally": Case('''
import builtins
torch.Tensor.__add__ = lambda self, other: torch.zeros(())
torch.Tensor.__mul__ = lambda self, other: torch.zeros(())
torch.clamp = lambda *a, **k: torch.zeros(())
torch.autograd.grad = lambda *a, **k: ()
torch._gradquiz_leftover = "@@UUID@@"
builtins._gradquiz_leftover = "@@UUID@@"
sys.modules["gradquiz_leftover"] = sys
os.environ["GRADQUIZ_LEFTOVER"] = "@@UUID@@"
''', PATCHED, followup='''
import builtins
_hits = [name for name, seen in (
    ("torch attribute", hasattr(torch, "_gradquiz_leftover")),
    ("builtins attribute", hasattr(builtins, "_gradquiz_leftover")),
    ("module", "gradquiz_leftover" in sys.modules),
    ("environment", "GRADQUIZ_LEFTOVER" in os.environ),
    ("Tensor.__add__", (torch.ones(2) + torch.ones(2)).tolist() != [2.0, 2.0]),
) if seen]
if _hits:
    _leak("state left by the previous submission", _hits)
'''),
    "state_file_in_scratch_for_the_next_submission": Case('''
for _p in ("leftover-@@UUID@@", "/leftover-@@UUID@@"):
    try:
        with open(_p, "w") as _f:
            _f.write("left for the next one")
        print("wrote", _p)
    except OSError as _e:
        print(_p, _e)
''', FAILED, followup='''
for _p in ("leftover-@@UUID@@", "/leftover-@@UUID@@"):
    try:
        with open(_p) as _f:
            _leak("the previous submission's file " + _p, _f.read())
    except OSError as _e:
        print(_p, type(_e).__name__)
'''),
    # ------------------------------------------------------------------ crashing
    "crash_segfault_in_backward": Case('''
import ctypes
def _backward(ctx, g):
    ctypes.string_at(0)
ClampFn.backward = staticmethod(_backward)
''', CRASHED),
    "crash_infinite_recursion": Case('''
def _f(n):
    return _f(n + 1) + 1
_f(0)
''', FAILED),
    "crash_raised_recursion_limit_and_deep_c_recursion": Case('''
sys.setrecursionlimit(10 ** 6)
def _f(n):
    return list(map(lambda _: _f(n + 1), [0]))
_f(0)
''', {"crashed", "failed", "memory_limit"}),
    "crash_abort": Case('''
os.abort()
''', CRASHED),
    "crash_exception_whose_str_never_returns": Case('''
class _Evil(Exception):
    def __str__(self):
        while True:
            pass
def _backward(ctx, g):
    raise _Evil()
ClampFn.backward = staticmethod(_backward)
''', {"timeout", "failed"}),
    "crash_keyboard_interrupt_in_backward": Case('''
def _backward(ctx, g):
    raise KeyboardInterrupt
ClampFn.backward = staticmethod(_backward)
''', FAILED),
}


def _sysv_key(canaries: Canaries) -> int:
    return 0x67000000 + int(canaries.uuid[:6], 16)






def test_the_suite_has_enough_hostile_cases():
    assert len(CASES) >= 55


def test_every_layer_is_active_or_explained(judge):
    info = judge.info()
    sandbox = info["sandbox"]
    assert set(sandbox) >= {"active", "unavailable", "child_uid"}
    assert set(sandbox["active"]) | set(sandbox["unavailable"]) == set(LAYERS)
    assert not set(sandbox["active"]) & set(sandbox["unavailable"])
    assert all(isinstance(r, str) and r for r in sandbox["unavailable"].values())
    if "user" in sandbox["active"]:
        assert isinstance(sandbox["child_uid"], int) and sandbox["child_uid"] not in (0, os.getuid())
    else:
        assert sandbox["child_uid"] is None
    assert info["zygote_alive"] is True and info["judge_pid"] == os.getpid()


def test_spare_child_is_confined(judge):
    """The waiting spare child already carries its layers (uid, no_new_privs, seccomp)."""
    assert judge.wait_warm(30)
    info = judge.info()
    assert info["spare_pids"], "no spare child"
    layers = set(active_layers(judge))
    with open(f"/proc/{info['spare_pids'][0]}/status") as f:
        status = dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
    if "user" in layers:
        assert {int(u) for u in status["Uid"].split()} == {info["sandbox"]["child_uid"]}
        assert status["Groups"].strip() == ""
        assert status["NoNewPrivs"].strip() == "1"
    if "seccomp" in layers:
        assert status["Seccomp"].strip() == "2"


def test_back_to_back_grades_leave_no_child_behind(clamp_exercise):
    """Grades that follow each other at once (the next spare is still being requested when the
    next grade takes the slot) must not orphan a spare child: it would wait for a task forever."""
    reference = clamp_exercise["files"]["reference.py"]
    with make_judge(None, timeout=3.0) as judge:
        for _ in range(200):  # the race hits about one pair in fifty here
            assert judge.grade(clamp_exercise, HEADER)["status"] == "failed"
            assert judge.grade(clamp_exercise, reference)["status"] == "passed"
        assert_no_slot_process_left(judge)


@pytest.mark.parametrize("name", list(CASES))
def test_hostile_submission_is_contained(judge, clamp_exercise, canaries, name):
    case = CASES[name]
    if case.x86 and not X86_64:
        pytest.skip("raw x86_64 syscall numbers")
    listeners = []
    shm_key = _sysv_key(canaries)
    try:
        if case.listener:
            tcp = listening_socket()
            canaries.port = tcp.getsockname()[1]
            unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            unix.bind(f"\0gradquiz-hostile-{canaries.uuid}")
            unix.listen(16)
            listeners += [tcp, unix]

        def source(code: str) -> str:
            return HEADER + canaries.render(judge, code).replace("@@SHMKEY@@", str(shm_key))

        result = judge.grade(clamp_exercise, source(case.code))
        if case.check is not None:
            case.check(result)
        if case.followup is not None:
            # the first submission's traces are checked before the second one runs
            assert result["status"] in case.expect and result["status"] != "passed", result["status"]
            if case.forbidden and "seccomp" in active_layers(judge):
                assert result["status"] == "forbidden", result["status"]
            assert_no_secret(result)
            assert not sysv_segment_exists(shm_key), "a SysV segment outlived the submission"
            result = judge.grade(clamp_exercise, source(case.followup))
            expect = case.followup_expect
        else:
            expect = case.expect
        assert not sysv_segment_exists(shm_key), "a SysV segment outlived the submission"
        assert_contained(judge, result, expect, canaries=canaries, exercise=clamp_exercise, forbidden=case.forbidden)
    finally:
        for s in listeners:
            s.close()
        remove_sysv_segment(shm_key)
