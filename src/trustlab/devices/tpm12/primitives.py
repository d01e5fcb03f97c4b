"""Timed cryptographic primitives: the only place the engine spends crypto time.

This is the paper's key idea (Gunupudi & Tate 2010, Sec. V-C): delays live in
the primitives and in the dispatcher, never in commands, so a new command is
timed correctly for free. All cryptography is done by OpenSSL through
``cryptography``; each call also charges its profile component to the clock.

Hash accounting rule (what reproduces the paper's coefficients exactly): SHA-1
is charged per *compression-function call*, i.e. ``64 * blocks`` bytes of
``sha1_byte`` where ``blocks = ceil((len + 9) / 64)`` (Merkle–Damgård padding
adds 0x80 and an 8-byte length). HMAC-SHA1 with a 20-byte key is two hashes,
``K^ipad || msg`` and ``K^opad || inner``, i.e. ``blocks(64 + len) + 2``
blocks. RSAES-OAEP (label ``"TCPA"``, as TPM 1.2 specifies) hashes the label
once and runs MGF1 over the seed and the masked data block: for a 2048-bit
modulus 1 + 12 + 4 = 17 blocks per encryption or decryption. PKCS#1 v1.5
signatures in TPM 1.2 sign a digest the command already computed, so they hash
nothing more. Example: TPM_Sign's ``1024 = 16 x 64`` is the input-parameter
digest (1 block) + the request HMAC (5) + the output-parameter digest over the
256-byte signature (5) + the response HMAC (5).
"""

from __future__ import annotations

import functools
import hashlib
import hmac as _hmac
import os
import subprocess
import threading
import weakref
from typing import Any, Callable

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa, utils

from trustlab.devices.tpm12.errors import TpmError
from trustlab.timing.clock import Clock


def _hmac_constructor() -> Callable[..., Any]:
    """``new_hmac(key, msg, "sha1")``: OpenSSL's HMAC through an HMAC context (what hmac.new uses),
    without the stdlib wrapper's Python frame: called 4x per authorized command. Not the one-shot
    HMAC() (hmac.digest), which under OpenSSL 3 fetches the MAC implementation and builds its
    parameters on every call: 1.43 against 0.92 us for a 20-byte key and a 61-byte authorization
    message. A Python built without OpenSSL has no ``_hashlib``: then the stdlib's ``hmac.new``, the
    same bytes (tests/tpm12/test_hostcrypto.py runs the RFC 2202 vectors through both)."""
    try:
        from _hashlib import hmac_new
    except ImportError:
        return _hmac.new
    return hmac_new


new_hmac = _hmac_constructor()

_sha1 = hashlib.sha1
OAEP_LABEL = b"TCPA"
SHA1_BLOCK = 64
DIGEST = 20


def xor(a: bytes, b: bytes) -> bytes:
    """Bytewise XOR over the shorter length (as ``zip`` would), in one big-int operation."""
    n = min(len(a), len(b))
    return (int.from_bytes(a[:n], "big") ^ int.from_bytes(b[:n], "big")).to_bytes(n, "big")


def sha1_blocks(length: int) -> int:
    """Compression-function calls SHA-1 makes for a message of ``length`` bytes."""
    return (length + 8) // SHA1_BLOCK + 1


@functools.lru_cache(maxsize=None)  # a few modulus sizes; called per RSA operation
def oaep_blocks(modulus_bytes: int) -> int:
    """SHA-1 blocks one OAEP encode/decode hashes (label, MGF1 over seed and DB)."""
    db = modulus_bytes - DIGEST - 1
    label = sha1_blocks(len(OAEP_LABEL))
    db_mask = -(-db // DIGEST) * sha1_blocks(DIGEST + 4)
    seed_mask = sha1_blocks(db + 4)
    return label + db_mask + seed_mask


_OAEP = padding.OAEP(mgf=padding.MGF1(hashes.SHA1()), algorithm=hashes.SHA1(), label=OAEP_LABEL)
_PKCS1 = padding.PKCS1v15()
_PREHASHED = utils.Prehashed(hashes.SHA1())


_CHUNK = 4096
_LIVE: "weakref.WeakSet[Entropy]" = weakref.WeakSet()  # every buffer a forked child must empty


def _after_fork_in_child() -> None:
    for e in list(_LIVE):  # a copied buffer must not be handed out a second time
        e._pos = _CHUNK


os.register_at_fork(after_in_child=_after_fork_in_child)


class Entropy:
    """OS randomness (``os.urandom``) read 4 KiB at a time and handed out in slices.

    A TPM draws a 20-byte nonce for nearly every command; one ``getrandom``
    system call per nonce cost more than the rest of a small command's
    bookkeeping. The bytes are the same kind (the OS CSPRNG's), each handed out
    once; a forked child discards what it inherited.
    """

    CHUNK = _CHUNK
    __slots__ = ("_buf", "_pos", "__weakref__")

    def __init__(self) -> None:
        self._buf = b""
        self._pos = _CHUNK  # empty: the first take reads a chunk
        _LIVE.add(self)

    def take(self, n: int) -> bytes:
        pos = self._pos
        end = pos + n
        if end > _CHUNK or n < 0:
            if n > _CHUNK // 4 or n < 0:  # (a negative n must not rewind: os.urandom raises)
                return os.urandom(n)
            self._buf = os.urandom(_CHUNK)
            pos, end = 0, n
        self._pos = end
        return self._buf[pos:end]


_THREAD = threading.local()


def thread_entropy() -> Entropy:
    """This thread's :class:`Entropy`, shared by every engine and host helper running on it.

    One 4 KiB read serves many short-lived TPMs (an oracle run builds one per
    party and each draws about a kilobyte): a buffer per engine made each new
    TPM pay a 4 KiB ``getrandom`` of which it used a quarter. Each byte is
    still handed out once (a thread never shares its buffer, a forked child
    empties it), so the nonces are as fresh and as independent as before.
    """
    try:
        return _THREAD.entropy
    except AttributeError:
        entropy = _THREAD.entropy = Entropy()
        return entropy


class Primitives:
    """Real crypto that charges the clock: sha1, hmac, rsa_* and the RNG."""

    def __init__(self, clock: Clock, keygen: Callable[[int], rsa.RSAPrivateKey] | None = None) -> None:
        self.clock = clock
        self._pending_blocks = 0
        self.make_key = keygen or AHEAD_KEYS
        if keygen is None:
            AHEAD_KEYS.start()  # keys ready before the first command that needs one
        self._rng_charged = "rng_byte" in clock.components  # (a clock's profile is fixed for its life)
        # the per-unit costs of the components charged on every command, None if one has a spread
        # (then charge() draws, in the same order as ever); see Clock.fixed_cost
        self._sha1_byte = clock.fixed_cost("sha1_byte")
        self._rsa_ms = {c: None if clock.fixed_cost(c) is None else 1.0 * clock.fixed_cost(c)
                        for c in ("rsa_enc", "rsa_dec", "rsa_sign") if c in clock.components}

    # ---- hashing ----------------------------------------------------------
    def charge_hash_blocks(self, blocks: int) -> None:
        """Accumulate hashed blocks; :meth:`flush` charges them once per command.

        Hashing is the one primitive called many times per command (digests,
        HMACs, MGF1); charging it once per command keeps the simulator's own
        overhead low and, like the paper's accumulated delay, charges the same
        total. The dispatcher flushes before each command ends.
        """
        self._pending_blocks += blocks

    def flush(self) -> None:
        if self._pending_blocks:
            blocks, self._pending_blocks = self._pending_blocks, 0
            if self._sha1_byte is None:
                self.clock.charge("sha1_byte", SHA1_BLOCK * blocks)
            else:
                self.clock.charge_ms("sha1_byte", SHA1_BLOCK * blocks * self._sha1_byte)

    def take_hash_ms(self) -> float | None:
        """:meth:`flush` for a caller that charges the result itself (the dispatcher, in one call with
        ``ohor``: :meth:`Clock.end_charged`): the ``sha1_byte`` ms of the blocks accumulated since the
        last flush, now taken; None if there were none, or if ``sha1_byte`` has a spread (then charged
        here, drawn as :meth:`flush` draws)."""
        blocks = self._pending_blocks
        if not blocks:
            return None
        self._pending_blocks = 0
        if self._sha1_byte is None:
            self.clock.charge("sha1_byte", SHA1_BLOCK * blocks)
            return None
        return SHA1_BLOCK * blocks * self._sha1_byte

    def _charge_rsa(self, component: str) -> None:
        ms = self._rsa_ms.get(component)
        if ms is None:
            self.clock.charge(component)
        else:
            self.clock.charge_ms(component, ms)

    def sha1(self, *parts: bytes) -> bytes:
        data = b"".join(parts)
        self._pending_blocks += (len(data) + 8) // SHA1_BLOCK + 1  # sha1_blocks, inlined: the hottest call
        return _sha1(data).digest()

    def hmac(self, key: bytes, *parts: bytes) -> bytes:
        msg = b"".join(parts)
        if len(key) > SHA1_BLOCK:  # RFC 2104: long keys are hashed first
            key = self.sha1(key)
        # sha1_blocks(64 + len) + sha1_blocks(64 + 20) = (len + 72) // 64 + 1 + 2
        self._pending_blocks += (len(msg) + 72) // SHA1_BLOCK + 3
        return new_hmac(key, msg, "sha1").digest()

    # ---- RSA ----------------------------------------------------------------
    def rsa_encrypt(self, public: rsa.RSAPublicKey, plaintext: bytes) -> bytes:
        """RSAES-OAEP-SHA1 with label TCPA (TPM_ES_RSAESOAEP_SHA1_MGF1)."""
        k = public.key_size // 8
        if len(plaintext) > k - 2 * DIGEST - 2:
            raise TpmError("TPM_BAD_DATASIZE", f"{len(plaintext)} bytes do not fit one OAEP block")
        out = public.encrypt(plaintext, _OAEP)
        self._charge_rsa("rsa_enc")
        self._pending_blocks += oaep_blocks(k)
        return out

    def rsa_decrypt(self, private: rsa.RSAPrivateKey, ciphertext: bytes) -> bytes:
        k = private.key_size // 8
        self._charge_rsa("rsa_dec")
        self._pending_blocks += oaep_blocks(k)
        if len(ciphertext) != k:
            raise TpmError("TPM_DECRYPT_ERROR", f"ciphertext is {len(ciphertext)} bytes, key needs {k}")
        try:
            return private.decrypt(ciphertext, _OAEP)
        except ValueError:
            raise TpmError("TPM_DECRYPT_ERROR", "OAEP decoding failed") from None

    def rsa_sign(self, private: rsa.RSAPrivateKey, digest: bytes) -> bytes:
        """PKCS#1 v1.5 signature over a SHA-1 digest the caller computed."""
        if len(digest) != DIGEST:
            raise TpmError("TPM_BAD_DATASIZE", f"sign needs a 20-byte digest, got {len(digest)}")
        self._charge_rsa("rsa_sign")
        return private.sign(digest, _PKCS1, _PREHASHED)

    def rsa_verify(self, public: rsa.RSAPublicKey, signature: bytes, digest: bytes) -> None:
        """Check a PKCS#1 v1.5 signature over a SHA-1 digest (a public-key operation: ``rsa_enc``)."""
        self._charge_rsa("rsa_enc")
        try:
            public.verify(signature, digest, _PKCS1, _PREHASHED)
        except (InvalidSignature, ValueError):
            raise TpmError("TPM_BAD_SIGNATURE", "the signature does not verify") from None

    def rsa_generate(self, bits: int = 2048) -> rsa.RSAPrivateKey:
        """Key generation; charged as ``rsa_keygen`` when the profile has it.

        The paper's model has no key-generation variable; the four 2010 chip
        profiles carry one borrowed from the same vendor's TPM 2.0 measurement
        (tools/build_tpm12_keygen.py, a distribution: each key draws its own
        time), sim-2010 none (key creation there costs only its other parts).
        ``keygen`` (constructor) lets tests and benchmarks draw keys from a
        pre-generated pool, and by default keys are made ahead
        (:class:`AheadKeys`): host RSA key generation is the slowest host
        operation by far and says nothing about the modelled chip.
        """
        if "rsa_keygen" in self.clock.profile:
            self.clock.charge("rsa_keygen")
        return self.make_key(bits)

    # ---- randomness ---------------------------------------------------------
    def random(self, n: int) -> bytes:
        """TPM RNG output (the 2010 model charges nothing for it; 'rng_byte' if present)."""
        if self._rng_charged:
            self.clock.charge("rng_byte", n)
        try:  # the calling thread's buffer (thread_entropy, inlined): a served engine may run on several
            entropy = _THREAD.entropy
        except AttributeError:
            entropy = thread_entropy()
        return entropy.take(n)

    def optional(self, component: str, count: float = 1.0) -> None:
        """Charge a component only a richer profile defines (counters, transport)."""
        if component in self.clock.components:
            self.clock.charge(component, count)


def generate_rsa(bits: int) -> rsa.RSAPrivateKey:
    """A fresh RSA key (e = 65537) of ``bits``; TPM 1.2's 512-bit keys come from the OpenSSL tool.

    ``cryptography`` refuses to *generate* keys below 1024 bits (it uses them
    fine), so the few 512-bit keys TPM 1.2 software asks for are made by
    ``openssl genpkey`` - the same OpenSSL, through its command line.
    """
    if bits >= 1024:
        return rsa.generate_private_key(public_exponent=65537, key_size=bits)
    try:
        pem = subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", f"rsa_keygen_bits:{bits}",
                              "-pkeyopt", "rsa_keygen_pubexp:65537"], capture_output=True, check=True,
                             timeout=30).stdout
    except (OSError, subprocess.SubprocessError) as e:
        raise TpmError("TPM_FAIL", f"cannot generate a {bits}-bit RSA key with the openssl tool: {e}") from None
    key = serialization.load_pem_private_key(pem, password=None)
    assert isinstance(key, rsa.RSAPrivateKey)
    return key


def mgf1(sha1, seed: bytes, length: int) -> bytes:
    """MGF1 with SHA-1 (``sha1(*parts)`` gives 20 bytes): the same hash calls, in order, as a counter loop."""
    return b"".join([sha1(seed, counter.to_bytes(4, "big")) for counter in range(-(-length // DIGEST))])[:length]


def oaep_encode(sha1, message: bytes, phash: bytes, seed: bytes, length: int) -> bytes:
    """OAEP encoding without RSA, as TPM 1.2 migration does to a 198-byte block (Part 3, 11.3).

    PKCS#1 v2.0 EME-OAEP as libtpms does it: ``EM = maskedSeed || maskedDB`` of
    ``length`` bytes (no leading zero octet; that belongs to RSA encryption),
    ``DB = pHash || PS || 0x01 || M``. ``phash`` is the 20-byte parameter hash,
    ``seed`` a 20-byte seed (the first 20 bytes of the private key, so the
    migrated blob carries them). Hashing is charged through ``sha1`` (MGF1 over
    seed and data block).
    """
    db_len = length - DIGEST
    if len(message) > db_len - DIGEST - 1:
        raise TpmError("TPM_BAD_DATASIZE", f"{len(message)} bytes do not fit a {length}-byte OAEP block")
    db = phash + b"\x00" * (db_len - DIGEST - 1 - len(message)) + b"\x01" + message
    masked_db = xor(db, mgf1(sha1, seed, db_len))
    masked_seed = xor(seed, mgf1(sha1, masked_db, DIGEST))
    return masked_seed + masked_db


def oaep_decode(sha1, block: bytes, phash: bytes | None) -> tuple[bytes, bytes, bytes]:
    """Inverse of :func:`oaep_encode`: (message, seed, pHash), or TPM_DECRYPT_ERROR.

    ``phash`` None accepts the block's own (TPM_ConvertMigrationBlob recovers migrationAuth so).
    """
    if len(block) < 2 * DIGEST + 1:
        raise TpmError("TPM_DECRYPT_ERROR", "migration block is not OAEP-encoded")
    masked_seed, masked_db = block[:DIGEST], block[DIGEST:]
    seed = xor(masked_seed, mgf1(sha1, masked_db, DIGEST))
    db = xor(masked_db, mgf1(sha1, seed, len(masked_db)))
    if phash is not None and not _hmac.compare_digest(db[:DIGEST], phash):
        raise TpmError("TPM_DECRYPT_ERROR", "migration block was made for other parameters")
    rest = db[DIGEST:].lstrip(b"\x00")
    if not rest or rest[0] != 1:
        raise TpmError("TPM_DECRYPT_ERROR", "bad OAEP padding in the migration block")
    return rest[1:], seed, db[:DIGEST]


class KeyPool:
    """RSA keys generated once and handed out in order; ``reset()`` starts over.

    Keys handed out between two resets are distinct, so TPMs built in one test
    or one benchmark round never share key material; across rounds the same
    keys are reused, which removes host key generation (tens of ms per key)
    from runs that study the modelled chip rather than the host.
    """

    def __init__(self) -> None:
        self._keys: list[rsa.RSAPrivateKey] = []
        self._next = 0

    def __call__(self, bits: int = 2048) -> rsa.RSAPrivateKey:
        if bits != 2048:
            return generate_rsa(bits)
        if self._next == len(self._keys):
            self._keys.append(rsa.generate_private_key(public_exponent=65537, key_size=bits))
        key = self._keys[self._next]
        self._next += 1
        return key

    def reset(self) -> None:
        self._next = 0


class AheadKeys:
    """Fresh RSA-2048 keys generated ahead in a background thread: the default host ``keygen``.

    Host RSA-2048 generation takes 60-300 ms (random, like the chip's), and a
    served engine answers in realtime: generating inline would add that to the
    command's host time, and on a profile whose key generation is modelled
    shorter (or not at all: sim-2010) the response would leave late. So up to
    ``depth`` keys wait ready; taking one wakes the thread to replace it.
    OpenSSL releases the GIL while it generates, so the thread does not stall
    the one that holds responses. Every key is fresh and handed out once (no
    sharing between TPMs); when none is ready (a burst), one is made inline.
    Other sizes are always made inline.
    """

    def __init__(self, depth: int = 4) -> None:
        self.depth = depth
        self._ready: list[rsa.RSAPrivateKey] = []
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Begin filling (an engine that will use these keys calls it when it is built)."""
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._fill, name="trustlab-keys-ahead", daemon=True)
                self._thread.start()
        self._wake.set()

    def __call__(self, bits: int = 2048) -> rsa.RSAPrivateKey:
        if bits != 2048:
            return generate_rsa(bits)
        with self._lock:
            key = self._ready.pop() if self._ready else None
        self.start()
        return key if key is not None else generate_rsa(bits)

    def _fill(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            while True:
                with self._lock:
                    if len(self._ready) >= self.depth:
                        break
                key = generate_rsa(2048)
                with self._lock:
                    self._ready.append(key)


AHEAD_KEYS = AheadKeys()  # one per process: engines built without a keygen share its (fresh, never reused) keys
