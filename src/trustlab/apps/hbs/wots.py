"""WOTS+ (RFC 8391 section 3.1): the one-time signature under every XMSS leaf.

Secret keys are derived as in the current XMSS reference implementation and
NIST SP 800-208: chain ``i`` starts at ``PRF_keygen(SK_SEED, SEED || ADRS)``
with the chain address ``i`` (hash and keyAndMask words zero). The card holds
only SK_SEED, so a one-time key costs ``l`` PRF_keygen calls to recreate, and
any chain's start can be derived on its own (the card derives each APDU
stage's chains when it needs them). Botan's signing vector checks this.
"""

from __future__ import annotations

from trustlab.apps.hbs.address import Address
from trustlab.apps.hbs.hashes import Hasher
from trustlab.apps.hbs.params import XMSSParams


def base_w(x: bytes, w: int, out_len: int) -> list[int]:
    """RFC 8391 Algorithm 1."""
    log_w = w.bit_length() - 1
    out, total, bits, i = [], 0, 0, 0
    for _ in range(out_len):
        if bits == 0:
            total = x[i]
            i += 1
            bits = 8
        bits -= log_w
        out.append((total >> bits) & (w - 1))
    return out


def message_digits(p: XMSSParams, m: bytes) -> list[int]:
    """The l base-w digits signed for an n-byte message: message then checksum."""
    digits = base_w(m, p.w, p.len1)
    csum = sum(p.w - 1 - x for x in digits)
    csum <<= 8 - ((p.len2 * p.log_w) % 8)
    nbytes = (p.len2 * p.log_w + 7) // 8
    return digits + base_w(csum.to_bytes(nbytes, "big"), p.w, p.len2)


def chain(hs: Hasher, x: bytes, start: int, steps: int, seed: bytes, adrs: Address) -> bytes:
    """RFC 8391 Algorithm 2, iteratively."""
    return hs.chain(x, start, steps, seed, adrs)


def chain_start(hs: Hasher, sk_seed: bytes, seed: bytes, adrs: Address, i: int) -> bytes:
    """Secret start of chain ``i`` of the one-time key at ``adrs`` (type OTS, OTS address set)."""
    a = adrs.copy()
    a.set_chain(i)
    a.set_hash(0)
    a.key_and_mask = 0
    return hs.prf_keygen(sk_seed, seed + a.to_bytes())


def secret_key(hs: Hasher, p: XMSSParams, sk_seed: bytes, seed: bytes, adrs: Address) -> list[bytes]:
    """The l chain starts of the one-time key at ``adrs``."""
    return [chain_start(hs, sk_seed, seed, adrs, i) for i in range(p.wots_len)]


def public_key(hs: Hasher, p: XMSSParams, sk: list[bytes], seed: bytes, adrs: Address) -> list[bytes]:
    """WOTS_genPK (Algorithm 4)."""
    out = []
    for i, x in enumerate(sk):
        adrs.set_chain(i)
        out.append(chain(hs, x, 0, p.w - 1, seed, adrs))
    return out


def sign(hs: Hasher, p: XMSSParams, m: bytes, sk: list[bytes], seed: bytes, adrs: Address,
         chains: range | None = None) -> list[bytes]:
    """WOTS_sign (Algorithm 5); ``chains`` limits the work to a slice (the card's APDU stages)."""
    digits = message_digits(p, m)
    out = []
    for i in chains if chains is not None else range(p.wots_len):
        adrs.set_chain(i)
        out.append(chain(hs, sk[i], 0, digits[i], seed, adrs))
    return out


def sign_steps(p: XMSSParams, m: bytes) -> int:
    """Chain steps WOTS_sign spends on ``m`` (the message-dependent part of its cost)."""
    return sum(message_digits(p, m))


def pk_from_sig(hs: Hasher, p: XMSSParams, m: bytes, sig: list[bytes], seed: bytes, adrs: Address) -> list[bytes]:
    """WOTS_pkFromSig (Algorithm 6)."""
    digits = message_digits(p, m)
    out = []
    for i, s in enumerate(sig):
        adrs.set_chain(i)
        out.append(chain(hs, s, digits[i], p.w - 1 - digits[i], seed, adrs))
    return out
