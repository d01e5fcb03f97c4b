"""Exclusive logged transport sessions: the signed log verifies; tampering does not."""

from __future__ import annotations

import dataclasses

import pytest

from trustlab.devices.tpm12 import Tpm12, TpmError, key_template, secret
from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12 import transport_log as L
from trustlab.devices.tpm12.keys import Key12, rsa_public

from .conftest import OWNER, SRK

AIK = secret("aik")


@pytest.fixture
def setup(tpm: Tpm12):
    blob = tpm.TPM_CreateWrapKey(C.TPM_KH_SRK, SRK, key_template(C.TPM_KEY_SIGNING), AIK)
    aik = tpm.TPM_LoadKey2(C.TPM_KH_SRK, blob, SRK)
    cid, _ = tpm.TPM_CreateCounter(OWNER, secret("c"))
    return tpm, aik, rsa_public(Key12.from_bytes(blob).pub), cid


def test_signed_log_verifies_and_tampering_fails(setup) -> None:
    tpm, aik, pub, cid = setup
    t = tpm.TPM_EstablishTransport(secret("t"))
    with tpm.through(t):
        value = tpm.TPM_IncrementCounter(cid, secret("c"))
        assert tpm.TPM_ReadCounter(cid) == value
    nonce = b"\x42" * 20
    rel = tpm.TPM_ReleaseTransportSigned(aik, nonce, t, AIK)
    assert L.verify_release(pub, nonce, rel.trans_digest, rel.signature)
    assert not L.verify_release(pub, b"\x43" * 20, rel.trans_digest, rel.signature)  # replayed nonce
    # drop, reorder or alter a logged command: the recomputed digest no longer verifies
    variants = [t.entries[:1] + t.entries[2:], [t.entries[0], t.entries[2], t.entries[1]] + t.entries[3:],
                [t.entries[0], dataclasses.replace(t.entries[1], out_digest=b"\x00" * 20)] + t.entries[2:]]
    for entries in variants:
        d = L.release_output(L.replay(entries, t.tick_nonce), rel.ticks, tpm.last_in_digest)
        assert not L.verify_release(pub, nonce, d, rel.signature)


def test_command_outside_an_exclusive_session_ends_it(setup) -> None:
    tpm, aik, _pub, cid = setup
    t = tpm.TPM_EstablishTransport(secret("t"))
    tpm.TPM_ReadCounter(cid)  # outside the session
    with pytest.raises(TpmError, match="TPM_INVALID_AUTHHANDLE"):
        tpm.TPM_ReleaseTransportSigned(aik, b"\x00" * 20, t, AIK)


def test_wrong_transport_secret_is_refused(setup) -> None:
    tpm, aik, _pub, cid = setup
    t = tpm.TPM_EstablishTransport(secret("t"))
    t.key = secret("not t")
    with pytest.raises(TpmError, match="TPM_AUTHFAIL"), tpm.through(t):
        tpm.TPM_ReadCounter(cid)


def test_counter_and_transport_components_are_charged_when_the_profile_has_them() -> None:
    from trustlab.devices.tpm12 import MemoryNVStore
    from trustlab.timing.clock import Clock
    from trustlab.timing.registry import load

    from .conftest import POOL

    profile = load("infineon-counters-2010").without_spread()
    clock = Clock(profile)
    tpm = Tpm12(clock, nv=MemoryNVStore(), keygen=POOL)
    tpm.TPM_TakeOwnership(OWNER, SRK)
    cid, _ = tpm.TPM_CreateCounter(OWNER, secret("c"))
    t = tpm.TPM_EstablishTransport(secret("t"))
    assert clock.last.breakdown["transport"] == profile.mean("transport")
    with tpm.through(t):
        tpm.TPM_IncrementCounter(cid, secret("c"))
        assert clock.last.breakdown["counter_inc"] == profile.mean("counter_inc")
        tpm.TPM_ReadCounter(cid)
        assert clock.last.breakdown["counter_read"] == profile.mean("counter_read")


def test_identity_keys_cannot_sign_a_transport_log(tpm: Tpm12) -> None:
    """Part 3 rev 116, 24.3 step 3: only TPM_KEY_SIGNING keys (libtpms agrees)."""
    blob, _binding = tpm.TPM_MakeIdentity(OWNER, SRK, AIK)
    aik = tpm.TPM_LoadKey2(C.TPM_KH_SRK, blob, SRK)
    t = tpm.TPM_EstablishTransport(secret("t"))
    with pytest.raises(TpmError, match="TPM_INVALID_KEYUSAGE"):
        tpm.TPM_ReleaseTransportSigned(aik, b"\x00" * 20, t, AIK)
