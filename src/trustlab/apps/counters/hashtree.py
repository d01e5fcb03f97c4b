"""Hash-tree virtual counters (paper, Sec. III-B2), prover and verifier.

The counters are leaves of a Merkle tree kept in the host's untrusted memory
(:class:`~trustlab.apps.counters.tree.SparseTree`); the root lives in the TPM.
Every READ or INCREMENT sends the TPM the counter's value and sibling path; the
TPM checks them against its root, applies the operation, and signs
(epoch, nonce, index, old value, new value, root) with the AIK. The verifier gets the
value, the path and the signature, recomputes the root from the path and checks
the signature - so a host that rolls back or forks its stored nodes is caught
by the TPM (its root no longer matches) and a forged answer by the verifier.

The TPM command is the engine's what-if ``TPM_ExecuteHashTree``
(:mod:`trustlab.devices.tpm12.commands.hashtree`), which executes the counter
operation inside the TPM (only ``+delta >= 1``; a generic UPDATE that would let
a hostile host roll a counter back through the TPM is refused). It also gives
the *arithmetic* counters the wallet uses for balances (:meth:`TreeProver.add`).
Every certificate carries the tree's *epoch*: the verifier learns it when the
tree is initialised and refuses answers from a re-initialised (reset) tree.
"""

from __future__ import annotations

import hashlib
import struct
from array import array
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa, utils

from trustlab.apps.counters.base import Answer, VerificationError, flat_at
from trustlab.apps.counters.device import ProvisionedTpm
from trustlab.apps.counters.tree import SparseTree, root_from_path
from trustlab.devices.tpm12 import merkle
from trustlab.devices.tpm12.commands.hashtree import MODE_INCREMENT, MODE_INIT, MODE_READ
from trustlab.devices.tpm12.errors import TpmError
from trustlab.timing.clock import Clock

READ, INC = "read", "increment"
_U64 = struct.Struct(">Q")  # a counter's leaf data (merkle.encode_value), precompiled


def _leaf_hash(data: bytes) -> bytes:
    return hashlib.sha1(b"\x00" + data).digest()


def _node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha1(b"\x01" + left + right).digest()


def new_tree(depth: int) -> SparseTree:
    """An all-zero counter tree with the engine's Merkle conventions."""
    return SparseTree(depth, _leaf_hash, _node_hash, merkle.encode_value(0), inline=(hashlib.sha1, b"\x01"))


@dataclass(frozen=True, init=False)
class TreeCert:
    """A hash-tree execution certificate."""

    epoch: int
    index: int
    old: int
    new: int
    siblings: tuple[bytes, ...]
    root: bytes
    nonce: bytes
    signature: bytes

    def __init__(self, epoch: int, index: int, old: int, new: int, siblings: tuple[bytes, ...], root: bytes,
                 nonce: bytes, signature: bytes) -> None:
        # What the generated __init__ does, without a frozen dataclass's object.__setattr__ per field
        # (a third of the cost; one certificate per operation). Still frozen, compared and hashed
        # by its fields; tests/counters check these parameters are the fields.
        d = self.__dict__
        d["epoch"], d["index"], d["old"], d["new"] = epoch, index, old, new
        d["siblings"], d["root"], d["nonce"], d["signature"] = siblings, root, nonce, signature

    @property
    def size(self) -> int:
        """The paper's Sc + log2(nc) Sh + Ss (plus the old value, epoch and root)."""
        return 8 + 8 + 4 + 20 * len(self.siblings) + 20 + len(self.nonce) + len(self.signature)


class TreeProver:
    """The buyer's device: the host-held tree plus the TPM that holds its root."""

    scheme = "hashtree"

    def __init__(self, dev: ProvisionedTpm, counters: int, depth: int | None = None,
                 owner_auth: bytes | None = None, attest_every: int = 1) -> None:
        self.dev = dev
        self.counters = counters
        self.depth = depth if depth is not None else max(1, (counters - 1).bit_length())
        if counters > 1 << self.depth:
            raise ValueError(f"{counters} counters do not fit a tree of depth {self.depth}")
        self.tree = new_tree(self.depth)
        self.attest_every = attest_every
        self.ops = 0
        self.updates = 0
        # update count at each counter's last increment (0: never): a dict while few counters were
        # touched, then a flat array (4 MiB at 2^20 counters, where the dict grew to tens of MiB)
        self.last: array | dict[int, int] = {}
        owner = owner_auth or dev.owner_auth
        clock = dev.tpm.clock
        before = clock.now_ms
        root, self.epoch, _ = dev.tpm.TPM_ExecuteHashTree(dev.aik, MODE_INIT, 0, self.depth, [], bytes(20), owner)
        if root != self.tree.root:
            raise TpmError("TPM_BAD_HASHTREE", "the TPM's empty tree differs from the host's")
        if clock.now_ms != before:  # set-up is not part of any measured operation
            clock.reset()

    def _aik_session(self):
        """One continued OIAP session for the AIK, reopened only after it closes (as a TSS does)."""
        s = getattr(self, "_aik_s", None)
        if s is None or not s.open:
            s = self._aik_s = self.dev.tpm.TPM_OIAP(self.dev.aik_auth)
        return s

    def value(self, counter: int) -> int:
        return _U64.unpack(self.tree.leaf(counter))[0]

    def _read(self, counter: int, nonce: bytes) -> TreeCert:
        if not 0 <= counter < self.counters:
            raise VerificationError("no-such-counter", f"counter {counter} outside 0..{self.counters - 1}")
        self.ops += 1
        sign = (self.ops - 1) % self.attest_every == 0
        old = self.value(counter)
        path = self.tree.siblings(counter)
        d = self.dev
        root, epoch, sig = d.tpm.TPM_ExecuteHashTree(d.aik, MODE_READ, counter, old, path, nonce, self._aik_session(),
                                                     delta=0, sign=sign)
        return TreeCert(epoch, counter, old, old, tuple(path), root, nonce, sig)

    def _update(self, counter: int, nonce: bytes, delta: int) -> TreeCert:
        """INCREMENT by ``delta``: the siblings read once (packed, the wire form); the new path stored
        once the TPM agrees (the one it just hashed from the same inputs, see ``SparseTree.commit``)."""
        if not 0 <= counter < self.counters:
            raise VerificationError("no-such-counter", f"counter {counter} outside 0..{self.counters - 1}")
        ops = self.ops = self.ops + 1
        sign = (ops - 1) % self.attest_every == 0
        tree = self.tree
        old = _U64.unpack(tree.leaf(counter))[0]
        new = old + delta
        pending = tree.prepare(counter, _U64.pack(new))
        d = self.dev
        root, epoch, sig = d.tpm.TPM_ExecuteHashTree(d.aik, MODE_INCREMENT, counter, old, pending.packed, nonce,
                                                     self._aik_session(), delta=delta, sign=sign)
        if tree.commit(pending) != root:
            raise TpmError("TPM_BAD_HASHTREE", "host tree and TPM root diverged")
        updates = self.updates = self.updates + 1
        last = self.last
        if type(last) is array and updates <= 0xFFFFFFFF:  # the steady state: a flat array
            last[counter] = updates
        else:
            self._note_update(counter, updates)
        return TreeCert(epoch, counter, old, new, pending.siblings, root, nonce, sig)

    def _note_update(self, counter: int, updates: int) -> None:
        """Record ``counter``'s last update while ``last`` is a dict (or past 32 bits); go flat when it pays."""
        last = self.last
        if isinstance(last, array) and updates > 0xFFFFFFFF:  # past 32 bits: back to a dict
            last = self.last = {c: u for c, u in enumerate(last) if u}
        last[counter] = updates
        if isinstance(last, dict) and len(last) >= flat_at() and self.counters <= 1 << 24 \
                and updates <= 0xFFFFFFFF:
            dense = array("I", [0]) * self.counters  # 4 bytes a counter
            for c, u in last.items():
                dense[c] = u
            self.last = dense

    def read(self, counter: int, nonce: bytes) -> Answer:
        cert = self._read(counter, nonce)
        return Answer(counter, cert.new, cert, nonce)

    def increment(self, counter: int, nonce: bytes) -> Answer:
        cert = self._update(counter, nonce, 1)
        return Answer(counter, cert.new, cert, nonce)

    def add(self, counter: int, delta: int, nonce: bytes) -> Answer:
        """Arithmetic counter: raise ``counter`` by ``delta`` (paper Sec. III-B3)."""
        if delta < 1:
            raise VerificationError("not-monotonic", f"delta {delta}: counters only go up")
        cert = self._update(counter, nonce, delta)
        return Answer(counter, cert.new, cert, nonce)

    def updates_since(self, counter: int) -> int:
        last = self.last
        return self.updates - (last[counter] if isinstance(last, array) else last.get(counter, 0))


class TreeVerifier:
    """The merchant's side: the AIK's public key, the tree depth and epoch, nothing else."""

    def __init__(self, aik_public: rsa.RSAPublicKey, depth: int, epoch: int, clock: Clock | None = None) -> None:
        self.aik_public = aik_public
        self.depth = depth
        self.epoch = epoch
        self.clock = clock

    def _check(self, answer: Answer, counter: int, nonce: bytes) -> TreeCert:
        cert = answer.evidence
        if not isinstance(cert, TreeCert):
            raise VerificationError("bad-evidence", "not a hash-tree certificate")
        if cert.epoch != self.epoch:
            raise VerificationError("reinitialised", f"certificate from tree epoch {cert.epoch}, expected "
                                    f"{self.epoch} (the tree was reset)")
        if cert.index != counter:
            raise VerificationError("wrong-counter", f"certificate is for counter {cert.index}, not {counter}")
        if cert.nonce != nonce:
            raise VerificationError("bad-nonce", "certificate answers another challenge (replay?)")
        if answer.value != cert.new:
            raise VerificationError("value-mismatch", f"claimed {answer.value}, certificate says {cert.new}")
        if not (0 <= cert.old <= merkle.MAX_VALUE and 0 <= cert.new <= merkle.MAX_VALUE):
            raise VerificationError("bad-value", f"counter values must be 64-bit unsigned, got {cert.old}, {cert.new}")
        if len(cert.siblings) != self.depth:
            raise VerificationError("bad-path", f"path of {len(cert.siblings)} siblings, tree depth {self.depth}")
        if not cert.signature:
            raise VerificationError("unsigned", "the TPM did not attest this operation")
        leaf = merkle.counter_leaf(cert.new)
        if root_from_path(counter, leaf, list(cert.siblings), _node_hash) != cert.root:
            raise VerificationError("bad-path", f"value {cert.new} and path do not give the attested root")
        if self.clock is not None:
            self.clock.charge("host_verify")
        info = merkle.hashtree_info(cert.epoch, nonce, counter, cert.old, cert.new, cert.root)
        try:
            self.aik_public.verify(cert.signature, hashlib.sha1(info).digest(), padding.PKCS1v15(),
                                   utils.Prehashed(hashes.SHA1()))
        except InvalidSignature:
            raise VerificationError("bad-signature", "AIK signature over the root does not verify") from None
        return cert

    def check_read(self, answer: Answer, counter: int, nonce: bytes) -> int:
        cert = self._check(answer, counter, nonce)
        if cert.old != cert.new:
            raise VerificationError("wrong-kind", "an update certificate does not answer a READ")
        return cert.new

    def check_increment(self, answer: Answer, counter: int, nonce: bytes, after: int | None = None,
                        delta: int | None = 1) -> int:
        cert = self._check(answer, counter, nonce)
        if delta is not None and cert.new != cert.old + delta:
            raise VerificationError("not-monotonic", f"{cert.old} -> {cert.new} is not +{delta}")
        if after is not None and cert.new <= after:
            raise VerificationError("not-monotonic", f"value {cert.new} is not past {after}")
        if after is not None and cert.old != after:
            raise VerificationError("stale-base", f"incremented from {cert.old}, last seen {after}")
        return cert.new
