"""PQC extension objects on a shared served TPM, attacked from a second client.

Under the resource manager a client's PQC keys and sequences are its own,
as the RM (and the kernel's tpmrm, tpm2-abrmd) keeps classical objects: the
reference for every refusal here is what the RM itself answers for a
classical object of another client, asked in the same test. Without the RM
(``rm=False``) the TPM is shared as it is, one object pool for everybody.
A TPM Reset, TPM2_Clear and TPM2_HierarchyControl end PQC objects as libtpms
ends its own (``ObjectFlushHierarchy``), checked beside swtpm's own objects.
"""

from __future__ import annotations

import struct
import subprocess
import sys
import time

import pytest

from trustlab.devices.tpm2.pqc import structures as S
from trustlab.devices.tpm2.pqc.client import PqcClient, TpmResponseError, external_mu, frame, password, split_response
from trustlab.devices.tpm2.pqc.state import MAX_OBJECTS
from trustlab.serving import wire
from trustlab.serving.proxy import timed_swtpm
from trustlab.serving.tpm2 import rm

from .conftest import needs_swtpm

PROFILE = "sealsq-qvault-pqc-tpm-wolftpm"
pytestmark = [pytest.mark.swtpm, needs_swtpm]
TPM_RC_HANDLE_H1 = 0x18B
TPM_RC_HANDLE_P1 = rm.TPM_RC_HANDLE | rm.TPM_RC_P1
OWNER_A = r"""
import sys
from trustlab.devices.tpm2.pqc import structures as S
from trustlab.devices.tpm2.pqc.client import PqcClient, frame, split_response
with PqcClient.connect(sys.argv[1]) as t:
    key = t.create_primary("ML-DSA-44")
    classical = t.create_storage_primary()
    (seq,), _ = split_response(t.call("TPM2_SignSequenceStart", frame(0x1AA, [key.handle],
                                      S.tpm2b(b"") + S.tpm2b(b""))), 1)
    print(hex(key.handle), hex(classical), hex(seq), key.public.unique.hex(), flush=True)
    if sys.argv[2] == "wait":
        sys.stdin.readline()
"""


@pytest.fixture
def served():
    with timed_swtpm(PROFILE, virtual=True) as proxy:
        yield proxy


def rc_of(call) -> int:
    try:
        call()
    except TpmResponseError as exc:
        return exc.rc
    return 0


def owner(proxy, wait: bool) -> tuple[subprocess.Popen, list[str]]:
    a = subprocess.Popen([sys.executable, "-c", OWNER_A, proxy.tcti, "wait" if wait else "exit"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    return a, a.stdout.readline().split()


def sequence_update(t: PqcClient, seq: int, data: bytes) -> None:
    t.call("TPM2_SequenceUpdate", frame(0x15C, [seq], S.tpm2b(data), [password()]))


def test_another_client_can_neither_see_use_save_flush_nor_feed_a_clients_pqc_objects(served):
    a, (key_hex, classical_hex, seq_hex, _unique) = owner(served, wait=True)
    key, classical, seq = int(key_hex, 16), int(classical_hex, 16), int(seq_hex, 16)
    try:
        with PqcClient.connect(served.tcti) as b:
            # the reference: what the resource manager answers B for A's classical object
            assert rc_of(lambda: b.read_public(classical)) == TPM_RC_HANDLE_H1
            assert rc_of(lambda: b.context_save(classical)) == TPM_RC_HANDLE_H1
            assert rc_of(lambda: b.flush(classical)) == TPM_RC_HANDLE_P1
            # A's PQC key and sequence: the same answers
            assert rc_of(lambda: b.read_public(key)) == TPM_RC_HANDLE_H1
            assert rc_of(lambda: b.sign_digest(key, b"\x11" * 64)) == TPM_RC_HANDLE_H1
            assert rc_of(lambda: b.context_save(key)) == TPM_RC_HANDLE_H1
            assert rc_of(lambda: b.flush(key)) == TPM_RC_HANDLE_P1
            assert rc_of(lambda: sequence_update(b, seq, b"EVIL")) == TPM_RC_HANDLE_H1
            assert rc_of(lambda: b.flush(seq)) == TPM_RC_HANDLE_P1
            assert transient_handles(b) == []  # neither A's classical object nor its PQC ones
            # B's own objects get handles of B's own: its first PQC key is B's, not A's
            mine = b.create_primary("ML-KEM-768")
            assert mine.handle == key and b.read_public(mine.handle)[0].type == S.TPM_ALG_MLKEM
            own_classical = b.create_storage_primary()
            assert transient_handles(b) == [own_classical, mine.handle]  # B's own, as the RM lists them
            assert transient_handles(b, first=mine.handle + 1) == []
            assert transient_handles(b, count=1, more=1) == [own_classical]  # cut: moreData, as the TPM does
    finally:
        a.stdin.close()
        a.wait(30)


def transient_handles(t: PqcClient, first: int = 0x80000000, count: int = 64, more: int = 0) -> list[int]:
    """GetCapability(TPM_CAP_HANDLES) from ``first``, whose moreData must be ``more``."""
    listed = t.call("TPM2_GetCapability", frame(0x17A, [], S.u32(1) + S.u32(first) + S.u32(count)))
    n = struct.unpack_from(">I", listed, 15)[0]
    assert listed[10] == more and len(listed) == 19 + 4 * n
    return list(struct.unpack_from(f">{n}I", listed, 19))


def test_a_sequence_signs_only_its_owners_message(served):
    """seq.py's attack: B's SequenceUpdate never reaches A's signing sequence."""
    with PqcClient.connect(served.tcti) as t:
        key = t.create_primary("ML-DSA-44")
        (seq,), _ = split_response(t.call("TPM2_SignSequenceStart", frame(0x1AA, [key.handle],
                                          S.tpm2b(b"") + S.tpm2b(b""))), 1)
        intruder = subprocess.run([sys.executable, "-c", r"""
import sys
from trustlab.devices.tpm2.pqc import structures as S
from trustlab.devices.tpm2.pqc.client import PqcClient, TpmResponseError, frame, password
with PqcClient.connect(sys.argv[1]) as t:
    try:
        t.call("TPM2_SequenceUpdate", frame(0x15C, [int(sys.argv[2], 16)], S.tpm2b(b"EVIL"), [password()]))
        print(0)
    except TpmResponseError as e:
        print(e.rc)
""", served.tcti, hex(seq)], capture_output=True, text=True, timeout=60)
        assert int(intruder.stdout) == TPM_RC_HANDLE_H1, intruder.stderr
        r = t.call("TPM2_SignSequenceComplete", frame(0x1A4, [seq, key.handle], S.tpm2b(b"hello"),
                                                       [password(), password()]))
        signature = S.parse_signature_bytes(split_response(r, 0)[1].rest())[2]
        t.verify_sequence(key, b"hello", signature)


def test_an_exited_clients_key_is_unusable_at_once_not_at_the_next_reap(served):
    """The CLI case: A's process exits without flushing; the very next process cannot use A's key."""
    a, (key_hex, _c, _s, unique_hex) = owner(served, wait=False)
    a.wait(30)
    with PqcClient.connect(served.tcti) as b:  # at once: before the proxy reaps A (every 0.5 s)
        key = int(key_hex, 16)
        assert rc_of(lambda: b.sign_digest(key, b"\x11" * 64)) == TPM_RC_HANDLE_H1
        assert rc_of(lambda: b.read_public(key)) == TPM_RC_HANDLE_H1
    spaces = served.extension_state.get("pqc", dict).spaces
    deadline = time.monotonic() + 5
    while any(s.objects for s in spaces.values()) and time.monotonic() < deadline:
        time.sleep(0.1)  # reaped: A's space (and its keys' memory) is gone; B's (this live process) stays, empty
    assert all(not s.objects and not s.sequences for s in spaces.values())


def fill(t: PqcClient) -> int:
    held = 0
    for _ in range(MAX_OBJECTS + 1):
        try:
            t.create_primary("ML-KEM-768")
        except TpmResponseError as exc:
            assert exc.rc == rm.TPM_RC_OBJECT_MEMORY
            break
        held += 1
    return held


HOLDER = r"""
import sys
from trustlab.devices.tpm2.pqc.client import PqcClient, TpmResponseError
with PqcClient.connect(sys.argv[1]) as t:
    n = 0
    try:
        for _ in range(int(sys.argv[2])):
            t.create_primary("ML-KEM-768"); n += 1
    except TpmResponseError as e:
        print("refused", hex(e.rc))
    print(n, flush=True)
    sys.stdin.readline()
"""


@pytest.mark.parametrize("with_rm", [True, False], ids=["rm", "no-rm"])
def test_object_memory_is_per_client_under_the_rm_and_shared_without(with_rm):
    """hold.py: a client holding every slot blocks nobody else under the resource manager; the raw
    shared TPM (``--no-rm``) has one pool, as a TPM without a resource manager has."""
    with timed_swtpm(PROFILE, virtual=True, rm=with_rm) as proxy:
        a = subprocess.Popen([sys.executable, "-c", HOLDER, proxy.tcti, str(MAX_OBJECTS + 1)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            assert a.stdout.readline().split() == ["refused", hex(rm.TPM_RC_OBJECT_MEMORY)]
            assert int(a.stdout.readline()) == MAX_OBJECTS
            with PqcClient.connect(proxy.tcti) as b:
                assert fill(b) == (MAX_OBJECTS if with_rm else 0)
        finally:
            a.stdin.close()
            a.wait(30)


def power_cycle(proxy) -> None:
    """pc.py: swtpm's CMD_INIT on the control port (serve then sends the BIOS's Startup(CLEAR))."""
    import socket
    with socket.create_connection(("127.0.0.1", proxy.port + 1), timeout=30) as s:
        s.sendall(struct.pack(">II", wire.CMD_INIT, 0))
        assert s.recv(4) == b"\0\0\0\0"


def test_a_power_cycle_ends_pqc_objects_and_sequences_as_it_ends_swtpms(served):
    with PqcClient.connect(served.tcti) as t:
        classical = t.create_storage_primary()
        key = t.create_primary("ML-KEM-768")
        signer = t.create_primary("ML-DSA-44")
        (seq,), _ = split_response(t.call("TPM2_SignSequenceStart", frame(0x1AA, [signer.handle],
                                          S.tpm2b(b"") + S.tpm2b(b""))), 1)
        power_cycle(served)
        assert rc_of(lambda: t.read_public(classical)) == TPM_RC_HANDLE_H1  # libtpms' own, the reference
        assert rc_of(lambda: t.read_public(key.handle)) == TPM_RC_HANDLE_H1
        assert rc_of(lambda: sequence_update(t, seq, b"x")) == TPM_RC_HANDLE_H1
        assert t.create_primary("ML-KEM-768").handle == key.handle  # every slot free again


def hierarchy_keys(t: PqcClient) -> dict[str, int]:
    """A PQC key and a classical (swtpm) key per hierarchy, and PQC children of owner/endorsement parents."""
    out = {}
    for name, h in (("owner", S.TPM_RH_OWNER), ("endorsement", S.TPM_RH_ENDORSEMENT), ("null", S.TPM_RH_NULL)):
        out[f"pqc-{name}"] = t.create_primary("ML-DSA-44", hierarchy=h).handle
        parent = t.create_storage_primary(h)
        out[f"classical-{name}"] = parent
        if name != "null":
            out[f"child-{name}"] = t.load(parent, *t.create(parent, "ML-KEM-768")).handle
    return out


def alive(t: PqcClient, handles: dict[str, int]) -> set[str]:
    return {name for name, h in handles.items()
            if S.response_code(t.transport.transact(frame(0x173, [h], b""))) == 0}  # TPM2_ReadPublic


@pytest.mark.parametrize("command, flushed", [
    (frame(0x126, [0x4000000A], b"", [password()]), {"owner", "endorsement"}),  # TPM2_Clear (lockout auth)
    (frame(0x121, [S.TPM_RH_PLATFORM], S.u32(S.TPM_RH_ENDORSEMENT) + b"\x00", [password()]), {"endorsement"}),
    (frame(0x121, [S.TPM_RH_PLATFORM], S.u32(S.TPM_RH_OWNER) + b"\x00", [password()]), {"owner"}),
], ids=["Clear", "HierarchyControl-endorsement", "HierarchyControl-owner"])
def test_clear_and_hierarchy_control_flush_pqc_objects_of_those_hierarchies_as_libtpms_flushes_its_own(
        served, command, flushed):
    with PqcClient.connect(served.tcti) as t:
        handles = hierarchy_keys(t)
        assert alive(t, handles) == set(handles)
        assert S.response_code(t.transport.transact(command)) == 0
        gone = set(handles) - alive(t, handles)
        assert {n for n in gone if n.startswith("classical-")} == {f"classical-{h}" for h in flushed}  # swtpm's
        assert {n for n in gone if n.startswith("pqc-")} == {f"pqc-{h}" for h in flushed}
        assert {n for n in gone if n.startswith("child-")} == {f"child-{h}" for h in flushed}


def test_a_failed_clear_flushes_nothing(served):
    with PqcClient.connect(served.tcti) as t:
        key = t.create_primary("ML-DSA-44")
        refused = t.transport.transact(frame(0x126, [0x4000000A], b"", [password(b"not-the-lockout-auth")]))
        assert S.response_code(refused) != 0
        assert t.read_public(key.handle)[0].type == S.TPM_ALG_MLDSA
        t.sign_digest(key.handle, external_mu(key.public.unique, b"m"))


def test_a_context_saved_before_a_power_cycle_no_longer_loads_as_libtpms_own_do_not(served):
    """libtpms binds an object's saved context to totalResetCount: after a TPM Reset it is TPM_RC_INTEGRITY."""
    with PqcClient.connect(served.tcti) as t:
        key = t.create_primary("ML-DSA-44")
        saved = t.context_save(key.handle)
        classical = t.create_storage_primary()
        classical_saved = t.call("TPM2_ContextSave", frame(0x162, [classical], b""))[10:]
        assert t.context_load(saved).public.unique == key.public.unique  # before: it loads
        power_cycle(served)
        reference = S.response_code(t.transport.transact(frame(0x161, [], classical_saved)))
        assert reference & 0xBF == 0x9F  # TPM_RC_INTEGRITY (on parameter 1)
        assert rc_of(lambda: t.context_load(saved)) == reference
