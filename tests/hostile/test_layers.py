"""Each sandbox layer alone against the attacks it is meant to stop, and no layer at all.

A judge built with `layers={name}` must stop that layer's attacks by itself, so a layer that
silently stops working fails here even while the others would have covered for it. The same
attacks graded with `layers=set()` must get through (their marker appears, the host sees their
trace): that proves the detection works, so the per-layer tests cannot pass vacuously.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from service.grading.sandbox import LAYERS
from tests.hostile.support import (
    HEADER,
    MARKER,
    Canaries,
    active_layers,
    assert_no_slot_process_left,
    listening_socket,
    make_judge,
    remove_sysv_segment,
    sysv_segment_exists,
)


@dataclass
class Attack:
    layer: str
    code: str
    #: "forbidden": the seccomp layer must kill it; "marker": the marker must not appear;
    #: "memory": a memory verdict or a failed grade, no marker; "shm": no SysV segment on the host;
    #: "canary": nothing written into the world-writable canary folder.
    kind: str = "marker"
    #: also graded without any layer, where it must get through
    without_layers: bool = True


ATTACKS: dict[str, Attack] = {
    # seccomp
    "seccomp_os_fork": Attack("seccomp", '''
_pid = os.fork()
if _pid == 0:
    os._exit(0)
os.waitpid(_pid, 0)
_leak("forked a process")
''', "forbidden"),
    "seccomp_socket": Attack("seccomp", '''
import socket
_s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
_leak("made a socket", _s.fileno())
''', "forbidden"),
    "seccomp_execv": Attack("seccomp", '''
for _fd in range(3, 64):  # keep the result pipe open across exec: the judge waits for the echo
    try:
        os.set_inheritable(_fd, True)
    except OSError:
        pass
os.execv("/bin/sh", ["sh", "-c", "echo PW""NED:exec"])
''', "forbidden"),
    # namespaces
    "namespaces_tcp_to_a_listener_on_loopback": Attack("namespaces", '''
import socket
for _port in (@@PORT@@, 5432):
    _s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    _s.settimeout(1)
    try:
        _s.connect(("127.0.0.1", _port))
        _leak("CONNECTED to 127.0.0.1:%d" % _port)
    except OSError as _e:
        print(_port, _e)
'''),
    "namespaces_abstract_unix_socket_of_the_host": Attack("namespaces", '''
import socket
_s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    _s.connect("\\0gradquiz-hostile-@@UUID@@")
    _leak("CONNECTED to the host's abstract socket")
except OSError as _e:
    print(_e)
'''),
    "namespaces_sysv_segment_reaches_the_host": Attack("namespaces", '''
import ctypes
_libc = ctypes.CDLL(None, use_errno=True)
print("shmget:", _libc.shmget(@@SHMKEY@@, 4096, 0o1000 | 0o666))
''', "shm"),
    # filesystem
    "filesystem_reference_by_absolute_path": Attack("filesystem", '''
try:
    with open("@@REF@@") as _f:
        _leak("reference", _f.read()[:20])
except OSError as _e:
    print(_e)
'''),
    "filesystem_listing_of_the_root": Attack("filesystem", '''
_names = os.listdir("/")
if "work" in _names or "etc" in _names:
    _leak("the machine's root", sorted(_names)[:20])
'''),
    "filesystem_write_into_world_writable_tmp": Attack("filesystem", '''
try:
    with open("@@OPEN@@/written-by-the-child", "w") as _f:
        _f.write("x")
except OSError as _e:
    print(_e)
''', "canary"),
    # user
    "user_signal_zero_to_the_zygote": Attack("user", '''
try:
    os.kill(@@ZYGOTE_PID@@, 0)
    _leak("may signal the zygote")
except PermissionError as _e:
    print(_e)
'''),
    "user_read_the_zygote_environ": Attack("user", '''
try:
    with open("/proc/@@ZYGOTE_PID@@/environ", "rb") as _f:
        _leak("the zygote's environment", _f.read()[:100])
except OSError as _e:
    print(_e)
'''),
    "user_runs_as_root": Attack("user", '''
if os.getuid() == 0 or os.geteuid() == 0 or 0 in os.getgroups():
    _leak("running as root", (os.getuid(), os.geteuid(), os.getgroups()))
'''),
    # limits
    "limits_bytearray_4gib": Attack("limits", '''
_big = bytearray(4 * 1024 ** 3)
_leak("allocated 4 GiB")
''', "memory", without_layers=False),
    "limits_200_pipes": Attack("limits", '''
_fds = []
try:
    for _i in range(200):
        _fds.extend(os.pipe())
    _leak("opened 200 pipes")
except OSError as _e:
    print(len(_fds) // 2, _e)
finally:
    for _fd in _fds:
        os.close(_fd)
'''),
    "limits_100_mb_file": Attack("limits", '''
try:
    with open("@@OPEN@@/big.bin", "wb") as _f:
        for _i in range(100):
            _f.write(b"\\0" * (1 << 20))
            _f.flush()
    _leak("wrote 100 MiB")
except OSError as _e:
    print(_e)
finally:
    try:
        os.unlink("@@OPEN@@/big.bin")
    except OSError:
        pass
''', without_layers=False),
}


@pytest.fixture(scope="module")
def judges(canary_environment, clamp_exercise):
    """Judges by layer set, started on first use, closed at the end of the module."""
    started: dict[frozenset, object] = {}

    def get(layers: set[str]):
        key = frozenset(layers)
        if key not in started:
            j = make_judge(layers, timeout=3.0)
            j.prepare(clamp_exercise)
            started[key] = j
        return started[key]

    yield get
    for j in started.values():
        j.close()






def _run(judge, exercise: dict, attack: Attack, canaries: Canaries) -> tuple[dict, Callable[[], bool]]:
    """Grade the attack; returns the result and a function telling whether it got through."""
    key = 0x68000000 + int(canaries.uuid[:6], 16)
    tcp = listening_socket()
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        canaries.port = tcp.getsockname()[1]
        unix.bind(f"\0gradquiz-hostile-{canaries.uuid}")
        unix.listen(16)
        code = HEADER + canaries.render(judge, attack.code).replace("@@SHMKEY@@", str(key))
        result = judge.grade(exercise, code)
        shm = sysv_segment_exists(key)
        written = sorted(p.name for p in canaries.open_dir.iterdir())
    finally:
        tcp.close()
        unix.close()
        remove_sysv_segment(key)
    out = result["output"]["stdout"] + result["output"]["stderr"]

    def got_through() -> bool:
        if attack.kind == "shm":
            return shm
        if attack.kind == "canary":
            return bool(written)
        return MARKER in out

    return result, got_through


def _skip_if_unavailable(judge, layer: str) -> None:
    unavailable = judge.info()["sandbox"]["unavailable"]
    if layer in unavailable:
        pytest.skip(f"layer {layer!r} is unavailable on this machine: {unavailable[layer]}")


@pytest.mark.parametrize("name", list(ATTACKS))
def test_layer_alone_stops_its_attacks(judges, clamp_exercise, canaries, name):
    attack = ATTACKS[name]
    judge = judges({attack.layer})
    _skip_if_unavailable(judge, attack.layer)
    assert active_layers(judge) == [attack.layer]
    result, got_through = _run(judge, clamp_exercise, attack, canaries)
    detail = (result["status"], result["output"])
    assert result["status"] != "passed" and result["score"] < 1.0, detail
    assert not got_through(), detail
    if attack.kind == "forbidden":
        assert result["status"] == "forbidden", detail
    elif attack.kind == "memory":
        assert result["status"] in {"memory_limit", "failed"}, detail
    assert_no_slot_process_left(judge)
    assert judge.info()["zygote_alive"]
    ref = judge.grade(clamp_exercise, clamp_exercise["files"]["reference.py"])
    assert ref["status"] == "passed" and ref["score"] == 1.0


@pytest.mark.parametrize("name", [n for n, a in ATTACKS.items() if a.without_layers])
def test_without_layers_the_attack_gets_through(judges, clamp_exercise, canaries, name):
    """The control: with no layer, the attack's trace shows (so its detection works)."""
    attack = ATTACKS[name]
    judge = judges(set())
    info = judge.info()["sandbox"]
    assert info["active"] == [] and info["child_uid"] is None
    if name == "user_runs_as_root" and os.getuid() != 0:
        pytest.skip("the test process is not root, so neither is a child without layers")
    result, got_through = _run(judge, clamp_exercise, attack, canaries)
    assert result["status"] != "passed"
    assert result["status"] != "forbidden", result["status"]
    assert got_through(), (result["status"], result["output"])
    assert_no_slot_process_left(judge)
    ref = judge.grade(clamp_exercise, clamp_exercise["files"]["reference.py"])
    assert ref["status"] == "passed" and ref["score"] == 1.0


def test_every_layer_has_attacks():
    assert {a.layer for a in ATTACKS.values()} == set(LAYERS)
    for layer in LAYERS:
        assert sum(a.layer == layer for a in ATTACKS.values()) >= 2, layer


# --------------------------------------------------------------------------- the checks themselves


def test_the_containment_checks_see_a_leftover_process(judges, clamp_exercise):
    """Without layers a submission can leave a process behind (a new session escapes the kill of
    its group): the slot-process check must notice it."""
    import signal
    import time

    from tests.hostile.support import slot_processes

    judge = judges(set())
    code = HEADER + '''
_pid = os.fork()
if _pid == 0:
    os.setsid()
    if os.fork() == 0:
        import time
        time.sleep(20)
    os._exit(0)
os.waitpid(_pid, 0)
'''
    result = judge.grade(clamp_exercise, code)
    assert result["status"] != "passed"
    left = []
    end = time.monotonic() + 3
    while not left and time.monotonic() < end:
        judge.wait_warm(5)
        left = slot_processes(judge)
        time.sleep(0.05)
    try:
        assert left, "the leftover sleeper was not seen"
    finally:
        for pid, _ in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    assert_no_slot_process_left(judge, grace=5)


def test_the_secret_check_sees_each_secret():
    from tests.hostile.support import CANARY_VALUE, SECRET, assert_no_secret, reference_source

    mask_line = next(line.strip() for line in reference_source().splitlines() if "mask" in line)
    for leaked in (SECRET.decode(), CANARY_VALUE, mask_line, "PW" "NED:x"):
        result = {"status": "failed", "output": {"stdout": "noise " + leaked, "stderr": "", "truncated": False}}
        with pytest.raises(AssertionError):
            assert_no_secret(result)
    assert_no_secret({"status": "failed", "output": {"stdout": "harmless", "stderr": "", "truncated": False}})


def test_a_killed_zygote_is_restarted(judges, clamp_exercise):
    """Without the user layer a submission can kill its zygote: the judge grades on regardless."""
    judge = judges(set())
    old = judge.info()["zygote_pid"]
    code = HEADER + "import signal\nos.kill(os.getppid(), signal.SIGKILL)\nimport time\ntime.sleep(1)\n"
    result = judge.grade(clamp_exercise, code)
    assert result["status"] != "passed"
    ref = judge.grade(clamp_exercise, clamp_exercise["files"]["reference.py"])
    assert ref["status"] == "passed" and ref["score"] == 1.0
    info = judge.info()
    assert info["zygote_alive"] and info["zygote_pid"] != old
    assert_no_slot_process_left(judge)
