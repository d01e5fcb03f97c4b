"""The engine's precomputed charges give exactly the ledger that charging each component gives.

The dispatcher and the primitives charge the bus overheads, the hashed blocks
and the RSA operations as precomputed products when a component has no spread
(``Clock.fixed_cost``), and through ``Clock.charge`` (which draws) when it
has one. Forcing every charge through ``Clock.charge`` must change nothing:
not a time, not a ledger entry, not a draw.
"""

from __future__ import annotations

import dataclasses

import pytest

from trustlab.devices.tpm12 import MemoryNVStore, Tpm12, key_template, secret
from trustlab.devices.tpm12 import constants as C
from trustlab.timing.clock import Clock
from trustlab.timing.profile import Profile
from trustlab.timing.registry import load

from .conftest import OWNER, POOL, SRK

K, D = secret("k"), secret("d")


def _profile(spread: tuple[str, ...]) -> Profile:
    base = load("infineon-2010")
    comps = {name: dataclasses.replace(c, sd=c.mean / 10) if name in spread else c
             for name, c in base.components.items()}
    return dataclasses.replace(base, components=comps)


def _run(profile: Profile, per_call: bool) -> Clock:
    POOL.reset()
    clock = Clock(profile, seed=7)
    tpm = Tpm12(clock, nv=MemoryNVStore(), keygen=POOL)
    if per_call:  # what the engine did before the precomputed products
        tpm.engine._bus = None
        tpm.engine.crypto._sha1_byte = None
        tpm.engine.crypto._rsa_ms = {}
    tpm.TPM_TakeOwnership(OWNER, SRK)
    srk = C.TPM_KH_SRK
    storage = tpm.TPM_LoadKey2(srk, tpm.TPM_CreateWrapKey(srk, SRK, key_template(C.TPM_KEY_STORAGE), K), SRK)
    sign = tpm.TPM_LoadKey2(srk, tpm.TPM_CreateWrapKey(srk, SRK, key_template(C.TPM_KEY_SIGNING), K), SRK)
    session = tpm.TPM_OIAP(K)
    for i in range(3):
        tpm.TPM_Sign(sign, bytes([i]) * 20, session)
        tpm.TPM_Quote(sign, b"\x02" * 20, range(24), session)
        tpm.TPM_Unseal(storage, tpm.TPM_Seal(storage, K, b"eleven byte", D), K, D)
        tpm.TPM_Extend(i, b"\x03" * 20)
        tpm.TPM_GetRandom(20)
    with pytest.raises(Exception):
        tpm.TPM_Sign(sign, b"\x01" * 20, secret("wrong"))  # an error answer is charged too
    return clock


def _ledger(clock: Clock) -> tuple:
    return (clock.now_ms, dict(clock.by_component), dict(clock.by_command_component), dict(clock.by_command),
            dict(clock.command_counts), clock.last.ms, clock.last.breakdown, clock.cost("ohc"))


@pytest.mark.parametrize("spread", [(), ("ohir",), ("ohc", "sha1_byte"), ("rsa_sign", "rsa_dec", "ohor")])
def test_precomputed_charges_equal_per_call_charges(spread):
    profile = _profile(spread)
    fast, slow = _run(profile, per_call=False), _run(profile, per_call=True)
    assert _ledger(fast) == _ledger(slow)  # exact: same products, same additions, same draws
