"""Saved PQC contexts live and die as libtpms' own object contexts do, and need no hierarchy's authorization.

Each test puts a classical (swtpm, i.e. libtpms) object beside a PQC object and
asks the same question of both through the same serve: the classical answer is
the reference. The hierarchy events are run from a *second* client (the one
that saved the contexts only loads them).
"""

from __future__ import annotations

import struct

import pytest

from trustlab.devices.tpm2.extensions import Reader
from trustlab.devices.tpm2.pqc import binding
from trustlab.devices.tpm2.pqc import structures as S
from trustlab.devices.tpm2.pqc.client import PqcClient, TpmResponseError, external_mu, frame, password
from trustlab.devices.tpm2.pqc.structures import response_code as rc
from trustlab.serving.proxy import timed_swtpm

from .conftest import needs_swtpm
from .test_pqc_isolation import power_cycle

PROFILE = "sealsq-qvault-pqc-tpm-wolftpm"
pytestmark = [pytest.mark.swtpm, needs_swtpm]
HIERARCHIES = {"owner": S.TPM_RH_OWNER, "null": S.TPM_RH_NULL, "endorsement": S.TPM_RH_ENDORSEMENT,
               "platform": S.TPM_RH_PLATFORM}
ECC_SIGN = (S.u16(0x23) + S.u16(S.TPM_ALG_SHA256)
            + S.u32(S.FIXED_TPM | S.FIXED_PARENT | S.SENSITIVE_DATA_ORIGIN | S.USER_WITH_AUTH | S.SIGN)
            + S.tpm2b(b"") + S.u16(0x10) + S.u16(0x18) + S.u16(S.TPM_ALG_SHA256) + S.u16(3) + S.u16(0x10)
            + S.tpm2b(b"") + S.tpm2b(b""))
"""An ECC P-256 ECDSA signing primary (libtpms' object, the reference)."""


@pytest.fixture(scope="module")
def served():
    with timed_swtpm(PROFILE, virtual=True) as proxy:
        yield proxy


def saved_pair(t: PqcClient, hierarchy: int) -> tuple[bytes, bytes]:
    """(classical context, PQC context) of a primary of ``hierarchy``, each flushed after ContextSave."""
    response = t.transport.transact(frame(0x131, [hierarchy], S.sensitive_create(b"") + S.tpm2b(ECC_SIGN)
                                          + S.tpm2b(b"") + S.u32(0), [password()]))
    assert rc(response) == 0
    (classical,) = struct.unpack_from(">I", response, 10)
    classical_ctx = t.transport.transact(frame(0x162, [classical], b""))[10:]
    t.flush(classical)
    key = t.create_primary("ML-DSA-44", hierarchy=hierarchy)
    pqc_ctx = t.context_save(key.handle)
    t.flush(key.handle)
    return classical_ctx, pqc_ctx


def load_rc(t: PqcClient, context: bytes) -> int:
    response = t.transport.transact(frame(0x161, [], context))
    if rc(response) == 0:
        t.transport.transact(frame(0x165, [], response[10:14]))
    return rc(response)


EVENTS = {
    "ChangePPS": frame(0x125, [S.TPM_RH_PLATFORM], b"", [password()]),
    "ChangeEPS": frame(0x124, [S.TPM_RH_PLATFORM], b"", [password()]),
    "Clear": frame(0x126, [S.TPM_RH_PLATFORM], b"", [password()]),
    "HierarchyControl-endorsement-off": frame(0x121, [S.TPM_RH_PLATFORM], S.u32(S.TPM_RH_ENDORSEMENT) + b"\0",
                                              [password()]),
    "HierarchyControl-owner-off": frame(0x121, [S.TPM_RH_PLATFORM], S.u32(S.TPM_RH_OWNER) + b"\0", [password()]),
}
EXPECTED_DEAD = {"ChangePPS": {"platform": 0x1DF}, "ChangeEPS": {"endorsement": 0x1DF},
                 "Clear": {"owner": 0x1DF, "endorsement": 0x1DF},
                 "HierarchyControl-endorsement-off": {"endorsement": 0x1C5},
                 "HierarchyControl-owner-off": {"owner": 0x1C5}}
"""libtpms' answers (TPM_RC_INTEGRITY / TPM_RC_HIERARCHY on parameter 1); every other context loads."""


@pytest.mark.parametrize("event", list(EVENTS))
def test_a_pqc_context_loads_after_a_hierarchy_event_exactly_when_libtpms_own_does(served, event):
    power_cycle(served)  # every hierarchy enabled again, nothing loaded
    with PqcClient.connect(served.tcti) as saver, PqcClient.connect(served.tcti) as other:
        contexts = {name: saved_pair(saver, h) for name, h in HIERARCHIES.items()}
        assert rc(other.transport.transact(EVENTS[event])) == 0
        answers = {name: (load_rc(saver, c), load_rc(saver, p)) for name, (c, p) in contexts.items()}
    assert {name: classical for name, (classical, _) in answers.items() if classical} == EXPECTED_DEAD[event]
    assert {name: pqc for name, (_, pqc) in answers.items()} == {name: c for name, (c, _) in answers.items()}


def test_contexts_creates_and_loads_need_no_owner_authorization(served):
    """The binding needs no hierarchy's authorization: an owner password set, then the owner hierarchy off."""
    power_cycle(served)
    with PqcClient.connect(served.tcti) as t:
        assert rc(t.transport.transact(frame(0x129, [S.TPM_RH_OWNER], S.tpm2b(b"ownerpw"), [password()]))) == 0
        with pytest.raises(TpmResponseError):  # CreatePrimary itself needs it, as swtpm checks it
            t.create_primary("ML-DSA-44", hierarchy_auth=b"wrong")
        key = t.create_primary("ML-DSA-44", hierarchy_auth=b"ownerpw")
        again = t.context_load(t.context_save(key.handle))
        assert again.public.unique == key.public.unique
        srk = t.create_storage_primary(hierarchy_auth=b"ownerpw")
        child = t.load(srk, *t.create(srk, "ML-KEM-768"))
        secret, ct = t.encapsulate(child.handle)
        assert t.decapsulate(child.handle, ct) == secret
        null_key = t.create_primary("ML-DSA-44", hierarchy=S.TPM_RH_NULL)
        null_parent = t.create_storage_primary(S.TPM_RH_NULL)
        for h in (key.handle, again.handle, child.handle, srk):  # (one process: one resource-manager space)
            t.flush(h)
        assert rc(t.transport.transact(frame(0x121, [S.TPM_RH_PLATFORM], S.u32(S.TPM_RH_OWNER) + b"\0",
                                             [password()]))) == 0
        restored = t.context_load(t.context_save(null_key.handle))  # owner hierarchy off: null keys unaffected
        t.sign_digest(restored.handle, external_mu(restored.public.unique, b"m"))
        private, public = t.create(null_parent, "ML-DSA-65")
        for h in (t.load(null_parent, private, public).handle, restored.handle, null_key.handle, null_parent):
            t.flush(h)


def test_a_client_holding_three_classical_objects_saves_and_loads_its_pqc_key(served):
    """The reset secret's temporary primary is made past the resource manager: no slot of the client's."""
    with PqcClient.connect(served.tcti) as t:
        classical = [t.create_storage_primary(S.TPM_RH_NULL) for _ in range(3)]
        key = t.create_primary("ML-KEM-768", hierarchy=S.TPM_RH_NULL)
        again = t.context_load(t.context_save(key.handle))
        secret, ct = t.encapsulate(again.handle)
        assert t.decapsulate(again.handle, ct) == secret
        for h in (*classical, key.handle, again.handle):
            t.flush(h)


def sequence_start(t: PqcClient, key: int) -> int:
    response = t.call("TPM2_SignSequenceStart", frame(0x1AA, [key], S.tpm2b(b"") + S.tpm2b(b"")))
    return struct.unpack_from(">I", response, 10)[0]


def complete_rc(t: PqcClient, seq: int, key: int) -> int:
    return rc(t.transport.transact(frame(0x1A4, [seq, key], S.tpm2b(b"msg"), [password(), password()])))


def test_a_sign_sequence_is_bound_to_its_key_not_to_the_handle_number(served):
    """wolfTPM's fwTPM compares the key's Name at SignSequenceComplete (TPM_RC_SIGN_CONTEXT_KEY)."""
    with PqcClient.connect(served.tcti) as t:
        k = t.create_primary("ML-DSA-44", hierarchy=S.TPM_RH_NULL)
        seq = sequence_start(t, k.handle)
        t.flush(k.handle)
        other = t.create_primary("ML-DSA-87", hierarchy=S.TPM_RH_NULL)
        assert other.handle == k.handle  # the freed handle, another key
        assert complete_rc(t, seq, other.handle) == 0x2AD  # TPM_RC_SIGN_CONTEXT_KEY, handle 2
        t.flush(other.handle)
        seq = sequence_start(t, (k2 := t.create_primary("ML-DSA-44", hierarchy=S.TPM_RH_NULL)).handle)
        t.flush(k2.handle)
        same = t.create_primary("ML-DSA-44", hierarchy=S.TPM_RH_NULL)  # the same key again: same Name
        assert same.handle == k2.handle and complete_rc(t, seq, same.handle) == 0
        t.flush(same.handle)


def test_a_created_key_is_bound_to_its_parent_and_its_wrapping_is_refused_to_clients(served):
    with PqcClient.connect(served.tcti) as t:
        parent = t.create_storage_primary(S.TPM_RH_NULL)
        private, public = t.create(parent, "ML-DSA-44")
        r = Reader(private, len(binding.BLOB_MAGIC))
        wrap_private, wrap_public = r.tpm2b(), r.tpm2b()
        assert wrap_public.startswith(binding.WRAP_PREFIX)
        # loading the wrapping object (to unseal K) or creating one is refused: the template is reserved
        assert rc(t.transport.transact(frame(0x157, [parent], S.tpm2b(wrap_private) + S.tpm2b(wrap_public),
                                             [password()]))) == 0x2C4  # TPM_RC_VALUE, parameter 2
        assert rc(t.transport.transact(frame(0x153, [parent], S.sensitive_create(b"") + S.tpm2b(
            binding.WRAP_PREFIX + S.tpm2b(b"")) + S.tpm2b(b"") + S.u32(0), [password()]))) == 0x2C4
        other = t.create_storage_primary(S.TPM_RH_ENDORSEMENT)  # another primary (same template, other seed)
        with pytest.raises(TpmResponseError) as e:
            t.load(other, private, public)  # another parent: swtpm's integrity check of the wrapping
        assert e.value.rc == 0x1DF
        tampered = private[:-1] + bytes([private[-1] ^ 1])
        with pytest.raises(TpmResponseError) as e:
            t.load(parent, tampered, public)
        assert e.value.rc == 0x1DF
        with pytest.raises(TpmResponseError) as e:
            t.load(parent, private, public, parent_auth=b"wrong")  # the parent's authorization, as swtpm checks it
        assert e.value.rc & 0xFFF in (0x98E, 0x9A2)
        t.flush(t.load(parent, private, public).handle)
        for h in (parent, other):
            t.flush(h)
