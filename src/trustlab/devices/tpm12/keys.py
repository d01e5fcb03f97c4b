"""TPM 1.2 key structures (TPM_KEY12, TPM_PUBKEY, TPM_STORE_ASYMKEY) and loaded keys.

A key leaves the TPM only as a TPM_KEY12 blob: public part in clear, private
part (TPM_STORE_ASYMKEY: usage secret, migration secret, digest of the public
part, private key) RSAES-OAEP-encrypted under the parent storage key. Sizes
follow Part 2 exactly; they are what the dispatcher charges per wire byte. A
2048-bit RSA key blob is 559 bytes; the what-if HMAC key (TPM_ALG_HMAC, no RSA
parameters, a 20-byte public *key identifier* in place of a modulus) is 311
bytes, which is what makes TPM_LoadKey2's 370 input bytes in the paper's
oracle study (10 header + 4 parent handle + 311 + 45 authorization).
"""

from __future__ import annotations

import functools
import hashlib
import struct
from dataclasses import dataclass, field
from typing import Callable

from cryptography.hazmat.primitives.asymmetric import rsa

from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12.errors import TpmError
from trustlab.devices.tpm12.wire import Reader, Writer

RSA_EXPONENT = 65537
RSA_SIZES = (512, 1024, 2048)  # Part 2, 5.4: keyLength; the TPM 1.2 key sizes TrouSerS offers
HMAC_KEY_LABEL = b"TPM_HMAC key id"  # domain label of the HMAC key identifier (TPM_CMK_CreateKey)


def _memo(obj: object, name: str, build: Callable[[], bytes]) -> bytes:
    """``build()`` once per immutable key object, kept beside its fields.

    Safe because the dataclasses are frozen (their marshalled form cannot go
    stale) and the memo is not a field (equality, hashing, ``replace`` and
    ``repr`` ignore it). A key is marshalled and digested many times per
    protocol run (blob, public part, TPM_PUBKEY digests, pubDataDigest checks).
    A Key12 memo's name must be in ``_KEY_MEMOS`` (``Key12._evolve`` drops stale ones by it).
    """
    value = obj.__dict__.get(name)
    if value is None:
        value = build()
        object.__setattr__(obj, name, value)
    return value


@dataclass(frozen=True)
class KeyParms:
    """TPM_KEY_PARMS; for RSA the parms are TPM_RSA_KEY_PARMS (keyLength, numPrimes, exponent)."""

    algorithm: int = C.TPM_ALG_RSA
    enc_scheme: int = C.TPM_ES_NONE
    sig_scheme: int = C.TPM_SS_NONE
    key_bits: int = 2048

    def marshal(self) -> bytes:
        return _memo(self, "_bytes", self._marshal)

    def _marshal(self) -> bytes:
        if self.algorithm == C.TPM_ALG_RSA:
            parms = Writer().u32(self.key_bits).u32(2).sized(b"").bytes()  # default exponent
        else:
            parms = b""
        return (Writer().u32(self.algorithm).u16(self.enc_scheme).u16(self.sig_scheme)
                .sized(parms).bytes())

    @classmethod
    def unmarshal(cls, r: Reader) -> "KeyParms":
        alg, enc, sig = r.u32(), r.u16(), r.u16()
        return _key_parms(cls, alg, enc, sig, r.sized(1024))


# One object per distinct TPM_KEY_PARMS: a run parses the same few parameter sets again and again
# (every key blob holds one). The result is a function of its inputs and immutable; a failing parse
# raises afresh each time (lru_cache keeps no exceptions), with the same error.
@functools.lru_cache(maxsize=256)
def _key_parms(cls: type, alg: int, enc: int, sig: int, raw: bytes) -> KeyParms:
    parms = Reader(raw, "TPM_KEY_PARMS")
    bits = 0
    if alg == C.TPM_ALG_RSA:
        bits = parms.u32()
        primes = parms.u32()
        if parms.sized(16) not in (b"", b"\x01\x00\x01"):
            raise TpmError("TPM_BAD_KEY_PROPERTY", "only exponent 65537 is supported")
        if primes != 2:  # Part 2, 5.4 / libtpms TPM_KeyParms_CheckProperties
            raise TpmError("TPM_BAD_KEY_PROPERTY", f"numPrimes {primes} (2 supported)")
        if bits not in RSA_SIZES:
            raise TpmError("TPM_BAD_KEY_PROPERTY", f"RSA keys of {'/'.join(map(str, RSA_SIZES))} bits, not {bits}")
    elif alg != C.TPM_ALG_HMAC:
        raise TpmError("TPM_BAD_KEY_PROPERTY", f"unknown algorithm {alg:#x}")
    return cls(alg, enc, sig, bits)


_OAEP, _PKCS1 = C.TPM_ES_RSAESOAEP_SHA1_MGF1, C.TPM_ES_RSAESPKCSv15
_SHA1, _DER, _INFO = C.TPM_SS_RSASSAPKCS1v15_SHA1, C.TPM_SS_RSASSAPKCS1v15_DER, C.TPM_SS_RSASSAPKCS1v15_INFO
# Part 2, 5.7.1 mandatory key usage schemes: usage -> (encryption schemes, signature schemes, minimum bits)
USAGE_SCHEMES = {
    C.TPM_KEY_SIGNING: ({C.TPM_ES_NONE}, {_SHA1, _DER, _INFO}, 512),
    C.TPM_KEY_STORAGE: ({_OAEP}, {C.TPM_SS_NONE}, 2048),
    C.TPM_KEY_IDENTITY: ({C.TPM_ES_NONE}, {_SHA1}, 2048),
    C.TPM_KEY_AUTHCHANGE: ({_OAEP}, {C.TPM_SS_NONE}, 512),
    C.TPM_KEY_BIND: ({_OAEP, _PKCS1}, {C.TPM_SS_NONE}, 512),
    C.TPM_KEY_LEGACY: ({_OAEP, _PKCS1}, {_SHA1, _DER}, 512),
    C.TPM_KEY_MIGRATE: ({_OAEP}, {C.TPM_SS_NONE}, 2048),
}


def check_key_parms(usage: int, parms: KeyParms) -> None:
    """A key's schemes and size must suit its usage (Part 2, 5.7.1), else TPM_BAD_KEY_PROPERTY."""
    if parms.algorithm == C.TPM_ALG_HMAC and usage == C.TPM_KEY_HMAC:
        return  # the what-if HMAC key has no RSA schemes
    rule = USAGE_SCHEMES.get(usage)
    if rule is None or parms.algorithm != C.TPM_ALG_RSA:
        raise TpmError("TPM_BAD_KEY_PROPERTY", f"no RSA key of usage {usage:#06x}")
    enc, sig, bits = rule
    if parms.enc_scheme not in enc or parms.sig_scheme not in sig or parms.key_bits < bits:
        raise TpmError("TPM_BAD_KEY_PROPERTY",
                       f"usage {usage:#06x} with encScheme {parms.enc_scheme:#x}, sigScheme {parms.sig_scheme:#x}, "
                       f"{parms.key_bits} bits (Part 2, 5.7.1)")


# TPM_KEY12 up to TPM_KEY_PARMS.parmSize: tag, fill, keyUsage, keyFlags, authDataUsage, algorithmID,
# encScheme, sigScheme
_KEY12_HEAD = struct.Struct(">HHHIBIHH")
_KEY_MEMOS = ("_public", "_blob", "_pubkey")  # Key12's memoised forms (see _memo)


@dataclass(frozen=True)
class Key12:
    """TPM_KEY12 (Part 2, 10.3)."""

    usage: int
    flags: int
    auth_usage: int
    parms: KeyParms
    pub: bytes  # RSA modulus, or the HMAC key identifier
    enc: bytes = b""
    pcr_info: bytes = b""

    def public_part(self) -> bytes:
        """Everything but encSize/encData: what pubDataDigest covers."""
        return _memo(self, "_public", self._marshal_public)

    def _marshal_public(self) -> bytes:
        return _key12_public(self.usage, self.flags, self.auth_usage, self.parms, self.pcr_info, self.pub)

    def marshal(self) -> bytes:
        return _memo(self, "_blob", lambda: self.public_part() + Writer().sized(self.enc).bytes())

    @classmethod
    def unmarshal(cls, r: Reader) -> "Key12":
        if r.remaining() >= _KEY12_HEAD.size:  # the fixed fields in one read (the same checks, in order)
            tag, _, usage, flags, auth_usage, alg, enc, sig = r.unpack(_KEY12_HEAD)
            if tag != C.TPM_TAG_KEY12:
                raise TpmError("TPM_INVALID_STRUCTURE", "not a TPM_KEY12 (tag)")
            parms = _key_parms(KeyParms, alg, enc, sig, r.sized(1024))
        else:  # too short for them: field by field, so the first failing read raises as ever
            if r.u16() != C.TPM_TAG_KEY12:
                raise TpmError("TPM_INVALID_STRUCTURE", "not a TPM_KEY12 (tag)")
            r.u16()
            usage, flags, auth_usage = r.u16(), r.u32(), r.u8()
            parms = KeyParms.unmarshal(r)
        pcr = r.sized(512)
        pub = r.sized(512)
        enc = r.sized(1024)
        return _shared_key(cls, usage, flags, auth_usage, parms, pub, enc, pcr)

    @classmethod
    def from_bytes(cls, blob: bytes) -> "Key12":
        r = Reader(blob, "TPM_KEY12")
        k = cls.unmarshal(r)
        r.end()
        return k

    def pubkey(self) -> bytes:
        """TPM_PUBKEY: algorithm parameters + public key (Part 2, 10.5)."""
        return _memo(self, "_pubkey", lambda: self.parms.marshal() + Writer().sized(self.pub).bytes())

    def with_enc(self, enc: bytes) -> "Key12":
        return self._evolve(("_public", "_pubkey"), enc=enc)  # (the public fields are the same)

    def with_public(self, pub: bytes) -> "Key12":
        """This template as the public half of a key just made: ``pub`` in, no private part."""
        return _with_public(self, pub)

    def _evolve(self, keep: tuple[str, ...], **changes: bytes) -> "Key12":
        """``dataclasses.replace(self, **changes)`` carrying over the memos named in ``keep``.

        Without replace's per-call field introspection (ten times this): the
        fields are copied as they are (the dataclass has no __post_init__ and
        is frozen, so nothing else is derived at construction).
        """
        key = object.__new__(type(self))
        fields = key.__dict__
        fields.update(self.__dict__)
        fields.update(changes)
        for name in _KEY_MEMOS:
            if name not in keep:
                fields.pop(name, None)
        return key

    @property
    def legacy(self) -> bool:
        """True for a TPM 1.1 TPM_KEY (answered in kind, e.g. by TPM_TakeOwnership)."""
        return False

    @property
    def is_cmk(self) -> bool:
        return bool(self.flags & C.TPM_KEY_FLAG_MIGRATE_AUTHORITY)

    @property
    def migratable(self) -> bool:
        return bool(self.flags & C.TPM_KEY_FLAG_MIGRATABLE)


# The public part of a TPM_KEY12 as a function of its fields: every run parses new blobs (their
# encrypted halves are fresh) of the same few public parts, and each load re-checks pubDataDigest
# over the public part. Immutable inputs and result, so one marshalling serves them all.
@functools.lru_cache(maxsize=256)
def _key12_public(usage: int, flags: int, auth_usage: int, parms: KeyParms, pcr_info: bytes, pub: bytes) -> bytes:
    return (Writer().u16(C.TPM_TAG_KEY12).u16(0).u16(usage).u32(flags)
            .u8(auth_usage).raw(parms.marshal()).sized(pcr_info).sized(pub).bytes())


# A template filled with a key's public part (TPM_TakeOwnership's SRK, TPM_MakeIdentity's AIK): pooled
# keys meet the same templates run after run, and the shared result keeps its marshalled forms.
@functools.lru_cache(maxsize=256)
def _with_public(template: Key12, pub: bytes) -> Key12:
    return template._evolve((), pub=pub, enc=b"")


@dataclass(frozen=True)
class Key11(Key12):
    """TPM_KEY (Part 2, 10.2), the TPM 1.1 key structure: TPM_STRUCT_VER in place of tag+fill.

    Same layout and size as TPM_KEY12 otherwise; TrouSerS sends its SRK template
    and, by default, its keys in this form.
    """

    ver: bytes = C.STRUCT_VER

    def _marshal_public(self) -> bytes:
        return (Writer().raw(self.ver).u16(self.usage).u32(self.flags)
                .u8(self.auth_usage).raw(self.parms.marshal()).sized(self.pcr_info)
                .sized(self.pub).bytes())

    @property
    def legacy(self) -> bool:
        return True

    @classmethod
    def unmarshal(cls, r: Reader) -> "Key12":
        ver = r.raw(4)
        if ver[:2] != b"\x01\x01":
            raise TpmError("TPM_BAD_VERSION", f"TPM_KEY version {ver.hex()} (1.1 expected)")
        usage, flags, auth_usage = r.u16(), r.u32(), r.u8()
        parms = KeyParms.unmarshal(r)
        pcr = r.sized(512)
        pub = r.sized(512)
        enc = r.sized(1024)
        return _shared_key(cls, usage, flags, auth_usage, parms, pub, enc, pcr, ver)


# One object per distinct key structure parsed: a run parses the same blob more than once (the
# host reads what a command returned, the TPM loads it), and a shared object keeps its memoised
# marshalled forms. Safe for the reason _memo is: the keys are frozen.
@functools.lru_cache(maxsize=256)
def _shared_key(cls: type, *fields: object) -> Key12:
    return cls(*fields)


@functools.lru_cache(maxsize=256)
def srk_blob(modulus: bytes) -> Key12:
    """The SRK's TPM_KEY12 (public part: a non-migratable RSA storage key, no private part), one
    object per modulus: the SRK never leaves the TPM as a blob, yet its public part is read
    (TPM_OwnerReadInternalPub) and digested; a shared object keeps its marshalled forms (:func:`_memo`)
    across the TPMs a pooled key serves."""
    return Key12(C.TPM_KEY_STORAGE, 0, C.TPM_AUTH_ALWAYS,
                 KeyParms(C.TPM_ALG_RSA, C.TPM_ES_RSAESOAEP_SHA1_MGF1, C.TPM_SS_NONE), modulus)


def unmarshal_key(r: Reader) -> Key12:
    """A TPM_KEY12 or a TPM 1.1 TPM_KEY, told apart by their first two bytes (Part 2, 10.2-10.3)."""
    if r.remaining() >= 2 and r.peek(2) == b"\x01\x01":
        return Key11.unmarshal(r)
    return Key12.unmarshal(r)


def skip_key(r: Reader) -> None:
    """Read past a TPM_KEY / TPM_KEY12 as libtpms' TPM_Key_Load does: structure only. RSA parameters
    are read, not judged, and algorithm 0 loads (an uninitialised structure); the properties are
    checked later (TPM_Key_CheckProperties), after the command's paramSize. Any other algorithm is
    TPM_BAD_KEY_PROPERTY here too (TPM_KeyParms_Load)."""
    r.raw(4), r.u16(), r.u32(), r.u8()
    alg = r.u32()
    r.u16(), r.u16()
    parms = Reader(r.sized(), "TPM_KEY_PARMS")
    if alg == C.TPM_ALG_RSA:
        parms.u32(), parms.u32(), parms.sized()
    elif alg != 0:
        raise TpmError("TPM_BAD_KEY_PROPERTY", f"unknown algorithm {alg:#x}")
    r.sized(), r.sized(), r.sized()


def key_from_bytes(blob: bytes) -> Key12:
    r = Reader(blob, "TPM_KEY")
    k = unmarshal_key(r)
    r.end()
    return k


@dataclass(frozen=True)
class StoreAsymkey:
    """TPM_STORE_ASYMKEY (Part 2, 10.6): the secret half, encrypted under the parent."""

    payload: int
    usage_auth: bytes
    migration_auth: bytes
    pub_digest: bytes
    priv: bytes  # RSA prime p, or the HMAC key

    def marshal(self) -> bytes:
        return (Writer().u8(self.payload).raw(self.usage_auth).raw(self.migration_auth)
                .raw(self.pub_digest).sized(self.priv).bytes())

    @classmethod
    def from_bytes(cls, data: bytes) -> "StoreAsymkey":
        r = Reader(data, "TPM_STORE_ASYMKEY")
        v = cls(r.u8(), r.raw(20), r.raw(20), r.raw(20), r.sized(512))
        r.end()
        return v


def pubkey_modulus(pubkey: bytes) -> tuple[KeyParms, bytes]:
    """Parse a TPM_PUBKEY into its parameters and key bytes."""
    r = Reader(pubkey, "TPM_PUBKEY")
    parms = KeyParms.unmarshal(r)
    key = r.sized(512)
    r.end()
    return parms, key


# One public-key object per key: OpenSSL keeps its Montgomery set-up with the key object, so a
# fresh object per operation pays it again (as much as a third of a 2048-bit encryption). Key
# objects are immutable, so sharing them is safe; protocol runs meet the same (pooled) keys again.
@functools.lru_cache(maxsize=256)
def rsa_public(modulus: bytes) -> rsa.RSAPublicKey:
    return rsa.RSAPublicNumbers(RSA_EXPONENT, int.from_bytes(modulus, "big")).public_key()


@functools.lru_cache(maxsize=256)  # private keys hash by identity: the cache holds each one it saw
def public_of(private: rsa.RSAPrivateKey) -> rsa.RSAPublicKey:
    """``private.public_key()``, one object per private key (see :func:`rsa_public`)."""
    return private.public_key()


@functools.lru_cache(maxsize=256)
def _private_modulus(private: rsa.RSAPrivateKey) -> bytes:
    n = public_of(private).public_numbers().n
    return n.to_bytes((n.bit_length() + 7) // 8, "big")


@functools.lru_cache(maxsize=256)  # a key is loaded again and again (every LoadKey2 of its blob)
def rsa_from_prime(modulus: bytes, p_bytes: bytes) -> rsa.RSAPrivateKey:
    """Rebuild an RSA private key from n and p, as TPM 1.2 stores only one prime.

    OpenSSL's full key check (``RSA_check_key``: primality of p and q and a
    trial decryption, about 35-50 ms, as much as a hundred RSA decryptions)
    is skipped, which is safe here: p arrives only from a TPM_STORE_ASYMKEY
    this TPM decrypted under its own parent key and whose digest of the public
    part :func:`...commands.keys.unwrap` checked, so p was a prime the engine
    itself generated for exactly this modulus; and the checks below still
    require ``p * q = n`` with ``1 < p < n`` (so q = n / p exactly), from
    which d and the CRT values are derived, not taken from the blob. The
    result is immutable, so one object per (n, p) is shared by every load.
    """
    n = int.from_bytes(modulus, "big")
    p = int.from_bytes(p_bytes, "big")
    if p <= 1 or p >= n or n % p:
        raise TpmError("TPM_DECRYPT_ERROR", "stored prime does not divide the modulus")
    q = n // p
    try:  # no inverse (e | (p-1)(q-1), or p = q): not a key this TPM made
        d = pow(RSA_EXPONENT, -1, (p - 1) * (q - 1))
        iqmp = rsa.rsa_crt_iqmp(p, q)
    except ValueError:
        raise TpmError("TPM_DECRYPT_ERROR", "stored prime does not give an RSA key for this modulus") from None
    return rsa.RSAPrivateNumbers(
        p, q, d, rsa.rsa_crt_dmp1(d, p), rsa.rsa_crt_dmq1(d, q), iqmp,
        rsa.RSAPublicNumbers(RSA_EXPONENT, n)).private_key(unsafe_skip_rsa_key_validation=True)


def modulus_of(key: rsa.RSAPrivateKey | rsa.RSAPublicKey) -> bytes:
    if isinstance(key, rsa.RSAPrivateKey):
        return _private_modulus(key)
    n = key.public_numbers().n
    return n.to_bytes((n.bit_length() + 7) // 8, "big")


@functools.lru_cache(maxsize=256)  # (see _private_modulus: keys hash by identity, pooled ones recur)
def prime_of(key: rsa.RSAPrivateKey) -> bytes:
    p = key.private_numbers().p
    return p.to_bytes((p.bit_length() + 7) // 8, "big")


def hmac_key_id(secret: bytes) -> bytes:
    """Public identifier of a what-if HMAC key: SHA-1 over a domain label and the key.

    It plays the modulus's role in certification and migration checks (it
    binds the public part to one secret) without revealing the secret.
    Host-side convention, so plain hashlib (nothing is charged).
    """
    return hashlib.sha1(HMAC_KEY_LABEL + secret).digest()


@dataclass
class LoadedKey:
    """A key in a TPM key slot: its blob, its secrets, and the usable private key."""

    blob: Key12
    usage_auth: bytes
    migration_auth: bytes
    pub_digest: bytes
    private: rsa.RSAPrivateKey | None = None
    hmac_secret: bytes | None = None
    parent: int | None = None
    extra: dict = field(default_factory=dict)

    @property
    def public(self) -> rsa.RSAPublicKey:
        if self.private is None:
            raise TpmError("TPM_INAPPROPRIATE_ENC", "key has no RSA public key")
        return public_of(self.private)


def key_to_json(k: LoadedKey) -> dict:
    """A loaded key as JSON (TPM_SaveState keeps key slots across ST_STATE)."""
    from cryptography.hazmat.primitives import serialization

    der = (k.private.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
                                   serialization.NoEncryption()).hex() if k.private is not None else None)
    return {"blob": k.blob.marshal().hex(), "usage_auth": k.usage_auth.hex(),
            "migration_auth": k.migration_auth.hex(), "pub_digest": k.pub_digest.hex(), "private": der,
            "hmac": k.hmac_secret.hex() if k.hmac_secret is not None else None, "parent": k.parent}


def key_from_json(doc: dict) -> LoadedKey:
    from cryptography.hazmat.primitives import serialization

    blob = key_from_bytes(bytes.fromhex(doc["blob"]))
    private = (serialization.load_der_private_key(bytes.fromhex(doc["private"]), password=None)
               if doc["private"] else None)
    return LoadedKey(blob, bytes.fromhex(doc["usage_auth"]), bytes.fromhex(doc["migration_auth"]),
                     bytes.fromhex(doc["pub_digest"]), private=private,  # type: ignore[arg-type]
                     hmac_secret=bytes.fromhex(doc["hmac"]) if doc["hmac"] else None, parent=doc["parent"])
