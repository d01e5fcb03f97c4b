"""TPM 2.0 Library 1.85 structures for ML-KEM and ML-DSA, marshalled byte for byte.

Sources (the 1.85 RC4 Part 2/3 tables, as the public implementations quote
them): TPMS_MLDSA_PARMS {parameterSet, allowExternalMu}, TPMS_HASH_MLDSA_PARMS
{parameterSet, hashAlg}, TPMS_MLKEM_PARMS {symmetric, parameterSet};
TPMU_PUBLIC_ID.mldsa/.mlkem are TPM2B public keys (FIPS 204 pkEncode / FIPS 203
ek); TPMU_SIGNATURE.mldsa is a TPM2B, .hash_mldsa is {hash, TPM2B}; private
keys are the seeds (32-byte xi, 64-byte d||z). Used by both the handlers
(parsing what clients send) and the client (building it).
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass, replace

from trustlab.devices.tpm2.extensions import (
    TPM_RC_ATTRIBUTES,
    TPM_RC_HASH,
    TPM_RC_SCHEME,
    TPM_RC_SYMMETRIC,
    TPM_RC_TYPE,
    TPM_RC_VALUE,
    TPM_RS_PW,
    Reader,
    TpmError,
    at_param,
)

TPM_ALG_SHA1 = 0x0004
TPM_ALG_SHA256 = 0x000B
TPM_ALG_SHA384 = 0x000C
TPM_ALG_SHA512 = 0x000D
TPM_ALG_NULL = 0x0010
TPM_ALG_AES = 0x0006
TPM_ALG_CFB = 0x0043
TPM_ALG_KEYEDHASH = 0x0008
TPM_ALG_HMAC = 0x0005
TPM_ALG_MLKEM = 0x00A0
TPM_ALG_MLDSA = 0x00A1
TPM_ALG_HASH_MLDSA = 0x00A2
PQC_TYPES = (TPM_ALG_MLKEM, TPM_ALG_MLDSA, TPM_ALG_HASH_MLDSA)

TPM_ST_CREATION = 0x8021
TPM_ST_HASHCHECK = 0x8024
TPM_ST_MESSAGE_VERIFIED = 0x8026
TPM_ST_DIGEST_VERIFIED = 0x8027
TPM_RH_NULL = 0x40000007
TPM_RH_OWNER = 0x40000001
TPM_RH_ENDORSEMENT = 0x4000000B
TPM_RH_PLATFORM = 0x4000000C
TPM_CAP_HANDLES = 0x1
TPM_CAP_COMMANDS = 0x2
TPM_CAP_TPM_PROPERTIES = 0x6
TPM_CC_CREATE_PRIMARY = 0x131
TPM_CC_HMAC = 0x155
TPM_CC_CONTEXT_LOAD = 0x161
TPM_CC_CONTEXT_SAVE = 0x162
TPM_CC_FLUSH_CONTEXT = 0x165
TPM_CC_GET_CAPABILITY = 0x17A
"""Command codes the extension sends to the backend TPM itself (Part 2, Table 12)."""
TPM_PT_MAX_COMMAND_SIZE = 0x11E  # PT_FIXED + 30
TPM_PT_MAX_RESPONSE_SIZE = 0x11F  # PT_FIXED + 31
HIERARCHIES = (TPM_RH_OWNER, TPM_RH_ENDORSEMENT, TPM_RH_PLATFORM, TPM_RH_NULL)

# TPMA_OBJECT
FIXED_TPM = 1 << 1
ST_CLEAR = 1 << 2
FIXED_PARENT = 1 << 4
SENSITIVE_DATA_ORIGIN = 1 << 5
USER_WITH_AUTH = 1 << 6
ADMIN_WITH_POLICY = 1 << 7
NO_DA = 1 << 10
RESTRICTED = 1 << 16
DECRYPT = 1 << 17
SIGN = 1 << 18
X509SIGN = 1 << 19  # 1.85

HASHES = {TPM_ALG_SHA1: "sha1", TPM_ALG_SHA256: "sha256", TPM_ALG_SHA384: "sha384", TPM_ALG_SHA512: "sha512"}
# DER-encoded OIDs of the pre-hash functions (FIPS 204, Algorithm 4, HashML-DSA)
HASH_OIDS = {
    TPM_ALG_SHA256: bytes.fromhex("0609608648016503040201"),
    TPM_ALG_SHA384: bytes.fromhex("0609608648016503040202"),
    TPM_ALG_SHA512: bytes.fromhex("0609608648016503040203"),
}

MAX_DIGEST_BUFFER = 64  # sizeof(TPMU_HA) with SHA-512
MAX_SIGNATURE_CTX = 255  # MAX_SIG_CTX_BYTES: the minimum 1.85 allows for ML-DSA
MAX_SIGNATURE_HINT = 256
MAX_MLKEM_CT = 1568
MAX_MLDSA_SIG = 4627
MAX_MLDSA_PUB = 2592
MAX_MLKEM_PUB = 1568
MAX_BUFFER = 1024  # TPM2B_MAX_BUFFER of libtpms
MAX_AUTH = 64


def u16(v: int) -> bytes:
    return struct.pack(">H", v)


def u32(v: int) -> bytes:
    return struct.pack(">I", v)


def tpm2b(data: bytes) -> bytes:
    return u16(len(data)) + data


def password(auth: bytes = b"") -> bytes:
    """One TPMS_AUTH_COMMAND of a password session (TPM_RS_PW)."""
    return u32(TPM_RS_PW) + u16(0) + b"\x00" + tpm2b(auth)


def frame(code: int, handles: list[int], params: bytes, auths: list[bytes] | None = None) -> bytes:
    """A command frame; with ``auths`` (TPMS_AUTH_COMMANDs) the sessions tag and authorization area."""
    body = b"".join(u32(h) for h in handles)
    tag = 0x8001
    if auths is not None:
        tag = 0x8002
        area = b"".join(auths)
        body += u32(len(area)) + area
    body += params
    return struct.pack(">HII", tag, 10 + len(body), code) + body


CONTEXT_HEADER = 16  # TPMS_CONTEXT: sequence (UINT64), savedHandle, hierarchy (UINT32 each), then contextBlob


def context_problem(context: bytes) -> str | None:
    """What is wrong with a TPMS_CONTEXT's framing (None if it is one whole structure), naming the byte offset.

    Checked before TPM2_ContextLoad: a file with a byte too many or too few otherwise reaches the TPM, whose
    TPM_RC_SIZE / TPM_RC_INSUFFICIENT says nothing of the file, and an empty file sent an empty context.
    """
    n = len(context)
    if n == 0:
        return "empty (0 bytes; a TPMS_CONTEXT is at least 18)"
    if n < CONTEXT_HEADER + 2:
        return (f"{n} bytes, cut short at byte offset {n}: a TPMS_CONTEXT has 16 bytes of sequence, savedHandle "
                "and hierarchy, then the contextBlob's 2-byte size")
    size = struct.unpack_from(">H", context, CONTEXT_HEADER)[0]
    end = CONTEXT_HEADER + 2 + size
    if size == 0:
        return f"the contextBlob at byte offset {CONTEXT_HEADER} is empty (size 0)"
    if n < end:
        return (f"cut short at byte offset {n}: the contextBlob at byte offset {CONTEXT_HEADER} declares {size} "
                f"bytes, so the context ends at byte offset {end}")
    if n > end:
        return (f"{n - end} extra byte(s) at byte offset {end}, after the TPMS_CONTEXT (its contextBlob at byte "
                f"offset {CONTEXT_HEADER} declares {size} bytes); not a file --context-out wrote, or damaged")
    return None


def response_code(response: bytes) -> int:
    """The response code of a response frame (TPM_RC_FAILURE if it is too short to have one)."""
    return struct.unpack_from(">I", response, 6)[0] if len(response) >= 10 else 0x101


def tpm_properties(response: bytes) -> dict[int, int]:
    """A TPM2_GetCapability(TPM_CAP_TPM_PROPERTIES) answer as {property: value}; {} for an error or a short
    answer (tag, size, rc, moreData, capability, count, then the pairs)."""
    if response_code(response) != 0 or len(response) < 19:
        return {}
    (count,) = struct.unpack_from(">I", response, 15)
    if len(response) < 19 + 8 * count:
        return {}
    return dict(struct.unpack_from(">II", response, 19 + 8 * i) for i in range(count))


def digest(alg: int, data: bytes) -> bytes:
    return hashlib.new(HASHES[alg], data).digest()


@dataclass(frozen=True)
class Public:
    """A TPMT_PUBLIC of type MLDSA, HASH_MLDSA or MLKEM (``unique`` is the public key)."""

    type: int
    name_alg: int
    attributes: int
    auth_policy: bytes
    parameter_set: int
    allow_external_mu: bool = False  # MLDSA
    hash_alg: int = TPM_ALG_NULL  # HASH_MLDSA: the pre-hash
    symmetric: tuple[int, int, int] | None = None  # MLKEM: (alg, keyBits, mode) or None for TPM_ALG_NULL
    unique: bytes = b""

    def marshal(self) -> bytes:
        out = u16(self.type) + u16(self.name_alg) + u32(self.attributes) + tpm2b(self.auth_policy)
        if self.type == TPM_ALG_MLDSA:
            out += u16(self.parameter_set) + bytes([1 if self.allow_external_mu else 0])
        elif self.type == TPM_ALG_HASH_MLDSA:
            out += u16(self.parameter_set) + u16(self.hash_alg)
        else:
            out += (u16(TPM_ALG_NULL) if self.symmetric is None
                    else u16(self.symmetric[0]) + u16(self.symmetric[1]) + u16(self.symmetric[2]))
            out += u16(self.parameter_set)
        return out + tpm2b(self.unique)

    def name(self) -> bytes:
        """TPM2B_NAME contents: nameAlg || H_nameAlg(TPMT_PUBLIC)."""
        return u16(self.name_alg) + digest(self.name_alg, self.marshal())

    def with_unique(self, unique: bytes) -> "Public":
        return replace(self, unique=unique)


def peek_public_type(area: bytes) -> int | None:
    """The type of a TPMT_PUBLIC (a TPM2B_PUBLIC's contents), or None if unreadable (never raises)."""
    if len(area) < 2:
        return None
    return struct.unpack_from(">H", area, 0)[0]


def parse_public(r: Reader) -> Public:
    """A TPMT_PUBLIC of a PQC type (the caller has checked the type); errors name parameter r.n."""
    kind = r.u16()
    name_alg = r.u16()
    if name_alg not in HASHES:
        raise TpmError(at_param(TPM_RC_HASH, r.n), "nameAlg")
    attributes = r.u32()
    auth_policy = r.tpm2b(MAX_DIGEST_BUFFER)
    if kind == TPM_ALG_MLDSA:
        pset = r.u16()
        ext = r.u8()
        if ext > 1:
            raise TpmError(at_param(TPM_RC_VALUE, r.n), "allowExternalMu is not a TPMI_YES_NO")
        unique = r.tpm2b(MAX_MLDSA_PUB)
        return Public(kind, name_alg, attributes, auth_policy, pset, allow_external_mu=bool(ext), unique=unique)
    if kind == TPM_ALG_HASH_MLDSA:
        pset = r.u16()
        hash_alg = r.u16()
        if hash_alg not in HASH_OIDS:
            raise TpmError(at_param(TPM_RC_HASH, r.n), "HashML-DSA pre-hash")
        unique = r.tpm2b(MAX_MLDSA_PUB)
        return Public(kind, name_alg, attributes, auth_policy, pset, hash_alg=hash_alg, unique=unique)
    if kind == TPM_ALG_MLKEM:
        sym_alg = r.u16()
        symmetric = None
        if sym_alg != TPM_ALG_NULL:
            symmetric = (sym_alg, r.u16(), r.u16())
        pset = r.u16()
        unique = r.tpm2b(MAX_MLKEM_PUB)
        return Public(kind, name_alg, attributes, auth_policy, pset, symmetric=symmetric, unique=unique)
    raise TpmError(at_param(TPM_RC_TYPE, r.n), "not a post-quantum key type")


def check_template(pub: Public, n: int) -> None:
    """Attribute rules of Part 1/2 for a key this lab can create (error on parameter n)."""
    a = pub.attributes
    if pub.type in (TPM_ALG_MLDSA, TPM_ALG_HASH_MLDSA):
        if not a & SIGN or a & DECRYPT:
            raise TpmError(at_param(TPM_RC_ATTRIBUTES, n), "an ML-DSA key signs and only signs")
    else:
        if not a & DECRYPT or a & SIGN:
            raise TpmError(at_param(TPM_RC_ATTRIBUTES, n), "an ML-KEM key decrypts and only decrypts")
        if a & RESTRICTED or pub.symmetric is not None:
            # a restricted ML-KEM key is a storage parent / EK: not provided by this lab
            raise TpmError(at_param(TPM_RC_SYMMETRIC if pub.symmetric else TPM_RC_ATTRIBUTES, n),
                           "restricted (storage) ML-KEM keys are not supported")
    if not a & SENSITIVE_DATA_ORIGIN:
        raise TpmError(at_param(TPM_RC_ATTRIBUTES, n), "sensitiveDataOrigin must be SET")
    if (a & FIXED_TPM) and not (a & FIXED_PARENT):
        raise TpmError(at_param(TPM_RC_ATTRIBUTES, n), "fixedTPM requires fixedParent")
    if pub.type == TPM_ALG_MLDSA and a & RESTRICTED and pub.allow_external_mu:
        raise TpmError(at_param(TPM_RC_ATTRIBUTES, n), "a restricted key cannot sign an external mu")


def check_public_only(pub: Public, n: int) -> None:
    """Attribute rules for a public key loaded alone: an ML-DSA key signs, an ML-KEM key decrypts (Part 2)."""
    a = pub.attributes
    if pub.type in (TPM_ALG_MLDSA, TPM_ALG_HASH_MLDSA):
        if not a & SIGN or a & DECRYPT:
            raise TpmError(at_param(TPM_RC_ATTRIBUTES, n), "an ML-DSA key signs and only signs")
    elif not a & DECRYPT or a & SIGN or a & RESTRICTED:
        raise TpmError(at_param(TPM_RC_ATTRIBUTES, n), "an ML-KEM public key is an unrestricted decryption key")
    elif pub.symmetric is not None:
        raise TpmError(at_param(TPM_RC_SYMMETRIC, n), "an unrestricted ML-KEM key has no symmetric algorithm")


@dataclass(frozen=True)
class SensitiveCreate:
    user_auth: bytes
    data: bytes


def parse_sensitive_create(r: Reader) -> SensitiveCreate:
    """TPM2B_SENSITIVE_CREATE {userAuth, data}."""
    inner = Reader(r.tpm2b(2 + MAX_AUTH + 2 + 256)).param(r.n)
    auth = inner.tpm2b(MAX_AUTH)
    data = inner.tpm2b(256)
    inner.end()
    return SensitiveCreate(auth.rstrip(b"\x00"), data)


def sensitive_create(user_auth: bytes = b"", data: bytes = b"") -> bytes:
    return tpm2b(tpm2b(user_auth) + tpm2b(data))


def parse_pcr_selection(r: Reader) -> list[tuple[int, bytes]]:
    count = r.u32()
    if count > 8:
        raise TpmError(at_param(TPM_RC_VALUE, r.n), "too many PCR banks")
    out = []
    for _ in range(count):
        alg = r.u16()
        size = r.u8()
        out.append((alg, r.take(size)))
    return out


def signature(pub: Public, sig: bytes) -> bytes:
    """TPMT_SIGNATURE for a key of ``pub``'s type."""
    if pub.type == TPM_ALG_HASH_MLDSA:
        return u16(TPM_ALG_HASH_MLDSA) + u16(pub.hash_alg) + tpm2b(sig)
    return u16(TPM_ALG_MLDSA) + tpm2b(sig)


def parse_signature(r: Reader, pub: Public) -> bytes:
    """The signature bytes of a TPMT_SIGNATURE that must match ``pub``'s scheme."""
    alg = r.u16()
    if alg not in (TPM_ALG_MLDSA, TPM_ALG_HASH_MLDSA):
        raise TpmError(at_param(TPM_RC_SCHEME, r.n), "not an ML-DSA signature")
    if alg != pub.type:
        raise TpmError(at_param(TPM_RC_SCHEME, r.n), "signature scheme differs from the key's")
    if alg == TPM_ALG_HASH_MLDSA and r.u16() != pub.hash_alg:
        raise TpmError(at_param(TPM_RC_HASH, r.n), "pre-hash differs from the key's")
    return r.tpm2b(MAX_MLDSA_SIG)


def parse_signature_bytes(data: bytes) -> tuple[int, int | None, bytes]:
    """(sigAlg, hash or None, signature) of a TPMT_SIGNATURE (client side)."""
    r = Reader(data)
    alg = r.u16()
    h = r.u16() if alg == TPM_ALG_HASH_MLDSA else None
    return alg, h, r.tpm2b()


def null_verified_ticket(tag: int, metadata_alg: int | None = None) -> bytes:
    """A TPMT_TK_VERIFIED of the NULL hierarchy (1.85 layout: tag, hierarchy, [metadata], hmac)."""
    meta = u16(metadata_alg) if tag == TPM_ST_DIGEST_VERIFIED else b""
    return u16(tag) + u32(TPM_RH_NULL) + meta + tpm2b(b"")


def null_hashcheck_ticket() -> bytes:
    return u16(TPM_ST_HASHCHECK) + u32(TPM_RH_NULL) + tpm2b(b"")


def creation_data(parent_name: bytes, parent_qn: bytes, outside: bytes, pcrs: list[tuple[int, bytes]]) -> bytes:
    """TPMS_CREATION_DATA; pcrDigest is empty because selections must select nothing (see handlers).

    A hierarchy's Name is its 4-byte handle, whose nameAlg is TPM_ALG_NULL.
    """
    sel = u32(len(pcrs)) + b"".join(u16(a) + bytes([len(m)]) + m for a, m in pcrs)
    parent_alg = struct.unpack(">H", parent_name[:2])[0] if len(parent_name) > 4 else TPM_ALG_NULL
    return (sel + tpm2b(b"") + b"\x00" + u16(parent_alg) + tpm2b(parent_name) + tpm2b(parent_qn)
            + tpm2b(outside))


def creation_tail(name_alg: int, cdata: bytes) -> bytes:
    """creationData (TPM2B), creationHash, creationTicket (a NULL ticket: see README)."""
    return (tpm2b(cdata) + tpm2b(digest(name_alg, cdata))
            + u16(TPM_ST_CREATION) + u32(TPM_RH_NULL) + tpm2b(b""))

