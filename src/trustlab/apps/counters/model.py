"""The paper's analytic cost model of the two virtual-counter schemes (Sec. III-B).

Notation of the paper, filled from a profile (all in ms):

====  ==========================================  =======================
Tth   TPM hashes one block                        64 x ``sha1_byte``
Tts   TPM creates a signature                     ``rsa_sign``
Tti   TPM increments a physical counter           ``counter_inc``
Ttr   TPM reads a physical counter                ``counter_read``
Ttt   build a logged transport session            ``transport``
Thv   host verifies a signature                   ``host_verify``
Thh   host hashes one block                       ``host_hash``
====  ==========================================  =======================

Formulas (paper, Sec. III-B1 and III-B2):

* log-based INCREMENT: ``Tth + Tts + Tti + Ttt``
* log-based READ: ``|Ut| * Thv + Ttr + Ttt + Tts``
* hash-tree INCREMENT: ``2 log2(nc) * Tth + Tts``
* hash-tree READ: ``log2(nc) * Tth + Tts``

The paper writes one ``Tth`` where a real TPM 1.2 hashes a handful of blocks
(transport-log entries, authorisation HMACs, the signed structure), and counts
``|Ut|`` as "the certificates in the log" (its worked example counts the
current-time certificate in ``|Ut|``). :class:`Accounting` makes those counts
explicit coefficients: the paper's literal formula is ``Accounting.paper()``;
the schemes declare the exact counts of their TPM 1.2 command sequence, and with
those the simulation equals the model to the last bit on a deterministic
profile (``tests/counters/test_model_vs_sim.py``). The structure of every
formula - which TPM operation appears how often - is the paper's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from trustlab.timing.profile import Profile

SHA1_BLOCK = 64


@dataclass(frozen=True)
class Terms:
    """The paper's per-operation times (ms) for one chip."""

    Tth: float
    Tts: float
    Tti: float
    Ttr: float
    Ttt: float
    Thv: float
    Thh: float

    @classmethod
    def from_profile(cls, profile: Profile) -> "Terms":
        """Means of the profile's components (the model is about means)."""
        return cls(
            Tth=SHA1_BLOCK * profile.mean("sha1_byte"),
            Tts=profile.mean("rsa_sign"),
            Tti=profile.mean("counter_inc"),
            Ttr=profile.mean("counter_read"),
            Ttt=profile.mean("transport"),
            Thv=profile.mean("host_verify"),
            Thh=profile.mean("host_hash"),
        )


@dataclass(frozen=True)
class Accounting:
    """How many of each unit one operation really performs beyond the paper's formula.

    ``*_hash_blocks``: TPM hash blocks in place of the formula's single
    ``Tth`` (log INCREMENT) or in addition to it (log READ; tree operations,
    whose per-level hashes are counted by the formula itself): authorisation
    HMACs, transport-log extends, the signed structure. ``*_nosign``: the same
    for a tree operation whose signature is skipped (batch attestation).
    ``read_extra_certs``: signatures the verifier checks on a READ besides the
    ``|Ut|`` certificates of other counters (the current-clock certificate);
    ``own_cert_verifies``: the counter's own last increment certificate, when
    it has one. ``inc_verifies``: signatures checked per INCREMENT (tree: per
    signed operation).
    """

    log_inc_hash_blocks: int = 1
    log_read_hash_blocks: int = 0
    read_extra_certs: int = 0
    own_cert_verifies: int = 0
    inc_verifies: int = 0
    tree_inc_hash_blocks: int = 0
    tree_read_hash_blocks: int = 0
    tree_inc_hash_blocks_nosign: int = 0
    tree_read_hash_blocks_nosign: int = 0

    @classmethod
    def paper(cls) -> "Accounting":
        """The formulas exactly as printed in the paper."""
        return cls()


def tree_depth(counters: int) -> int:
    """log2(nc) rounded up: the levels between a leaf and the root."""
    if counters < 1:
        raise ValueError(f"need at least one counter, got {counters}")
    return max(1, math.ceil(math.log2(counters)))


def log_increment_ms(t: Terms, acc: Accounting = Accounting()) -> float:
    """Log-based INCREMENT: Tth + Tts + Tti + Ttt (Sec. III-B1)."""
    return acc.log_inc_hash_blocks * t.Tth + t.Tts + t.Tti + t.Ttt + acc.inc_verifies * t.Thv


def log_read_ms(t: Terms, ut: int, acc: Accounting = Accounting(), own_cert: bool = False) -> float:
    """Log-based READ: |Ut| Thv + Ttr + Ttt + Tts (Sec. III-B1)."""
    certs = ut + acc.read_extra_certs + (acc.own_cert_verifies if own_cert else 0)
    return certs * t.Thv + t.Ttr + t.Ttt + t.Tts + acc.log_read_hash_blocks * t.Tth


def tree_increment_ms(t: Terms, depth: int, acc: Accounting = Accounting(), signed: bool = True) -> float:
    """Hash-tree INCREMENT: 2 log2(nc) Tth + Tts (Sec. III-B2); ``depth`` = log2(nc)."""
    if signed:
        return (2 * depth + acc.tree_inc_hash_blocks) * t.Tth + t.Tts + acc.inc_verifies * t.Thv
    return (2 * depth + acc.tree_inc_hash_blocks_nosign) * t.Tth


def tree_read_ms(t: Terms, depth: int, acc: Accounting = Accounting(), signed: bool = True) -> float:
    """Hash-tree READ: log2(nc) Tth + Tts (Sec. III-B2); ``depth`` = log2(nc)."""
    if signed:
        return (depth + acc.tree_read_hash_blocks) * t.Tth + t.Tts + acc.inc_verifies * t.Thv
    return (depth + acc.tree_read_hash_blocks_nosign) * t.Tth


def log_attestation_bytes(ut: int, sh: int = 20, ss: int = 256) -> int:
    """Size of a log-based READ attestation: |Ut| (Sh + Ss)."""
    return ut * (sh + ss)


def tree_attestation_bytes(counters: int, sc: int = 8, sh: int = 20, ss: int = 256) -> int:
    """Size of a hash-tree attestation: Sc + log2(nc) Sh + Ss."""
    return sc + tree_depth(counters) * sh + ss
