"""TPM 1.2 engine benchmark: simulation speed and the framework's own overhead.

Figures (all measured within one run, so they compare across machines):

* ``oracle_sim_ms_per_wall_s``: modelled TPM milliseconds (all parties) per
  wall-clock second for the random-oracle study; the paper's realtime
  simulator runs at 1000 by construction, so this over 1000 is the speed-up.
* ``mix_sim_ms_per_wall_s`` / ``mix_speedup_vs_realtime``: the same for a
  command mix (the paper's Table II commands plus Extend, GetRandom and
  counters), 10,000 commands (1,000 with --quick).
* ``overhead_ratio``: CPU time of the mix through the whole framework (host
  TSS helper, marshalling, sessions, dispatcher, clock) divided by the CPU
  time of replaying exactly the ``cryptography``/hashlib calls the engine's
  primitives made during an identical run (process CPU time, minimum of
  5 alternating rounds, 3 until issue 15's third session; the wall-time
  ratio is reported too). Target <= 1.3
  (issue 15; 1.5 before). Reported for the
  whole mix (``overhead_ratio`` = ``mix_overhead_ratio``) and for its
  RSA-bearing part alone (``rsa_mix_*``: the Table II commands). The host
  side's own HMACs and digests (the TSS half of every authorization) count
  as framework time, not as raw crypto, so the ratio is conservative;
  ``*_overhead_ratio_incl_host_crypto`` counts them as raw crypto too.
  Since issue 15's third session the mix's command sequence is drawn before
  the timer starts (the same sequence as before; the driver's own RNG calls,
  ~2% of the framework side then, were counted as framework time until then).
"""

from __future__ import annotations

import hashlib
import random
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, utils

from trustlab.apps import oracle
from trustlab.devices.tpm12 import MemoryNVStore, Tpm12, key_template, secret
from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12 import hostcrypto
from trustlab.devices.tpm12.client import bind
from trustlab.devices.tpm12.keys import Key12
from trustlab.devices.tpm12.primitives import KeyPool, Primitives, new_hmac
from trustlab.timing.clock import Clock
from trustlab.timing.registry import load

OWNER, SRK, K, D = secret("owner"), secret("srk"), secret("k"), secret("d")
OAEP = padding.OAEP(padding.MGF1(hashes.SHA1()), hashes.SHA1(), b"TCPA")


@contextmanager
def record_engine_crypto(calls: list[tuple[Any, ...]]) -> Iterator[None]:
    """Record every raw crypto call of every engine's :class:`Primitives` (class-level) for :func:`replay`.

    An HMAC key longer than a SHA-1 block is recorded hashed: ``Primitives.hmac``
    hashes it through ``sha1``, which is recorded as a call of its own.
    """
    saved = {n: getattr(Primitives, n) for n in ("sha1", "hmac", "rsa_encrypt", "rsa_decrypt", "rsa_sign")}
    sha1, hmac1, enc, dec, sign = saved.values()
    Primitives.sha1 = lambda self, *p: (calls.append(("sha1", b"".join(p))), sha1(self, *p))[1]
    Primitives.hmac = lambda self, k, *p: (calls.append(("hmac", k if len(k) <= 64 else hashlib.sha1(k).digest(),
                                                         b"".join(p))), hmac1(self, k, *p))[1]
    Primitives.rsa_encrypt = lambda self, pub, m: (calls.append(("enc", pub, m)), enc(self, pub, m))[1]
    Primitives.rsa_decrypt = lambda self, priv, c: (calls.append(("dec", priv, c)), dec(self, priv, c))[1]
    Primitives.rsa_sign = lambda self, priv, d: (calls.append(("sign", priv, d)), sign(self, priv, d))[1]
    try:
        yield
    finally:
        for name, fn in saved.items():
            setattr(Primitives, name, fn)


@contextmanager
def record_host_crypto(calls: list[tuple[Any, ...]]) -> Iterator[None]:
    """Record the host side's raw crypto calls (:mod:`~trustlab.devices.tpm12.hostcrypto`) for :func:`replay`."""
    saved = {n: getattr(hostcrypto, n) for n in ("sha1", "hmac_sha1", "oaep_encrypt", "verify_sha1")}
    sha1, hmac1, enc, verify = saved.values()
    hostcrypto.sha1 = lambda *p: (calls.append(("sha1", b"".join(p))), sha1(*p))[1]
    hostcrypto.hmac_sha1 = lambda k, *p: (calls.append(("hmac", k, b"".join(p))), hmac1(k, *p))[1]
    hostcrypto.oaep_encrypt = lambda pub, m: (calls.append(("enc", pub, m)), enc(pub, m))[1]
    hostcrypto.verify_sha1 = lambda pub, sig, d: (calls.append(("verify", pub, sig, d)), verify(pub, sig, d))[1]
    try:
        yield
    finally:
        for name, fn in saved.items():
            setattr(hostcrypto, name, fn)


def replay(calls: list[tuple[Any, ...]], timer: Callable[[], float] = time.perf_counter) -> float:
    """Seconds (by ``timer``: wall by default) to make exactly these raw calls with hashlib, OpenSSL's
    HMAC and cryptography.

    A decryption the engine saw fail (a wrong key in an error-path command) fails here too, at the same cost.
    """
    pkcs1, prehashed = padding.PKCS1v15(), utils.Prehashed(hashes.SHA1())
    started = timer()
    for call in calls:
        kind = call[0]
        if kind == "sha1":
            hashlib.sha1(call[1]).digest()
        elif kind == "hmac":
            new_hmac(call[1], call[2], "sha1").digest()  # (OpenSSL's HMAC, as the engine and host call it)
        elif kind == "enc":
            call[1].encrypt(call[2], OAEP)
        elif kind == "dec":
            try:
                call[1].decrypt(call[2], OAEP)
            except ValueError:
                pass
        elif kind == "verify":
            call[1].verify(call[2], call[3], pkcs1, prehashed)
        else:
            call[1].sign(call[2], pkcs1, prehashed)
    return timer() - started


def _mix_setup(pool: KeyPool, profile_name: str):
    clock = Clock(load(profile_name))
    tpm = Tpm12(clock, nv=MemoryNVStore(), keygen=pool)
    tpm.TPM_TakeOwnership(OWNER, SRK)
    srk = C.TPM_KH_SRK
    storage = tpm.TPM_LoadKey2(srk, tpm.TPM_CreateWrapKey(srk, SRK, key_template(C.TPM_KEY_STORAGE), K), SRK)
    sign = tpm.TPM_LoadKey2(srk, tpm.TPM_CreateWrapKey(srk, SRK, key_template(C.TPM_KEY_SIGNING), K), SRK)
    bind_blob = tpm.TPM_CreateWrapKey(srk, SRK, key_template(C.TPM_KEY_BIND), K)
    bind_h = tpm.TPM_LoadKey2(srk, bind_blob, SRK)
    bound = bind(Key12.from_bytes(bind_blob).pubkey(), b"eleven byte")
    child = Key12.from_bytes(tpm.TPM_CreateWrapKey(storage, K, key_template(C.TPM_KEY_SIGNING), K))
    cid, _ = tpm.TPM_CreateCounter(OWNER, D)
    stored = tpm.TPM_Seal(storage, K, b"eleven byte", D)
    return clock, tpm, dict(storage=storage, sign=sign, bind=bind_h, bound=bound, child=child, cid=cid,
                            stored=stored)


ALL_OPS = ["Sign", "Quote", "Seal", "Unseal", "UnBind", "ChangeAuth", "Extend", "GetRandom",
           "IncrementCounter", "ReadCounter"]
RSA_OPS = ALL_OPS[:6]  # the paper's Table II commands: every one does an RSA operation


def _plan(n: int, seed: int, ops: list[str] = ALL_OPS) -> list[tuple[str, int]]:
    """The mix's commands (name, PCR index for Extend), drawn before any timing starts.

    (Until issue 15's third session the driver drew them between commands,
    inside the timed region; the driver's RNG is not the framework's work. Same
    draws in the same order, so the same commands.)
    """
    rng = random.Random(seed)
    plan = []
    for _ in range(n):
        op = rng.choice(ops)
        plan.append((op, rng.randrange(17) if op == "Extend" else 0))  # PCRs 17-22 need locality > 0
    return plan


def _mix(tpm: Tpm12, env: dict, n: int, seed: int, ops: list[str] = ALL_OPS,
         plan: list[tuple[str, int]] | None = None) -> None:
    if plan is None:
        plan = _plan(n, seed, ops)
    k, d, k2 = tpm.TPM_OIAP(K), tpm.TPM_OIAP(D), tpm.TPM_OIAP(K)  # long-lived sessions, as a TSS keeps
    sign, storage, stored, cid = env["sign"], env["storage"], env["stored"], env["cid"]
    for op, pcr in plan:
        if op == "Sign":
            tpm.TPM_Sign(sign, b"\x01" * 20, k)
        elif op == "Quote":
            tpm.TPM_Quote(sign, b"\x02" * 20, range(24), k)
        elif op == "Seal":
            tpm.TPM_Seal(storage, K, b"eleven byte", D)
        elif op == "Unseal":
            tpm.TPM_Unseal(storage, stored, k, d)
        elif op == "UnBind":
            tpm.TPM_UnBind(env["bind"], env["bound"], k)
        elif op == "ChangeAuth":
            tpm.TPM_ChangeAuth(storage, K, C.TPM_ET_KEY, env["child"].enc, k2, K)
        elif op == "Extend":
            tpm.TPM_Extend(pcr, b"\x03" * 20)
        elif op == "GetRandom":
            tpm.TPM_GetRandom(20)
        elif op == "IncrementCounter":
            tpm.TPM_IncrementCounter(cid, d)
        else:
            tpm.TPM_ReadCounter(cid)


def run(quick: bool) -> dict:
    pool = KeyPool()
    n = 1000 if quick else 10_000
    profile = "infineon-2010"
    # ---- oracle study ------------------------------------------------------------
    parties = 3 if quick else 5
    oracle.run(load(profile), parties, queries=1, keygen=pool)  # warm the key pool
    pool.reset()
    started = time.perf_counter()
    result = oracle.run(load(profile), parties, queries=10, keygen=pool)
    oracle_wall = time.perf_counter() - started
    oracle_sim = sum(ms for calls in result.calls.values() for _, ms in calls)
    mix = _measure_mix(pool, profile, n, ALL_OPS)
    rsa_mix = _measure_mix(pool, profile, n // 2, RSA_OPS)
    return {
        "profile": profile,
        "oracle_parties": parties,
        "oracle_sim_ms": oracle_sim,
        "oracle_wall_s": oracle_wall,
        "oracle_sim_ms_per_wall_s": oracle_sim / oracle_wall,
        "oracle_speedup_vs_realtime": oracle_sim / (oracle_wall * 1000),
        **{f"mix_{k}": v for k, v in mix.items()},
        **{f"rsa_mix_{k}": v for k, v in rsa_mix.items()},
        "overhead_ratio": mix["overhead_ratio"],
        "overhead_target": 1.3,
    }


def _measure_mix(pool: KeyPool, profile: str, n: int, ops: list[str], rounds: int = 5) -> dict:
    """Time ``n`` commands through the framework, then replay its raw crypto calls alone.

    Rounds alternate framework and replay and keep the minimum of each, and the
    ratio uses this process's CPU time: the host is shared, and wall time
    mostly measures the neighbours.
    """
    plan = _plan(n, 1, ops)
    pool.reset()
    _clock2, tpm2, env2 = _mix_setup(pool, profile)
    engine_calls: list[tuple[Any, ...]] = []
    host_calls: list[tuple[Any, ...]] = []
    with record_engine_crypto(engine_calls), record_host_crypto(host_calls):
        _mix(tpm2, env2, n, 1, ops, plan)
    walls, cpus, raw_walls, raw_cpus, host_cpus = [], [], [], [], []
    for _ in range(rounds):
        pool.reset()
        clock, tpm, env = _mix_setup(pool, profile)
        clock.reset()
        w0, c0 = time.perf_counter(), time.process_time()
        _mix(tpm, env, n, 1, ops, plan)
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
        c0 = time.process_time()
        raw_walls.append(replay(engine_calls))
        raw_cpus.append(time.process_time() - c0)
        c0 = time.process_time()
        replay(host_calls)
        host_cpus.append(time.process_time() - c0)
    wall = min(walls)
    return {"commands_requested": n, "tpm_commands": sum(clock.command_counts.values()),
            "sim_ms": clock.now_ms, "wall_s": wall, "cpu_s": min(cpus),
            "sim_ms_per_wall_s": clock.now_ms / wall,
            "speedup_vs_realtime": clock.now_ms / (wall * 1000), "raw_crypto_calls": len(engine_calls),
            "raw_crypto_wall_s": min(raw_walls), "raw_crypto_cpu_s": min(raw_cpus),
            "overhead_ratio": min(cpus) / min(raw_cpus), "overhead_ratio_wall": wall / min(raw_walls),
            "host_crypto_calls": len(host_calls),
            "overhead_ratio_incl_host_crypto": min(cpus) / (min(raw_cpus) + min(host_cpus))}
