"""Instrumented card primitives: block cipher, XOR, copy, shift, GF(2^128) multiply.

Public API (stable)::

    CardCrypto(clock=None, cipher="aes128", mask=False, key_clear=False, dest="ram")
    kc = crypto.load_key(key)                     key into the co-processor (not charged)
    crypto.encrypt(kc, block, dest="ram") / crypto.decrypt(kc, block, dest="ram")
    crypto.xor(a, b, dest="ram")   crypto.copy(a, dest="ram")
    crypto.shift_left(a, bits=1, dest="ram")  crypto.shift_right(a, bits=1, dest="ram")
    crypto.gf_multiply(x, y)       crypto.inc(counter_block)
    crypto.shift_left(a, bits, variable=True)     the variable-count, variable-length shift routine
    crypto.start_message()                the co-processor's key register is empty again (next E loads)
    with crypto.phase("init"): ...        ops counted as "<op>_init"
    crypto.ops                            Counter of what ran: E, D, load, xor, copy, shift, vshift, gfmul, inc
    crypto.block_size, CIPHERS, component_names(cipher, ...)

``dest`` on a call overrides the instance's default destination (``"ram"``,
as in the paper, whose MULTOS code wrote every output to RAM because an NVM
block encrypt costs 6.4 ms against 3.3 ms).

Why this layer: on a smart card the CPU is slow and the crypto co-processor
fast, so an AE mode's cost is a count of block operations, each weighed by the
platform's measured price (Mayes 2017, Tables II, V, VI, VIII, XI). Every AE
mode in ``trustlab.apps.ae`` is written only in these calls; the op counts of
Table I therefore come from running the modes, and the clock is charged as
they run. With ``clock=None`` the ops are only counted.

Charged components (profile family ``card``):

    block_encrypt.<cipher>[+mask[+keyclear]][.nvm]   one block encryption/decryption inside a mode's loop
    key_load.<cipher>  (optional) loading a key into the co-processor: charged when a block
                     operation uses a key other than the one loaded (once per key per message);
                     uncharged if the profile lacks it (MULTOS: the API call takes the key each time)
    block_xor[.nvm]  block_copy[.nvm]  block_shift[.nvm]   one 16-byte block operation
    block_shift_var  (optional) the variable-count, variable-length BlockShiftLeft routine (OCB3's
                     Offset_0 shift); falls back to block_shift when the profile lacks it
    gf_multiply      one GF(2^128) block multiplication (GCM)
    counter_inc      (optional) one CTR counter increment; uncharged if the profile lacks it

``.nvm`` means the result is written to NVM instead of RAM. The cipher names
are the paper's: ``aes128``, ``des``, ``tdes`` (64-bit blocks), and its 16-byte
substitutes for chips without AES: ``tdes(m1)||m2`` (TDES on the first half,
second half passed through), ``des(m1)||m2``, ``tdes(m1)||tdes(m2)``,
``des(m1)||des(m2)``. Real ciphers from ``cryptography`` (OpenSSL). The
substitutes are for performance evaluation only, exactly as in the paper:
half the block is plaintext.
"""

from __future__ import annotations

from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from trustlab.errors import TrustlabError
from trustlab.timing.clock import Clock

# cipher name -> (block bytes, component slug, half-block construction or None)
CIPHERS: dict[str, tuple[int, str]] = {
    "aes128": (16, "aes128"),
    "des": (8, "des"),
    "tdes": (8, "tdes"),
    "des(m1)||m2": (16, "des_m1_m2"),
    "tdes(m1)||m2": (16, "tdes_m1_m2"),
    "des(m1)||des(m2)": (16, "des_m1_des_m2"),
    "tdes(m1)||tdes(m2)": (16, "tdes_m1_tdes_m2"),
}
DESTS = ("ram", "nvm")
GCM_R = 0xE1 << 120


def cipher_component(cipher: str, mask: bool = False, key_clear: bool = False, dest: str = "ram") -> str:
    """Profile component charged for one block encryption with these options."""
    if cipher not in CIPHERS:
        raise TrustlabError(f"unknown block cipher {cipher!r} (known: {', '.join(CIPHERS)})")
    name = "block_encrypt." + CIPHERS[cipher][1]
    if mask:
        name += "+mask"
    if key_clear:
        if not mask:
            raise TrustlabError("key clear is only modelled together with the dummy mask (Table VI)")
        name += "+keyclear"
    return name + (".nvm" if dest == "nvm" else "")


def key_load_component(cipher: str) -> str:
    """Profile component charged for loading a key into the co-processor for this cipher."""
    if cipher not in CIPHERS:
        raise TrustlabError(f"unknown block cipher {cipher!r} (known: {', '.join(CIPHERS)})")
    return "key_load." + CIPHERS[cipher][1]


def component_names(cipher: str, mask: bool = False, key_clear: bool = False) -> list[str]:
    """The components a profile needs to time an AE mode with this cipher (RAM destinations)."""
    return [cipher_component(cipher, mask, key_clear), "block_xor", "block_copy", "block_shift"]


def gf128_mul_int(x: int, y: int) -> int:
    """GF(2^128) product in GCM's bit order (SP 800-38D §6.3, Algorithm 1)."""
    z, v = 0, y
    for i in range(127, -1, -1):
        if (x >> i) & 1:
            z ^= v
        v = (v >> 1) ^ GCM_R if v & 1 else v >> 1
    return z


@dataclass
class KeyedCipher:
    """A key loaded into the co-processor: raw ECB encryptor/decryptor halves."""

    cipher: str
    enc: Any
    dec: Any
    enc2: Any = None
    dec2: Any = None


def _ecb(alg: Any) -> tuple[Any, Any]:
    c = Cipher(alg, modes.ECB())
    return c.encryptor(), c.decryptor()


class CardCrypto:
    """The primitives of one card platform, counting and charging every call."""

    def __init__(self, clock: Clock | None = None, cipher: str = "aes128", *, mask: bool = False,
                 key_clear: bool = False, dest: str = "ram") -> None:
        if cipher not in CIPHERS:
            raise TrustlabError(f"unknown block cipher {cipher!r} (known: {', '.join(CIPHERS)})")
        self.clock = clock
        self.cipher = cipher
        self.mask = mask
        self.key_clear = key_clear
        if dest not in DESTS:
            raise TrustlabError(f"destination must be 'ram' or 'nvm', got {dest!r}")
        self.dest = dest  # where results go when a call does not say (the paper: always RAM)
        self.block_size = CIPHERS[cipher][0]
        self.ops: Counter[str] = Counter()
        self._phase = ""
        self._enc_component = {d: cipher_component(cipher, mask, key_clear, d) for d in DESTS}
        self._key_component = key_load_component(cipher)
        self._loaded: KeyedCipher | None = None  # the key in the co-processor's key register
        if clock is not None:
            needed = component_names(cipher, mask, key_clear)
            clock.require(*(needed if dest == "ram" else [n + ".nvm" for n in needed]))

    # ---- bookkeeping ---------------------------------------------------------------

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Count ops under ``<op>_<name>`` (e.g. key-dependent set-up as ``E_init``)."""
        old, self._phase = self._phase, name
        try:
            yield
        finally:
            self._phase = old

    def _tick(self, op: str, component: str | None, dest: str = "ram", optional: bool = False) -> None:
        if dest not in DESTS:  # pragma: no cover - resolved by the callers
            raise TrustlabError(f"destination must be 'ram' or 'nvm', got {dest!r}")
        self.ops[f"{op}_{self._phase}" if self._phase else op] += 1
        if self.clock is None or component is None:
            return
        if optional and component not in self.clock.profile:
            return
        self.clock.charge(component)

    def reset_ops(self) -> None:
        self.ops.clear()

    def start_message(self) -> None:
        """A new command: the co-processor holds no key, so the next block operation loads its key.

        Why: a stand-alone benchmark call (Tables VI, VIII, XI) sets up its key
        every time; a mode's inner loop sets it up once per message and key
        (§V.D: "we set-up the same keys, wrote in the input data once and read
        out the result once"). The key set-up is the per-call part of a block
        encryption, ``key_load.<cipher>``; the rest is per block.
        """
        self._loaded = None

    def _load(self, kc: KeyedCipher) -> None:
        # Key-dependent set-up (phase "init") runs in the same command as the message when it
        # is charged per message, so the message's own load covers it: never charged twice.
        if self._phase == "init":
            return
        if kc is not self._loaded:
            self._loaded = kc
            self._tick("load", self._key_component, optional=True)

    # ---- block cipher ------------------------------------------------------------

    def load_key(self, key: bytes) -> KeyedCipher:
        """Load a key into the co-processor (its cost is outside the paper's benchmarks)."""
        c = self.cipher
        try:
            if c == "aes128":
                if len(key) != 16:
                    raise TrustlabError(f"aes128 needs a 16-byte key, got {len(key)}")
                e, d = _ecb(algorithms.AES(key))
                return KeyedCipher(c, e, d)
            des_key = key[:8] if c.startswith("des") else key[:24] if len(key) >= 24 else key[:16]
            if len(des_key) not in (8, 16, 24):
                raise TrustlabError(f"{c} needs an 8, 16 or 24-byte key, got {len(key)}")
            if len(des_key) == 8:  # single DES = EDE with K1 = K2 = K3
                des_key = des_key * 3
            elif len(des_key) == 16:  # two-key TDES = K1 K2 K1
                des_key = des_key + des_key[:8]
            e, d = _ecb(TripleDES(des_key))
            return KeyedCipher(c, e, d)
        except ValueError as exc:
            raise TrustlabError(f"{c}: bad key: {exc}") from None

    def _raw(self, kc: KeyedCipher, block: bytes, encrypt: bool) -> bytes:
        f = kc.enc if encrypt else kc.dec
        c = kc.cipher
        if c in ("aes128", "des", "tdes"):
            return f.update(block)
        m1, m2 = block[:8], block[8:]
        if c.endswith("||m2"):
            return f.update(m1) + m2
        return f.update(m1) + f.update(m2)

    def encrypt(self, kc: KeyedCipher, block: bytes, dest: str | None = None) -> bytes:
        """One block encryption on the co-processor, result written to ``dest``."""
        dest = dest or self.dest
        if len(block) != self.block_size:
            raise TrustlabError(f"{self.cipher} encrypts {self.block_size}-byte blocks, got {len(block)}")
        out = self._raw(kc, bytes(block), True)
        self._load(kc)
        self._tick("E", self._enc_component.get(dest), dest)
        return out

    def decrypt(self, kc: KeyedCipher, block: bytes, dest: str | None = None) -> bytes:
        """One block decryption (same co-processor cost as encryption)."""
        dest = dest or self.dest
        if len(block) != self.block_size:
            raise TrustlabError(f"{self.cipher} decrypts {self.block_size}-byte blocks, got {len(block)}")
        out = self._raw(kc, bytes(block), False)
        self._load(kc)
        self._tick("D", self._enc_component.get(dest), dest)
        return out

    # ---- CPU block operations -----------------------------------------------------

    def xor(self, a: bytes, b: bytes, dest: str | None = None) -> bytes:
        """XOR two blocks (or a partial block into the leading bytes of another)."""
        dest = dest or self.dest
        n = min(len(a), len(b))
        out = (int.from_bytes(a[:n], "big") ^ int.from_bytes(b[:n], "big")).to_bytes(n, "big")
        self._tick("xor", "block_xor" if dest == "ram" else "block_xor.nvm", dest)
        return out

    def copy(self, a: bytes, dest: str | None = None) -> bytes:
        dest = dest or self.dest
        self._tick("copy", "block_copy" if dest == "ram" else "block_copy.nvm", dest)
        return bytes(a)

    def shift_left(self, a: bytes, bits: int = 1, dest: str | None = None, variable: bool = False) -> bytes:
        """Shift a block left by a number of bits (0 < bits < 8·len), zero fill.

        ``variable=True`` is the general routine for any count and length
        (the paper's BlockShiftLeft, Table V 'Original'); the default is the
        fixed one-place 16-byte FixBlockShiftLeft that two_times() uses (§V.B).
        """
        dest = dest or self.dest
        if not 0 < bits < 8 * len(a):
            raise TrustlabError(f"shift of {bits} bits is out of range for a {len(a)}-byte block")
        n = len(a)
        out = ((int.from_bytes(a, "big") << bits) & ((1 << (8 * n)) - 1)).to_bytes(n, "big")
        fixed = "block_shift" if dest == "ram" else "block_shift.nvm"
        if variable:
            has_var = dest == "ram" and self.clock is not None and "block_shift_var" in self.clock.profile
            self._tick("vshift", "block_shift_var" if has_var else fixed, dest)
        else:
            self._tick("shift", fixed, dest)
        return out

    def shift_right(self, a: bytes, bits: int = 1, dest: str | None = None) -> bytes:
        dest = dest or self.dest
        if not 0 < bits < 8 * len(a):
            raise TrustlabError(f"shift of {bits} bits is out of range for a {len(a)}-byte block")
        out = (int.from_bytes(a, "big") >> bits).to_bytes(len(a), "big")
        self._tick("shift", "block_shift" if dest == "ram" else "block_shift.nvm", dest)
        return out

    def gf_multiply(self, x: bytes, y: bytes) -> bytes:
        """X·Y in GF(2^128) with GCM's polynomial; one ``gf_multiply`` charge."""
        if len(x) != 16 or len(y) != 16:
            raise TrustlabError("GF(2^128) multiply needs two 16-byte blocks")
        z = gf128_mul_int(int.from_bytes(x, "big"), int.from_bytes(y, "big"))
        self._tick("gfmul", "gf_multiply")
        return z.to_bytes(16, "big")

    def inc(self, counter: bytes, width: int = 4) -> bytes:
        """Increment the low ``width`` bytes of a counter block modulo 2^(8·width).

        A few CPU instructions, below the paper's measurement resolution:
        counted, and charged only if the profile has ``counter_inc``.
        """
        head, low = counter[:-width], counter[-width:]
        nxt = ((int.from_bytes(low, "big") + 1) % (1 << (8 * width))).to_bytes(width, "big")
        self._tick("inc", "counter_inc", optional=True)
        return head + nxt
