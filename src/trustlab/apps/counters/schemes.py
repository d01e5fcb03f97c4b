"""Assemble a ready-to-run scheme: provisioned TPM, prover, verifier, and its model.

The model of each operation is the paper's formula (:mod:`.model`) with the
profile's per-operation means. One term is structural rather than a chip
figure: how many SHA-1 blocks the TPM hashes in an operation besides the tree
levels (authorisation HMACs, transport-log extends, the signed structure).
That count is a property of the TPM 1.2 command sequence, the same on every
chip, so it is counted once per process by running the operation on a *probe*
TPM whose profile charges 1 ms per hashed block and nothing else
(:func:`hash_blocks`); the per-level hashes of the tree formulas are not
probed but taken from the paper's formula; the remainder grows only with the
input-parameter digest over the sibling path (20 bytes per level), which a
test checks.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field

from trustlab.apps.counters import model as M
from trustlab.apps.counters import wire
from trustlab.apps.counters.base import Prover, Verifier
from trustlab.apps.counters.device import provision
from trustlab.apps.counters.hashtree import TreeProver, TreeVerifier
from trustlab.apps.counters.logbased import LogProver, LogVerifier
from trustlab.apps.workloads import INCREMENT, READ
from trustlab.errors import TrustlabError
from trustlab.timing.clock import Clock
from trustlab.timing.profile import Component, Profile, Provenance

SCHEMES = ("log", "hashtree", "log-tpm2")
TPM12_MODES = wire.MODES
NEEDED = ("sha1_byte", "rsa_sign", "counter_inc", "counter_read", "transport", "host_verify")


def _probe_profile() -> Profile:
    comps = {n: Component(n, 0.0, unit="byte" if n in ("ohir", "ohor") else "call")
             for n in ("ohc", "ohir", "ohor", "rsa_dec", "rsa_enc", "rsa_sign", "counter_inc",
                       "counter_read", "transport", "host_verify", "host_hash")}
    comps["sha1_byte"] = Component("sha1_byte", 1.0 / 64.0, unit="byte")
    return Profile("probe-hash-blocks", comps, provenance=Provenance(note="1 ms per SHA-1 block, nothing else"))


@functools.cache
def _probe_device(physical_counter: bool):
    """One provisioned probe TPM per process (key generation is the slow part)."""
    return provision(Clock(_probe_profile()), physical_counter=physical_counter)


@functools.cache
def hash_blocks(scheme: str, depth: int = 1) -> dict[str, int]:
    """TPM SHA-1 blocks one INCREMENT / READ hashes, beyond the tree levels' own hashes."""
    if scheme == "log":
        dev = _probe_device(True)
        clock = dev.tpm.clock
        prover = LogProver(dev, 2)
        out = {}
        for op, fn in ((INCREMENT, prover.increment), (READ, prover.read)):
            before = clock.now_ms
            fn(0, b"\x01" * 20)
            out[op] = round(clock.now_ms - before)
        return out
    dev = _probe_device(False)
    clock = dev.tpm.clock
    prover = TreeProver(dev, 1 << depth, depth=depth)  # INIT: a fresh tree of this depth
    out = {}
    for op, fn, levels in ((INCREMENT, prover.increment, 2 * depth), (READ, prover.read, depth)):
        before = clock.now_ms
        fn(0, b"\x01" * 20)
        out[op] = round(clock.now_ms - before) - levels
    # batch mode: operations whose signature is skipped
    prover = TreeProver(dev, 1 << depth, depth=depth, attest_every=1 << 30)
    prover.read(0, b"\x01" * 20)  # the first operation of a batch is signed
    for op, fn, levels in ((INCREMENT, prover.increment, 2 * depth), (READ, prover.read, depth)):
        before = clock.now_ms
        fn(0, b"\x01" * 20)
        out[op + "-nosign"] = round(clock.now_ms - before) - levels
    return out


_LOG_SCHEMES = frozenset({"log", "log-tpm2"})  # the schemes without the tree formulas


@dataclass
class BuiltScheme:
    """What the runner drives."""

    name: str
    profile: Profile
    counters: int
    clock: Clock
    prover: Prover
    verifier: Verifier
    terms: M.Terms
    accounting: M.Accounting
    depth: int = 0
    extra: dict = field(default_factory=dict)
    # a tree operation's formulas depend only on (op, signed, paper?): evaluated once each
    _tree_models: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def updates_since(self, counter: int) -> int:
        return self.prover.updates_since(counter)

    def close(self) -> None:
        """Release the device (the TPM 2.0 scheme owns a swtpm process)."""
        close = getattr(self.prover, "close", None)
        if close is not None:
            close()
        wired = self.extra.pop("close_tpm", None)
        if wired is not None:
            wired()

    def model_ms(self, op: str, counter: int, ut: int) -> float | None:
        """The paper's formula for this request (``ut`` = |Ut| before it)."""
        if self.name not in _LOG_SCHEMES:  # a tree: its formula per (op, signed next?), once computed
            p = self.prover
            signed = p.ops % p.attest_every == 0  # (is the next operation signed? the runner asks every request)
            ms = self._tree_models.get((op, signed, False))
            return ms if ms is not None else self._tree_model(op, signed, False)
        if self.name == "log-tpm2":
            return None  # the paper's model is of TPM 1.2 operations; the proxy times TPM 2.0 commands
        t, acc = self.terms, self.accounting
        if op == INCREMENT:
            return M.log_increment_ms(t, acc)
        incremented = counter in self.prover.last
        return M.log_read_ms(t, ut, acc, own_cert=incremented)

    def paper_model_ms(self, op: str, counter: int, ut: int) -> float | None:
        """The formula exactly as printed (one Tth, |Ut| verifications, no host terms)."""
        if self.name not in _LOG_SCHEMES:
            ms = self._tree_models.get((op, True, True))
            return ms if ms is not None else self._tree_model(op, True, True)
        if self.name == "log-tpm2":
            return None
        t, paper = self.terms, M.Accounting.paper()
        return M.log_increment_ms(t, paper) if op == INCREMENT else M.log_read_ms(t, ut, paper)

    def _tree_model(self, op: str, signed: bool, paper: bool) -> float:
        """The tree formula for ``op`` (the paper's literal one with ``paper``), computed once per key."""
        key = (op, signed, paper)
        ms = self._tree_models.get(key)
        if ms is None:
            acc = M.Accounting.paper() if paper else self.accounting
            formula = M.tree_increment_ms if op == INCREMENT else M.tree_read_ms
            ms = self._tree_models[key] = formula(self.terms, self.depth, acc, signed=signed)
        return ms


def check_profile(scheme: str, profile: Profile) -> None:
    """Refuse a profile that cannot time ``scheme`` (what :func:`build` refuses first), before any TPM is built."""
    if scheme == "log-tpm2":
        if profile.family != "tpm2":
            raise TrustlabError(f"scheme log-tpm2 needs a TPM 2.0 profile; {profile.name!r} is {profile.family!r}")
        return
    Clock(profile).require(*NEEDED)


def build(scheme: str, profile: Profile, counters: int, *, seed: int = 0, attest_every: int = 1,
          tpm12: str = "inproc") -> BuiltScheme:
    """A fresh TPM provisioned for ``scheme`` with ``counters`` virtual counters.

    ``tpm12``: where the TPM 1.2 of the log and hash-tree schemes runs
    (:data:`.wire.MODES`: in process, or over the wire).
    """
    if scheme not in SCHEMES:
        raise TrustlabError(f"unknown scheme {scheme!r} (known: {', '.join(SCHEMES)})")
    if counters < 1:
        raise TrustlabError(f"need at least one counter, got {counters}")
    if scheme == "log-tpm2":
        from trustlab.apps.counters.tpm2_log import Tpm2LogProver

        check_profile(scheme, profile)
        if tpm12 != "inproc":
            raise TrustlabError(f"--tpm12 {tpm12}: applies to the TPM 1.2 schemes (log, hashtree), not log-tpm2")
        prover2 = Tpm2LogProver(profile, counters)
        return BuiltScheme("log-tpm2", profile, counters, prover2.clock, prover2, prover2.verifier(),
                           M.Terms(0, 0, 0, 0, 0, 0, 0), M.Accounting())
    check_profile(scheme, profile)
    clock = Clock(profile, seed=seed)
    terms = M.Terms.from_profile(profile)
    if tpm12 == "libtpms":
        return _lockstep(scheme, profile, counters, clock, terms, seed)
    wired = wire.open_tpm12(tpm12, profile, clock, seed=seed) if tpm12 != "inproc" else None
    try:
        built = _build_tpm12(scheme, profile, counters, clock, terms, attest_every,
                             wired.tpm if wired is not None else None)
    except BaseException:
        if wired is not None:
            wired.close()
        raise
    if wired is not None:
        built.extra.update(tpm12=tpm12, tpm12_where=wired.where, close_tpm=wired.close)
    return built


def _lockstep(scheme: str, profile: Profile, counters: int, clock: Clock, terms: M.Terms, seed: int) -> BuiltScheme:
    """libtpms does the work, an in-process twin engine times it (see :class:`.wire.Lockstep`)."""
    if scheme != "log":
        raise TrustlabError(f"--tpm12 libtpms: the {scheme} scheme needs the what-if TPM_ExecuteHashTree, which "
                            "libtpms does not have; use --scheme log")
    twin = _build_tpm12(scheme, profile, counters, clock, terms, 1, None)
    scratch = Clock(profile, seed=seed)  # the real TPM's host side: nothing it charges is kept
    wired = wire.open_tpm12("libtpms", profile, scratch, seed=seed)
    try:
        real = _build_tpm12(scheme, profile, counters, scratch, terms, 1, wired.tpm)
    except BaseException:
        wired.close()
        raise
    real.verifier.clock = clock  # the verifier's host work is charged to the run's clock
    return BuiltScheme(scheme, profile, counters, clock, wire.Lockstep(real.prover, twin.prover), real.verifier,
                       terms, twin.accounting, extra={"tpm12": "libtpms", "tpm12_where": wired.where,
                                                      "close_tpm": wired.close})


def _build_tpm12(scheme: str, profile: Profile, counters: int, clock: Clock, terms: M.Terms, attest_every: int,
                 tpm) -> BuiltScheme:
    if scheme == "log":
        dev = provision(clock, tpm=tpm)
        prover = LogProver(dev, counters)
        verifier = LogVerifier(dev.aik_public, dev.counter_id, dev.counter_start, clock)
        blocks = hash_blocks("log")
        acc = M.Accounting(log_inc_hash_blocks=blocks[INCREMENT], log_read_hash_blocks=blocks[READ],
                           read_extra_certs=1, own_cert_verifies=1, inc_verifies=1)
        return BuiltScheme("log", profile, counters, clock, prover, verifier, terms, acc)
    depth = max(1, (counters - 1).bit_length())
    dev = provision(clock, physical_counter=False, tpm=tpm)
    prover = TreeProver(dev, counters, depth=depth, attest_every=attest_every)
    verifier = TreeVerifier(dev.aik_public, depth, prover.epoch, clock)
    blocks = hash_blocks("hashtree", depth)
    acc = M.Accounting(tree_inc_hash_blocks=blocks[INCREMENT], tree_read_hash_blocks=blocks[READ], inc_verifies=1,
                       tree_inc_hash_blocks_nosign=blocks.get(INCREMENT + "-nosign", 0),
                       tree_read_hash_blocks_nosign=blocks.get(READ + "-nosign", 0))
    return BuiltScheme("hashtree", profile, counters, clock, prover, verifier, terms, acc, depth=depth)


def nonce() -> bytes:
    return os.urandom(20)
