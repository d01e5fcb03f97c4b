"""The in-process fast path (commands as values, ``devices/tpm12/parsed.py``) against the framed path.

Each scenario runs twice in this process on fresh engines with the same keys and the same
randomness: once with every command marshalled (``client.FAST_PATH = False``: the reference,
what ``serve``, TrouSerS and the libtpms comparisons use) and once on the fast path. Every
top-level command's request frame, response frame and ledger record (name, modelled ms, the
breakdown per component), each clock's totals, the scenario's results and every engine's state
at the end must be identical. Randomness is made repeatable for the comparison only: the OS
entropy both sides draw nonces from is a seeded stream, and RSA-OAEP encryption (randomized
inside OpenSSL) is replaced by the same OAEP encoding with a seed from that stream, charged
as the real one is (``Primitives.rsa_encrypt`` below mirrors it line for line).
"""

from __future__ import annotations

import hashlib
import os
import random
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trustlab.apps import oracle
from trustlab.apps import workloads as w
from trustlab.apps.counters import schemes
from trustlab.apps.counters.runner import run as run_requests
from trustlab.devices.tpm12 import MemoryNVStore, Tpm12, TpmError, client, hostcrypto, key_template, secret
from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12 import primitives, registry
from trustlab.devices.tpm12.client import HostSession
from trustlab.devices.tpm12.engine import Engine
from trustlab.devices.tpm12.keys import key_to_json
from trustlab.devices.tpm12.parsed import Command, Reply
from trustlab.devices.tpm12.primitives import DIGEST, Primitives, oaep_blocks, oaep_encode
from trustlab.timing.clock import Clock
from trustlab.timing.registry import load

from .conftest import OWNER, POOL, SRK

K = secret("k")


def _sha1(*parts: bytes) -> bytes:
    return hashlib.sha1(b"".join(parts)).digest()


def _oaep_seeded(public, plaintext: bytes) -> bytes:
    """RSAES-OAEP-SHA1 (label TCPA) with the seed drawn from ``os.urandom`` (seeded in these runs)."""
    k = public.key_size // 8
    em = b"\x00" + oaep_encode(_sha1, plaintext, _sha1(b"TCPA"), os.urandom(DIGEST), k - 1)
    numbers = public.public_numbers()
    return pow(int.from_bytes(em, "big"), numbers.e, numbers.n).to_bytes(k, "big")


def _rsa_encrypt_seeded(self: Primitives, public, plaintext: bytes) -> bytes:
    """``Primitives.rsa_encrypt`` with :func:`_oaep_seeded`: the same checks and charges."""
    k = public.key_size // 8
    if len(plaintext) > k - 2 * DIGEST - 2:
        raise TpmError("TPM_BAD_DATASIZE", f"{len(plaintext)} bytes do not fit one OAEP block")
    out = _oaep_seeded(public, plaintext)
    self._charge_rsa("rsa_enc")
    self._pending_blocks += oaep_blocks(k)
    return out


def _engine_state(engine: Engine) -> tuple:
    """Everything a later command can see: the persistent state and what was saved of it, the loaded
    keys' contents (not only their handles), the sessions, the STCLEAR flags and data, the clock."""
    clock = engine.clock
    return (engine.state.to_bytes(), engine.nv.load(), {h: repr(s) for h, s in engine.sessions.items()},
            {h: key_to_json(k) for h, k in engine.keys.items()},
            list(engine.pcrs), engine.exclusive, engine.auth_fail_count, engine.auth_fail_ms,
            engine.disable_reset_lock, engine.audit_digest, engine.failed, engine.post_init, engine.deactivated,
            engine.disabled, engine.counter_this_boot, engine.tick_nonce, sorted(engine.nv_stclear_locks),
            engine.global_lock, engine.disable_force_clear, engine.physical_presence, engine.pp_lock,
            engine.sha1_context, repr(engine.contexts), dict(engine._next_handle), clock.now_ms,
            dict(clock.by_component), dict(clock.by_command_component), dict(clock.command_counts))


def _record(scenario, fast: bool) -> tuple[list[tuple], list[tuple], object, int]:
    """Run ``scenario()`` on one path; every command's exchange and ledger record, the engines' states,
    the scenario's result, and how many commands went as values."""
    events: list[tuple] = []
    engines: list[Engine] = []
    as_values = [0]
    execute = Engine.execute

    def recording(self: Engine, frame):
        response = execute(self, frame)
        if not any(e is self for e in engines):
            engines.append(self)
        if type(frame) is Command:
            as_values[0] += 1
            assert type(response) is Reply
        else:
            assert type(response) is bytes
        record = self.clock.last
        events.append((next(i for i, e in enumerate(engines) if e is self), bytes(frame), bytes(response),
                       record.name, record.ms, dict(record.breakdown)))
        return response

    POOL.reset()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(client, "FAST_PATH", fast)
        mp.setattr(os, "urandom", random.Random(20240601).randbytes)
        mp.setattr(Primitives, "rsa_encrypt", _rsa_encrypt_seeded)
        mp.setattr(hostcrypto, "oaep_encrypt", _oaep_seeded)
        mp.setattr(Engine, "execute", recording)
        primitives._THREAD.__dict__.clear()  # the thread's buffered entropy (engines' and host's): afresh from the stream
        try:
            result = scenario()
        finally:
            primitives._THREAD.__dict__.clear()
    return events, [_engine_state(e) for e in engines], result, as_values[0]


def _assert_same(scenario) -> int:
    _record(scenario, fast=False)  # warm-up: process-wide caches (e.g. the counters model's probe) filled
    framed = _record(scenario, fast=False)
    fast = _record(scenario, fast=True)
    assert framed[3] == 0
    assert len(fast[0]) == len(framed[0])
    for i, (a, b) in enumerate(zip(framed[0], fast[0])):
        assert a == b, f"command #{i} ({a[3]}) differs between the framed and the fast path"
    assert fast[1] == framed[1]  # every engine's state and ledger
    assert fast[2] == framed[2]  # what the scenario computed from the answers
    return fast[3]


# ---- scenarios ---------------------------------------------------------------------------------

def _hashtree_chunk():
    """A chunk of the 2^20-counter benchmark's kind, smaller: increments and reads, every 7th signed."""
    profile = load("atmel-counters-2010").without_spread()
    built = schemes.build("hashtree", profile, 1 << 12, seed=1, attest_every=7)
    try:
        ids = [int(i) for i in w.zipf_ycsb(1 << 12, 60, seed=1, scrambled=True)]
        reqs = w.make_requests(ids[:40], "increment") + w.make_requests(ids[40:], "read")
        records = run_requests(built, reqs, seed=5)
        return [tuple(r.__dict__.values()) for r in records], built.clock.now_ms
    finally:
        built.close()


def _oracle_run():
    run = oracle.run(load("infineon-2010"), 3, queries=2, keygen=POOL)
    return run.answers, run.query_ms, run.calls


def _outcome(fn) -> tuple:
    try:
        return ("ok", fn())
    except TpmError as e:
        return ("TpmError", e.code, str(e))
    except struct.error as e:
        return ("struct.error", str(e))


def _errors_and_sessions():
    """Good commands beside refused ones: wrong secrets (up to the lockout), unknown key and session
    handles, parameters the ordinal does not parse, handle and session counts it does not take, an
    unimplemented ordinal, continued OIAP and OSAP sessions, two sessions, auditing, an exclusive
    transport session (ended by a command outside it, and released), a TPM before TPM_Startup."""
    clock = Clock(load("infineon-2010"))
    out = []
    fresh = Tpm12(clock, nv=MemoryNVStore(), keygen=POOL, started=False)
    out.append(_outcome(lambda: fresh.TPM_GetRandom(4)))  # TPM_INVALID_POSTINIT
    fresh.TPM_Startup()
    out.append(_outcome(lambda: fresh.TPM_ReadPubek()))
    tpm = Tpm12(clock, nv=MemoryNVStore(), keygen=POOL)
    tpm.TPM_TakeOwnership(OWNER, SRK)
    blob = tpm.TPM_CreateWrapKey(C.TPM_KH_SRK, SRK, key_template(C.TPM_KEY_SIGNING), K)
    key = tpm.TPM_LoadKey2(C.TPM_KH_SRK, blob, SRK)
    digest = b"\x01" * 20
    sign_params = struct.pack(">I", 20) + digest
    out += [
        _outcome(lambda: tpm.TPM_Sign(key, digest, K)),
        _outcome(lambda: tpm.TPM_Sign(key, digest, secret("wrong"))),  # TPM_AUTHFAIL
        _outcome(lambda: tpm.TPM_Sign(0x01FFFFF0, digest, K)),  # no such key
        _outcome(lambda: tpm.call("TPM_Sign", handles=[key], params=b"\x00\x00\x01", auth=[K])),  # short params
        _outcome(lambda: tpm.call("TPM_Sign", handles=[key], params=sign_params + b"\x00", auth=[K])),  # trailing
        _outcome(lambda: tpm.call("TPM_Sign", handles=[], params=sign_params, auth=[K])),  # a handle short
        _outcome(lambda: tpm.call("TPM_Sign", handles=[key, key], params=sign_params, auth=[K])),  # one too many
        _outcome(lambda: tpm.call("TPM_Sign", handles=[1 << 40], params=sign_params, auth=[K])),  # not 32 bits
        _outcome(lambda: tpm.call("TPM_Sign", handles=[key], params=sign_params, auth=[K, K])),  # TPM_BADTAG
        _outcome(lambda: tpm.call("TPM_DAA_Join", params=b"\x00" * 8)),  # TPM_BAD_ORDINAL
        _outcome(lambda: tpm.TPM_Sign(key, digest, HostSession(0x02FFFFF0, bytes(20), K))),  # no such session
        _outcome(lambda: tpm.TPM_GetPubKey(key, K)),
        _outcome(lambda: tpm.TPM_PCRRead(0)),
        _outcome(lambda: tpm.TPM_Extend(16, digest)),
    ]
    oiap = tpm.TPM_OIAP(K)  # continued across commands
    out += [_outcome(lambda: tpm.TPM_Sign(key, digest, oiap)) for _ in range(3)]
    bad = HostSession(oiap.handle, oiap.nonce_even, secret("wrong"))  # the same session, a wrong secret
    out.append(_outcome(lambda: tpm.TPM_Sign(key, digest, bad)))  # TPM_AUTHFAIL: the TPM ends the session
    out.append(_outcome(lambda: tpm.TPM_Sign(key, digest, oiap)))  # its handle is gone
    out.append(_outcome(lambda: tpm.TPM_Sign(key, digest, bad)))  # closed on the host: refused unsent
    once = tpm.TPM_OIAP(K)
    once.cont = False  # continueAuthSession FALSE: the answer closes it on both sides
    out += [_outcome(lambda: tpm.TPM_Sign(key, digest, once)), ("open", once.open)]
    sealed = tpm.TPM_Seal(C.TPM_KH_SRK, SRK, b"secret data", secret("d"))  # OSAP
    out.append(_outcome(lambda: tpm.TPM_Unseal(C.TPM_KH_SRK, sealed, SRK, secret("d"))))  # two sessions
    out.append(_outcome(lambda: tpm.TPM_Unseal(C.TPM_KH_SRK, sealed, SRK, secret("not d"))))  # TPM_AUTH2FAIL
    tpm.call("TPM_SetOrdinalAuditStatus", params=struct.pack(">IB", C.ORD["TPM_GetRandom"], 1), auth=[OWNER])
    out.append(_outcome(lambda: tpm.TPM_GetRandom(8)))
    out.append(_outcome(lambda: tpm.call("TPM_GetAuditDigest", params=struct.pack(">I", 0))[1].rest()))
    cid, _ = tpm.TPM_CreateCounter(OWNER, secret("c"))
    t = tpm.TPM_EstablishTransport(secret("t"))
    with tpm.through(t):
        out.append(_outcome(lambda: tpm.TPM_IncrementCounter(cid, secret("c"))))
    rel = tpm.TPM_ReleaseTransportSigned(key, b"\x42" * 20, t, K)
    out.append(("released", rel.signature, rel.trans_digest))
    t2 = tpm.TPM_EstablishTransport(secret("t"))
    out.append(_outcome(lambda: tpm.TPM_ReadCounter(cid)))  # outside: exclusivity is lost
    out.append(_outcome(lambda: tpm.TPM_ReleaseTransportSigned(key, b"\x00" * 20, t2, K)))
    for _ in range(7):  # past the dictionary-attack threshold: TPM_DEFEND_LOCK_RUNNING
        out.append(_outcome(lambda: tpm.TPM_Sign(key, digest, secret("guess"))))
    out.append(_outcome(lambda: tpm.TPM_Sign(key, digest, K)))
    return out


def _oiap_in_every_state():
    """TPM_OIAP (the engine's lean path on an everyday TPM, ``Engine._open_oiap``) beside every state in
    which the dispatcher's general path must answer it instead: before TPM_Startup, in failure mode,
    with a SHA-1 thread open, after TPM_SaveState, with an exclusive transport session, TPM_OIAP
    audited, every session slot taken, the TPM disabled, and on a profile whose bus costs are drawn."""
    def oiap(tpm: Tpm12) -> tuple:
        return _outcome(lambda: (tpm.TPM_OIAP(K).handle, len(tpm.engine.sessions), tpm.engine.exclusive,
                                 tpm.engine.sha1_context, tpm.clock.now_ms))

    profile = load("infineon-2010")
    clock = Clock(profile)
    out = []
    fresh = Tpm12(clock, nv=MemoryNVStore(), keygen=POOL, started=False)
    out.append(oiap(fresh))  # TPM_INVALID_POSTINIT
    out.append(_outcome(lambda: fresh.TPM_Startup(C.TPM_ST_STATE)))  # nothing saved: failure mode
    out.append(oiap(fresh))  # TPM_FAILEDSELFTEST
    tpm = Tpm12(clock, nv=MemoryNVStore(), keygen=POOL)
    tpm.TPM_TakeOwnership(OWNER, SRK)
    out += [oiap(tpm), oiap(tpm)]  # the everyday state
    tpm.call("TPM_SHA1Start")
    out.append(oiap(tpm))  # ends the SHA-1 thread
    out.append(_outcome(lambda: tpm.call("TPM_SHA1Update", params=struct.pack(">I", 64) + bytes(64))))
    tpm.call("TPM_SaveState")
    out.append(oiap(tpm))  # invalidates the saved state
    out.append(("saved", "saved_state" in tpm.engine.state.extra))
    t = tpm.TPM_EstablishTransport(secret("t"))
    out.append(("exclusive", tpm.engine.exclusive == t.handle))
    out.append(oiap(tpm))  # outside the exclusive session: exclusivity is lost
    tpm.call("TPM_SetOrdinalAuditStatus", params=struct.pack(">IB", C.ORD["TPM_OIAP"], 1), auth=[OWNER])
    out += [oiap(tpm), ("audit", tpm.engine.audit_digest)]  # audited: the digest extended
    tpm.call("TPM_SetOrdinalAuditStatus", params=struct.pack(">IB", C.ORD["TPM_OIAP"], 0), auth=[OWNER])
    out += [oiap(tpm) for _ in range(70)]  # up to the last slot, then TPM_RESOURCES
    for handle in list(tpm.engine.sessions):
        tpm.engine.end_session(handle)
    out.append(_outcome(lambda: tpm.call("TPM_OwnerSetDisable", params=b"\x01", auth=[OWNER])[0]))
    out.append(oiap(tpm))  # disabled
    drawn_profile = type(profile)(profile.name, {n: (c if n != "ohc" else type(c)(c.name, c.mean, c.unit, sd=0.1))
                                                 for n, c in profile.components.items()})
    drawn = Clock(drawn_profile, seed=3)
    spread = Tpm12(drawn, nv=MemoryNVStore(), keygen=POOL)
    out += [oiap(spread), ("drawn", drawn.now_ms)]  # ohc drawn: no fixed bus costs
    return out


def test_oiap_in_every_state_is_the_same_on_both_paths() -> None:
    assert _assert_same(_oiap_in_every_state) > 70


def test_the_lean_oiap_is_taken_only_on_an_everyday_tpm() -> None:
    """The lean TPM_OIAP answers an everyday TPM's values (not through the handler); a re-registered
    TPM_OIAP (a what-if variant) is dispatched to its own handler."""
    tpm = Tpm12(Clock(load("infineon-2010")), nv=MemoryNVStore(), keygen=POOL)
    handled = []
    original = registry.by_name("TPM_OIAP")
    assert tpm.engine._oiap_spec is original
    tpm.TPM_OIAP(K)
    assert tpm.engine.clock.last.name == "TPM_OIAP"

    def variant(t, req):
        handled.append(req.name)
        return original.handler(t, req)

    try:
        registry.tpm_command("TPM_OIAP")(variant)
        other = Tpm12(Clock(load("infineon-2010")), nv=MemoryNVStore(), keygen=POOL)
        assert other.engine._oiap_spec is None
        other.TPM_OIAP(K)
        tpm.TPM_OIAP(K)  # the engine made before: its table is live, the spec no longer the shipped one
        assert handled == ["TPM_OIAP", "TPM_OIAP"]
    finally:
        registry.tpm_command("TPM_OIAP")(original.handler)
    assert Tpm12(Clock(load("infineon-2010")), nv=MemoryNVStore(), keygen=POOL).engine._oiap_spec is not None


def test_a_hash_tree_chunk_is_the_same_on_both_paths() -> None:
    assert _assert_same(_hashtree_chunk) > 60


def test_an_oracle_run_is_the_same_on_both_paths() -> None:
    assert _assert_same(_oracle_run) > 40


def test_errors_sessions_and_transport_are_the_same_on_both_paths() -> None:
    assert _assert_same(_errors_and_sessions) > 40


def test_values_marshal_to_the_frames_the_framed_path_sends() -> None:
    """``bytes()`` of a command and of a reply is the frame: TPM 1.2 tags by session count, sizes."""
    cmd = Command((C.ORD["TPM_Sign"], [0x01000000], b"\x00\x00\x00\x01x", [(0x02000000, b"o" * 20, 1, b"v" * 20)]))
    frame = bytes(cmd)
    assert frame[:10] == struct.pack(">HII", C.TPM_TAG_RQU_AUTH1_COMMAND, 64, C.ORD["TPM_Sign"])
    assert frame[10:] == b"\x01\x00\x00\x00" + b"\x00\x00\x00\x01x" + b"\x02\x00\x00\x00" + b"o" * 20 + b"\x01" + b"v" * 20
    assert cmd.size() == len(frame) and cmd.canonical()
    assert (cmd.ordinal, cmd.handles, cmd.params, len(cmd.trailers)) == (C.ORD["TPM_Sign"], [0x01000000],
                                                                         b"\x00\x00\x00\x01x", 1)
    assert not Command((1, [1 << 32], b"", ())).canonical()
    assert not Command((1, [], b"", [(1, b"short", 0, b"v" * 20)])).canonical()
    reply = Reply((0, b"\x01\x00\x00\x00", b"pp", [(b"e" * 20, b"\x00", b"h" * 20)]))
    assert bytes(reply) == struct.pack(">HII", C.TPM_TAG_RSP_AUTH1_COMMAND, 57, 0) + b"\x01\x00\x00\x00pp" \
        + b"e" * 20 + b"\x00" + b"h" * 20
    assert reply.size() == 57 and reply.rc == 0 and reply.params == b"pp"
    error = Reply((C.RC["TPM_AUTHFAIL"], b"", b"", ()))
    assert bytes(error) == struct.pack(">HII", C.TPM_TAG_RSP_COMMAND, 10, C.RC["TPM_AUTHFAIL"])


def test_an_engine_sends_values_it_cannot_read_alone_the_framed_way() -> None:
    """An unknown ordinal or a handle count the ordinal does not take: the engine marshals the command
    and answers as the framed path does (one ledger record, the frame's charges)."""
    clock = Clock(load("infineon-2010"))
    engine = Engine(clock, MemoryNVStore(), POOL)
    for cmd in (Command((C.ORD["TPM_DAA_Join"], (), b"\x00" * 8, ())),
                Command((C.ORD["TPM_GetRandom"], [7], struct.pack(">I", 4), ()))):
        reply = engine.execute(cmd)
        assert type(reply) is Reply
        assert bytes(reply) == engine.execute(bytes(cmd))
        assert clock.command_counts[clock.last.name] == 2


@settings(max_examples=80, deadline=None)
@given(ordinal=st.sampled_from(sorted(C.ORD.values())), params=st.binary(max_size=90),
       n_auth=st.integers(0, 2), seed=st.integers(0, 2 ** 32 - 1))
def test_any_command_as_values_is_answered_as_its_frame(ordinal, params, n_auth, seed) -> None:
    """Arbitrary values (mostly the ordinal's own handle count, handles and sessions the TPM may not
    have, any parameter bytes) on a fresh TPM: the reply, the state and the ledger are those of the
    same command sent as its frame."""
    rng = random.Random(seed)
    spec = registry.by_ordinal(ordinal)
    count = spec.handles if spec is not None and rng.random() < 0.8 else rng.randrange(3)
    handles = [rng.choice([C.TPM_KH_SRK, C.TPM_KH_OWNER, 0x01000000, 0x02000000, rng.getrandbits(32)])
               for _ in range(count)]
    trailers = [(rng.choice([0x02000000, rng.getrandbits(32)]), rng.randbytes(20), rng.randrange(2), rng.randbytes(20))
                for _ in range(n_auth)]
    cmd = Command((ordinal, handles, params, trailers))
    answers = []
    for as_values in (True, False):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(os, "urandom", random.Random(seed).randbytes)
            clock = Clock(load("infineon-2010"))
            POOL.reset()  # the same EK
            engine = Engine(clock, MemoryNVStore(), POOL)
            reply = engine.execute(cmd if as_values else bytes(cmd))
            assert type(reply) is (Reply if as_values else bytes)
            answers.append((bytes(reply), engine.state.to_bytes(), clock.now_ms, dict(clock.by_command_component),
                            {h: repr(s) for h, s in engine.sessions.items()}, engine.auth_fail_count))
    assert answers[0] == answers[1]


# ---- the host's reply checks: one copy for every in-process caller ------------------------------

def _three_routes(tpm: Tpm12) -> list[tuple]:
    """One command down each in-process route of the client - a bare secret (``_call_with_secret``),
    one continued session (``_call_with_session``), two sessions and none (:meth:`Tpm12.call`) - and
    the parameter digests each leaves behind."""
    blob = tpm.TPM_CreateWrapKey(C.TPM_KH_SRK, SRK, key_template(C.TPM_KEY_SIGNING), K)
    key = tpm.TPM_LoadKey2(C.TPM_KH_SRK, blob, SRK)
    sealed = tpm.TPM_Seal(C.TPM_KH_SRK, SRK, b"secret data", secret("d"))
    oiap = tpm.TPM_OIAP(K)
    out = []
    for command in (lambda: tpm.TPM_Sign(key, b"\x01" * 20, K), lambda: tpm.TPM_Sign(key, b"\x02" * 20, oiap),
                    lambda: tpm.TPM_Unseal(C.TPM_KH_SRK, sealed, SRK, secret("d")), lambda: tpm.TPM_PCRRead(0)):
        out.append((command(), tpm.last_in_digest, tpm.last_out_digest))
    return out


def test_every_in_process_route_checks_its_reply_in_one_helper(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each route hands its reply to ``Tpm12._take_reply`` and leaves the framed path's digests."""
    seen: list[tuple[str, int]] = []
    take = Tpm12._take_reply

    def counting(self: Tpm12, name: str, reply: Reply, n_auth: int, *rest):
        seen.append((name, n_auth))
        return take(self, name, reply, n_auth, *rest)

    runs = []
    for fast in (False, True):
        POOL.reset()
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(client, "FAST_PATH", fast)
            mp.setattr(Tpm12, "_take_reply", counting)
            mp.setattr(os, "urandom", random.Random(7).randbytes)  # the same sealed blob on both paths
            mp.setattr(Primitives, "rsa_encrypt", _rsa_encrypt_seeded)
            primitives._THREAD.__dict__.clear()
            try:
                tpm = Tpm12(Clock(load("infineon-2010")), nv=MemoryNVStore(), keygen=POOL)
                tpm.TPM_TakeOwnership(OWNER, SRK)
                del seen[:]
                runs.append(_three_routes(tpm))
            finally:
                primitives._THREAD.__dict__.clear()
    assert runs[0] == runs[1]  # the same answers and parameter digests on both paths
    # and on the fast path every one of them through the helper (the setup's commands went before `del seen[:]`)
    assert [s for s in seen if s[0] in ("TPM_Sign", "TPM_Unseal", "TPM_PCRRead")] == [
        ("TPM_Sign", 1), ("TPM_Sign", 1), ("TPM_Unseal", 2), ("TPM_PCRRead", 0)]


def test_a_reply_short_of_its_authorizations_is_refused_on_every_route(tpm: Tpm12,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A reply whose authorizations went missing (an engine answering values with no trailers): each
    in-process route refuses it alike, naming the count, instead of reading past the end."""
    blob = tpm.TPM_CreateWrapKey(C.TPM_KH_SRK, SRK, key_template(C.TPM_KEY_SIGNING), K)
    key = tpm.TPM_LoadKey2(C.TPM_KH_SRK, blob, SRK)
    sealed = tpm.TPM_Seal(C.TPM_KH_SRK, SRK, b"secret data", secret("d"))
    execute = Engine.execute

    def stripped(self: Engine, cmd):
        reply = execute(self, cmd)
        return Reply((*reply[:3], ())) if type(cmd) is Command and cmd[0] in (C.ORD["TPM_Sign"], C.ORD["TPM_Unseal"]) else reply

    monkeypatch.setattr(Engine, "execute", stripped)
    for command, n in ((lambda: tpm.TPM_Sign(key, b"\x01" * 20, K), 1),
                       (lambda: tpm.TPM_Sign(key, b"\x01" * 20, tpm.TPM_OIAP(K)), 1),
                       (lambda: tpm.TPM_Unseal(C.TPM_KH_SRK, sealed, SRK, secret("d")), 2)):
        with pytest.raises(TpmError, match=f"response has 0 authorization\\(s\\), not {n}") as e:
            command()
        assert e.value.code == "TPM_BAD_PARAM_SIZE"
