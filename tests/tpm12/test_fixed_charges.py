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


class _NoLength(bytes):
    """A response whose length cannot be taken (a stand-in for anything failing once the command ran)."""

    def __len__(self) -> int:
        raise RuntimeError("no length")


@pytest.mark.parametrize("as_values", [True, False])
@pytest.mark.parametrize("fixed_bus", [True, False])
def test_a_failure_after_the_command_ran_still_charges_its_hashing(as_values, fixed_bus, monkeypatch):
    """The dispatcher takes the response's length before its closing charges: when that fails, the
    command's hashing (TPM_Extend's SHA-1) is charged all the same and the record closed, on either
    path and whether the bus costs are fixed (one fused clock call) or drawn."""
    from trustlab.devices.tpm12.engine import Engine
    from trustlab.devices.tpm12.parsed import Command, Reply

    cmd = Command((C.ORD["TPM_Extend"], (), (7).to_bytes(4, "big") + b"\x03" * 20, ()))
    ledgers = []
    for fail in (False, True):
        clock = Clock(load("infineon-2010"))
        engine = Engine(clock, MemoryNVStore(), POOL)
        if not fixed_bus:
            engine._bus = None
        with pytest.MonkeyPatch.context() as mp:
            if fail and as_values:
                mp.setattr(Reply, "size", _NoLength.__len__)
            elif fail:
                dispatch = Engine._dispatch
                mp.setattr(Engine, "_dispatch", lambda self, *a: (_NoLength(dispatch(self, *a)[0]), b"", b""))
            if fail:
                with pytest.raises(RuntimeError, match="no length"):
                    engine.execute(cmd if as_values else bytes(cmd))
            else:
                engine.execute(cmd if as_values else bytes(cmd))
        assert not clock._stack and engine.crypto._pending_blocks == 0
        ledgers.append(dict(clock.by_command_component))
    done, failed = ledgers
    assert failed[("TPM_Extend", "sha1_byte")] == done[("TPM_Extend", "sha1_byte")] > 0
    assert ("TPM_Extend", "ohor") in done and ("TPM_Extend", "ohor") not in failed
    assert {k: v for k, v in done.items() if k[1] != "ohor"} == failed
