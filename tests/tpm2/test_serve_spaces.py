"""Sessions on a shared served TPM: reclaimed when their client exits, and private to it.

The peers here are tpm2-tools (processes that exit without flushing, the
issue's reproducer) and the TPM itself: how many sessions it holds is asked
of swtpm directly (GetCapability on the backend, past the resource manager).
"""

from __future__ import annotations

import os
import shutil
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from trustlab.devices.tpm2 import wire as tpm2wire
from trustlab.serving import wire
from trustlab.serving.proxy import TimingProxy
from trustlab.serving.tpm2 import rm

from .conftest import needs_swtpm

pytestmark = [needs_swtpm, pytest.mark.skipif(shutil.which("tpm2_startauthsession") is None,
                                              reason="tpm2-tools not installed")]

TPM_CAP_HANDLES = 1
HMAC_SESSIONS, POLICY_SESSIONS = 0x02000000, 0x03000000
START_HMAC_SESSION = tpm2wire.build_command(  # TPM2_StartAuthSession(NULL, NULL, nonce, -, HMAC, NULL, SHA256)
    0x176, struct.pack(">II", 0x40000007, 0x40000007) + struct.pack(">H", 16) + b"\x11" * 16
    + struct.pack(">HBHH", 0, 0x00, 0x0010, 0x000B))
CLIENT = r"""
import socket, struct, sys
port = int(sys.argv[1])
START = bytes.fromhex(sys.argv[2])

def call(frame):
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(frame)
        head = s.recv(10, socket.MSG_WAITALL)
        return head + s.recv(struct.unpack(">I", head[2:6])[0] - 10, socket.MSG_WAITALL)

rsp = call(START)
handle = struct.unpack(">I", rsp[10:14])[0]
print(hex(handle), flush=True)
if sys.argv[3] == "wait":
    sys.stdin.readline()  # until the other client has tried
    flush = struct.pack(">HIII", 0x8001, 14, 0x165, handle)
    print(hex(struct.unpack(">I", call(flush)[6:10])[0]), flush=True)
"""


def tpm_sessions(proxy: TimingProxy) -> list[int]:
    """Every session the TPM itself holds, loaded or saved (asked of swtpm, past the resource manager), by
    index (the TPM lists a saved policy session under a 0x02 handle)."""
    found = []
    with proxy._tpm_lock:
        for first in (HMAC_SESSIONS, POLICY_SESSIONS):
            rsp = proxy.backend.transact(tpm2wire.build_command(0x17A, struct.pack(">III", TPM_CAP_HANDLES,
                                                                                      first, 64)))
            count = struct.unpack_from(">I", rsp, 15)[0]
            found += [rm.session_index(h) for h in struct.unpack_from(f">{count}I", rsp, 19) if rm.is_session(h)]
    return sorted(set(found))


def call(port: int, frame: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(frame)
        head = s.recv(10, socket.MSG_WAITALL)
        return head + s.recv(struct.unpack(">I", head[2:6])[0] - 10, socket.MSG_WAITALL)


def rc(frame: bytes) -> int:
    return wire.response_code(frame)


def tools_env(proxy: TimingProxy) -> dict[str, str]:
    return dict(os.environ, TPM2TOOLS_TCTI=proxy.tcti, TSS2_LOG="all+NONE")


def settle(proxy: TimingProxy, want: int, timeout: float = 5.0) -> list[int]:
    """The TPM's sessions once the exited clients have been reaped (every 0.5 s)."""
    deadline = time.monotonic() + timeout
    while True:
        held = tpm_sessions(proxy)
        if len(held) <= want or time.monotonic() > deadline:
            return held
        time.sleep(0.1)


@pytest.fixture
def served(swtpm, zero_profile):
    with TimingProxy(zero_profile, swtpm, virtual=True) as proxy:
        yield proxy


def test_exiting_clients_leave_no_sessions(served, tmp_path: Path) -> None:
    """70 processes start a session and exit without flushing it (more than swtpm's 64 session slots).

    The ones the RM saved are flushed when their process exits; the ones the client saved itself
    (``-S s.ctx``, how tpm2-tools hands a session to its next process) are abandoned, and at most
    tpm2-abrmd's 4 of those are kept. Then the next client still works.
    """
    raw = [subprocess.run([sys.executable, "-c", CLIENT, str(served.port), START_HMAC_SESSION.hex(), "exit"],
                          capture_output=True, text=True, timeout=60) for _ in range(8)]
    assert all(p.returncode == 0 and p.stdout.startswith("0x2") for p in raw), raw[0].stderr
    assert settle(served, 0) == []  # sessions the RM held: flushed with their space
    script = "for i in $(seq 70); do tpm2_startauthsession -S s.ctx || exit 1; done"
    done = subprocess.run(["sh", "-c", script], cwd=tmp_path, env=tools_env(served), capture_output=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr.decode()[-500:]
    held = settle(served, rm.ABANDONED_MAX)
    assert len(held) <= rm.ABANDONED_MAX and served.rm.sessions_held() == len(held)
    for argv in (["tpm2_createprimary", "-C", "o", "-c", "p.ctx"], ["tpm2_startauthsession", "-S", "t.ctx"],
                 ["tpm2_flushcontext", "t.ctx"], ["tpm2_getrandom", "8"]):
        ok = subprocess.run(argv, cwd=tmp_path, env=tools_env(served), capture_output=True, timeout=60)
        assert ok.returncode == 0, (argv, ok.stderr.decode())


def test_a_saved_session_passes_to_the_next_process(served, tmp_path: Path) -> None:
    """tpm2-tools' way of using one session across tools (the suite's abrmd_* scripts): start and save in one
    process, load and use in the next, flush in a third. Abandoned, then claimed: it works, and is gone after."""
    env = tools_env(served)

    def tool(*argv: str) -> None:
        done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, timeout=60)
        assert done.returncode == 0, (argv, done.stderr.decode())

    tool("tpm2_startauthsession", "--policy-session", "-S", "s.ctx")
    deadline = time.monotonic() + 5
    while not served.rm.abandoned and time.monotonic() < deadline:  # A's exit is noticed every 0.5 s
        time.sleep(0.05)
    [index] = served.rm.abandoned  # A exited; its session waits for A's next process, and for nobody else
    for cap in ("handles-saved-session", "handles-loaded-session"):
        seen = subprocess.run(["tpm2_getcap", cap], env=env, capture_output=True, text=True, timeout=60)
        assert seen.returncode == 0 and seen.stdout.strip() == "", seen.stdout
    for named in (HMAC_SESSIONS | index, POLICY_SESSIONS | index):  # B guesses the handle: refused
        assert rc(call(served.port, tpm2wire.build_command(0x165, struct.pack(">I", named)))) == \
            rm.TPM_RC_HANDLE | rm.TPM_RC_P1
    assert list(served.rm.abandoned) == [index]
    tool("tpm2_policypcr", "-S", "s.ctx", "-l", "sha256:0", "-L", "policy.digest")
    tool("tpm2_flushcontext", "s.ctx")
    assert settle(served, 0) == []


def test_two_processes_cannot_see_use_or_flush_each_others_sessions(served, tmp_path: Path) -> None:
    """A (a process holding an HMAC session) and B (tpm2-tools, then raw frames from this process)."""
    a = subprocess.Popen([sys.executable, "-c", CLIENT, str(served.port), START_HMAC_SESSION.hex(), "wait"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        handle = int(a.stdout.readline(), 16)
        assert handle >> 24 == 2 and tpm_sessions(served) == [rm.session_index(handle)]
        env = tools_env(served)
        for cap in ("handles-saved-session", "handles-loaded-session"):
            seen = subprocess.run(["tpm2_getcap", cap], env=env, capture_output=True, text=True, timeout=60)
            assert seen.returncode == 0 and f"{handle:#x}" not in seen.stdout.lower(), seen.stdout
        flush = subprocess.run(["tpm2_flushcontext", f"{handle:#x}"], env=env, capture_output=True, timeout=60)
        assert flush.returncode != 0
        assert rc(call(served.port, tpm2wire.build_command(0x165, struct.pack(">I", handle)))) == \
            rm.TPM_RC_HANDLE | rm.TPM_RC_P1
        assert rc(call(served.port, tpm2wire.build_command(0x162, struct.pack(">I", handle)))) == \
            rm.TPM_RC_REFERENCE_H0  # ContextSave
        auth = struct.pack(">IHBH", handle, 0, 1, 0)  # A's session in B's authorization area
        get_random = tpm2wire.build_command(0x17B, struct.pack(">I", len(auth)) + auth + b"\x00\x08", tag=0x8002)
        assert rc(call(served.port, get_random)) == rm.TPM_RC_REFERENCE_S0
        # B's objects are B's too: A's transient slot is not visible from here
        read_public = tpm2wire.build_command(0x173, struct.pack(">I", rm.VHANDLE_TOP))
        assert rc(call(served.port, read_public)) == rm.TPM_RC_HANDLE | 0x100
        other_type = handle ^ 0x01000000  # the same session named as a policy session: still A's
        assert rc(call(served.port, tpm2wire.build_command(0x165, struct.pack(">I", other_type)))) == \
            rm.TPM_RC_HANDLE | rm.TPM_RC_P1
        assert tpm_sessions(served) == [rm.session_index(handle)]
        a.stdin.write("go\n")
        a.stdin.flush()
        assert int(a.stdout.readline(), 16) == 0  # A flushes its own session: still there, still A's
    finally:
        a.stdin.close()
        a.wait(30)
    assert settle(served, 0) == []


@pytest.mark.parametrize("kept", [0, None], ids=["kernel-0", "abrmd-default"])
def test_abandoned_session_policy_bounds_what_exiting_tools_leave(swtpm, zero_profile, tmp_path: Path,
                                                                   kept: int | None) -> None:
    """``--abandoned-sessions``: 70 tpm2-tools processes (more than swtpm's 64 session slots) each start a
    session, save it to a file and exit without flushing. With 0 (the kernel's rule) the TPM itself holds
    no session afterwards; with the default (tpm2-abrmd's) at most 4. Either way no client lists one, and
    the next client works."""
    with TimingProxy(zero_profile, swtpm, virtual=True, abandoned_sessions=kept) as proxy:
        bound = rm.ABANDONED_MAX if kept is None else kept
        env = tools_env(proxy)
        script = "for i in $(seq 70); do tpm2_startauthsession -S s$i.ctx || exit 1; done"
        done = subprocess.run(["sh", "-c", script], cwd=tmp_path, env=env, capture_output=True, timeout=300)
        assert done.returncode == 0, done.stderr.decode()[-500:]
        held = settle(proxy, bound)
        assert len(held) <= bound and proxy.rm.sessions_held() == len(held)
        if kept == 0:
            assert held == [] and not proxy.rm.abandoned
        for cap in ("handles-saved-session", "handles-loaded-session"):
            seen = subprocess.run(["tpm2_getcap", cap], env=env, capture_output=True, text=True, timeout=60)
            assert seen.returncode == 0 and seen.stdout.strip() == "", seen.stdout
        loaded = subprocess.run(["tpm2_policypcr", "-S", "s70.ctx", "-l", "sha256:0"], cwd=tmp_path, env=env,
                                capture_output=True, timeout=60)  # the last one's file: kept only by abrmd's rule
        assert (loaded.returncode == 0) == (bound > 0), loaded.stderr.decode()
        for argv in (["tpm2_createprimary", "-C", "o", "-c", "p.ctx"], ["tpm2_getrandom", "8"]):
            ok = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, timeout=60)
            assert ok.returncode == 0, (argv, ok.stderr.decode())


def test_abandoned_sessions_out_of_range_is_refused() -> None:
    with pytest.raises(ValueError, match="abandoned_max"):
        rm.ResourceManager(lambda c: c, abandoned_max=-1)
