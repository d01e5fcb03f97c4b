"""Objects whose saved context the TPM no longer loads (hierarchy events, TPM reset) behind the resource manager.

The reference is the TPM itself: the same client, the same objects, the same
event from a second client, on swtpm with no resource manager (the objects stay
loaded, and libtpms flushes those of the hierarchy the event touched). Behind
the RM the objects are saved contexts that libtpms refuses to load
(TPM_RC_INTEGRITY / TPM_RC_HIERARCHY); the client must see what the TPM's own
client sees, get the slot back, and keep its other objects.
"""

from __future__ import annotations

import struct
import subprocess
import sys

import pytest

from trustlab.devices.tpm2.pqc import structures as S
from trustlab.devices.tpm2.pqc.client import PqcClient, frame, password
from trustlab.devices.tpm2.pqc.structures import response_code as rc
from trustlab.serving.proxy import timed_swtpm
from trustlab.serving.tpm2 import rm

from .conftest import needs_swtpm
from .test_pqc_context_proofs import ECC_SIGN, EVENTS
from .test_pqc_isolation import power_cycle

pytestmark = [pytest.mark.swtpm, needs_swtpm]
PROFILE = "sealsq-qvault-pqc-tpm-wolftpm"
HELD = {"platform": S.TPM_RH_PLATFORM, "endorsement": S.TPM_RH_ENDORSEMENT, "null": S.TPM_RH_NULL}
ABSENT = rm.TPM_RC_REFERENCE_H0  # handle 1: the object is not loaded
SEND = r"""
import socket, struct, sys
with socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=30) as s:
    s.sendall(bytes.fromhex(sys.argv[2]))
    head = s.recv(10, socket.MSG_WAITALL)
print(hex(struct.unpack(">I", head[6:10])[0]))
"""
HIERARCHY_EVENTS = ["ChangePPS", "ChangeEPS", "Clear", "HierarchyControl-endorsement-off"]


@pytest.fixture(scope="module")
def raw():
    with timed_swtpm(PROFILE, virtual=True, rm=False) as proxy:
        yield proxy


@pytest.fixture(scope="module")
def managed():
    with timed_swtpm(PROFILE, virtual=True) as proxy:
        yield proxy


def primary(t: PqcClient, hierarchy: int, unique: bytes = b"") -> bytes:
    """CreatePrimary of an ECC signing key (``unique`` as outsideInfo, to make another one)."""
    return t.transport.transact(frame(0x131, [hierarchy], S.sensitive_create(b"") + S.tpm2b(ECC_SIGN)
                                      + S.tpm2b(unique) + S.u32(0), [password()]))


def hold(t: PqcClient) -> dict[str, int]:
    handles = {}
    for name, hierarchy in HELD.items():
        response = primary(t, hierarchy)
        assert rc(response) == 0
        (handles[name],) = struct.unpack_from(">I", response, 10)
    return handles


def read_public(t: PqcClient, handle: int) -> int:
    return rc(t.transport.transact(frame(0x173, [handle], b"")))


def after_event(proxy, event: str) -> tuple[PqcClient, dict[str, int], dict[str, int]]:
    """(client, its handles, ReadPublic's answer per held object) after ``event`` from a second client."""
    power_cycle(proxy)  # every hierarchy enabled, nothing loaded
    t = PqcClient.connect(proxy.tcti)
    handles = hold(t)
    if event == "TPM reset":
        power_cycle(proxy)
    else:  # another process: serve gives it a space of its own
        done = subprocess.run([sys.executable, "-c", SEND, str(proxy.port), EVENTS[event].hex()],
                              capture_output=True, text=True, timeout=60)
        assert done.stdout.strip() == "0x0", done.stderr
    return t, handles, {name: read_public(t, h) for name, h in handles.items()}


@pytest.mark.parametrize("event", HIERARCHY_EVENTS)
def test_a_lost_object_answers_what_the_tpm_answers_and_frees_its_slot(raw, managed, event):
    t, _, reference = after_event(raw, event)
    t.close()
    assert ABSENT in reference.values() and set(reference.values()) <= {0, ABSENT}
    t, handles, answers = after_event(managed, event)
    with t:
        assert answers == reference  # the lost one: TPM_RC_REFERENCE_H0, as the TPM's own client sees
        lost = [name for name, code in answers.items() if code]
        assert [read_public(t, handles[name]) for name in lost] == [ABSENT] * len(lost)  # still, not wedged
        kept = [handles[name] for name in HELD if name not in lost]
        assert all(read_public(t, h) == 0 for h in kept)  # the client's other objects are untouched
        for h in kept:
            assert rc(t.transport.transact(frame(0x165, [], S.u32(h)))) == 0
        made = [primary(t, S.TPM_RH_NULL, bytes([i])) for i in range(3)]  # every slot free again
        assert [rc(r) for r in made] == [0, 0, 0]
        assert rc(primary(t, S.TPM_RH_NULL, b"4")) == rm.TPM_RC_OBJECT_MEMORY
        new = [struct.unpack_from(">I", r, 10)[0] for r in made]
        assert {handles[name] for name in lost} <= set(new)  # a lost handle names the new object now
        assert all(read_public(t, h) == 0 for h in new)
        for h in new:
            t.flush(h)


def test_after_a_tpm_reset_every_slot_is_free(raw, managed):
    """swtpm flushes every loaded object at the reset (its client sees TPM_RC_REFERENCE_H0); serve gives every
    client a new space at a power cycle (a reboot: no real client outlives it), so each old virtual handle is
    unknown (TPM_RC_HANDLE, handle 1) and all three slots are free."""
    t, _, reference = after_event(raw, "TPM reset")
    t.close()
    assert reference == {"platform": ABSENT, "endorsement": ABSENT, "null": ABSENT}
    t, handles, answers = after_event(managed, "TPM reset")
    with t:
        assert answers == {name: rm.TPM_RC_HANDLE | 0x100 for name in HELD}
        made = [primary(t, S.TPM_RH_NULL, bytes([i])) for i in range(3)]
        assert [rc(r) for r in made] == [0, 0, 0]
        for r in made:
            t.flush(struct.unpack_from(">I", r, 10)[0])


def test_a_lost_slot_answers_reference_h0_until_reused() -> None:
    """Unit level: a context the TPM refuses (any code) frees its slot, marks it lost, touches no other."""
    rm_ = rm.ResourceManager(lambda c: _refuse(c), query=lambda c: _ok())
    space = rm.Space(1)
    space.objects = [b"ctx-a", b"ctx-b", None]
    read_public_a = _cmd(0x173, rm.VHANDLE_TOP)
    answer = rm_.execute(space, read_public_a, lambda c: _ok())
    assert rc(answer) == rm.TPM_RC_REFERENCE_H0 and space.objects[0] is None and space.lost == {0}
    assert space.objects[1] == b"saved"  # the other object: loaded, used by nobody, saved again
    assert rc(rm_.execute(space, _cmd(0x173, rm.VHANDLE_TOP - 2), lambda c: _ok())) == 0x18B  # never used
    rm_.close(space)
    assert space.lost == set()


def _cmd(code: int, handle: int) -> bytes:
    from trustlab.devices.tpm2 import wire
    return wire.build_command(code, struct.pack(">I", handle))


def _ok() -> bytes:
    from trustlab.devices.tpm2 import wire
    return wire.error_response(0)


def _refuse(command: bytes) -> bytes:
    """A TPM that refuses ``ctx-a`` (TPM_RC_INTEGRITY, parameter 1), loads anything else at 0x80000001 and
    saves everything as ``saved``."""
    from trustlab.devices.tpm2 import wire
    code = struct.unpack_from(">I", command, 6)[0]
    if code == rm.TPM_CC_CONTEXT_LOAD:
        if command[10:] == b"ctx-a":
            return wire.error_response(0x1DF)
        return struct.pack(">HIII", 0x8001, 14, 0, 0x80000001)
    if code == rm.TPM_CC_CONTEXT_SAVE:
        return b"\x80\x01" + struct.pack(">II", 15, 0) + b"saved"
    return _ok()
