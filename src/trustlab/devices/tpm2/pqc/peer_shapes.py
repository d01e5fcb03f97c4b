"""Reading a TPM's answers into *shapes* for a differential check (:mod:`.peer_check`).

A shape keeps every structure field whose value the spec fixes (tags,
algorithm IDs, attributes, parameter sets, sizes) and random bytes by their
size only; :func:`verifies` checks a signature with cryptography (OpenSSL),
never with either TPM. A ticket's hierarchy and HMAC are read past: ours are
NULL tickets (the hierarchy proof values live inside swtpm; see the README).
"""

from __future__ import annotations

import hashlib
import struct

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import Prehashed, encode_dss_signature

from trustlab.devices.tpm2.commands import TPM_ALG_ECC
from trustlab.devices.tpm2.extensions import Reader, TpmError
from trustlab.devices.tpm2.pqc import keys
from trustlab.devices.tpm2.pqc import structures as S

TPM_ALG_ECDSA = 0x0018


def parameters(response: bytes, n_handles: int = 0) -> Reader:
    pos = 10 + 4 * n_handles
    if response[:2] == b"\x80\x02":
        (size,) = struct.unpack_from(">I", response, pos)
        return Reader(response[pos + 4:pos + 4 + size])
    return Reader(response, pos)


def public_shape(area: bytes) -> dict:
    """TPMT_PUBLIC: every field by value, ``unique`` by size (ECC: the point's coordinate sizes)."""
    r = Reader(area)
    kind, name_alg, attributes, policy = r.u16(), r.u16(), r.u32(), r.tpm2b()
    shape = {"type": kind, "nameAlg": name_alg, "attributes": attributes, "authPolicy": len(policy)}
    if kind == TPM_ALG_ECC:  # P-256: unique is the point, x and y as TPM2Bs of 32 bytes (68 bytes)
        shape["parameters"] = r.take(len(area) - r.pos - 68).hex()
        shape["unique"] = [len(r.tpm2b()), len(r.tpm2b())]
        return shape
    r.pos = 0
    pub = S.parse_public(r)
    shape["parameters"] = pub.with_unique(b"").marshal()[10 + len(policy):-2].hex()
    shape["unique"] = len(pub.unique)
    return shape


def signature_shape(r: Reader) -> dict:
    alg = r.u16()
    if alg in (S.TPM_ALG_MLDSA, S.TPM_ALG_HASH_MLDSA):
        hash_alg = r.u16() if alg == S.TPM_ALG_HASH_MLDSA else None
        return {"sigAlg": alg, "hash": hash_alg, "size": len(r.tpm2b())}
    hash_alg = r.u16()
    if alg == TPM_ALG_ECDSA:
        return {"sigAlg": alg, "hash": hash_alg, "r": len(r.tpm2b()), "s": len(r.tpm2b())}
    return {"sigAlg": alg, "hash": hash_alg, "rest": len(r.rest())}


def ticket_shape(r: Reader) -> dict:
    """tag and (TPM_ST_DIGEST_VERIFIED) metadata; hierarchy and HMAC are read past (see module doc)."""
    tag = r.u16()
    r.u32()
    meta = r.u16() if tag == S.TPM_ST_DIGEST_VERIFIED else None
    r.tpm2b()
    return {"tag": tag, "metadata": meta}


def creation_shape(r: Reader) -> dict:
    """TPMS_CREATION_DATA's layout, creationHash size, creationTicket tag, and the Name's algorithm/size."""
    cdata = Reader(r.tpm2b())
    pcrs = cdata.u32()
    for _ in range(pcrs):
        cdata.u16(), cdata.take(cdata.u8())
    shape = {"pcrSelect": pcrs, "pcrDigest": len(cdata.tpm2b()), "locality": cdata.u8(),
             "parentNameAlg": cdata.u16(), "parentName": len(cdata.tpm2b()),
             "parentQualifiedName": len(cdata.tpm2b()), "outsideInfo": len(cdata.tpm2b())}
    shape["creationHash"] = len(r.tpm2b())
    shape["creationTicket"] = r.u16()
    r.u32(), r.tpm2b()
    if r.pos < len(r.data):  # TPM2_CreatePrimary's answer ends with the Name (TPM2_Create's does not)
        name = r.tpm2b()
        shape["name"] = [name[:2].hex(), len(name)]
    return shape


def skip2b(r: Reader) -> Reader:
    """``r`` read past one TPM2B (a TPM2B_PUBLIC, a ciphertext...), to shape the field after it."""
    r.tpm2b()
    return r


def attest_shape(attest: bytes) -> dict:
    """TPMS_ATTEST of a quote: magic, type, field sizes, the PCR selection (clock and versions vary)."""
    r = Reader(attest)
    shape = {"magic": r.u32(), "type": r.u16(), "qualifiedSigner": len(r.tpm2b()), "extraData": len(r.tpm2b())}
    r.take(17 + 8)  # clockInfo, firmwareVersion
    count = r.u32()
    shape["pcrSelect"] = [[r.u16(), r.take(r.u8()).hex()] for _ in range(count)]
    shape["pcrDigest"] = len(r.tpm2b())
    return shape


def _pq_public(area: bytes) -> S.Public:
    r = Reader(area)
    return S.parse_public(r)


def verifies(area: bytes, signature: bytes, *, message: bytes | None = None, context: bytes = b"",
             digest: bytes | None = None) -> bool:
    """Does ``signature`` (TPMU_SIGNATURE bytes) verify under the key of ``area``? (cryptography, not a TPM)"""
    r = Reader(signature)
    alg = r.u16()
    try:
        if alg == TPM_ALG_ECDSA:
            r.u16()
            sig = encode_dss_signature(int.from_bytes(r.tpm2b(), "big"), int.from_bytes(r.tpm2b(), "big"))
            p = Reader(area)
            p.pos = len(area) - 68
            point = ec.EllipticCurvePublicNumbers(int.from_bytes(p.tpm2b(), "big"), int.from_bytes(p.tpm2b(), "big"),
                                                  ec.SECP256R1()).public_key()
            if digest is None:
                digest = hashlib.sha256(message).digest()
            point.verify(sig, digest, ec.ECDSA(Prehashed(hashes.SHA256())))
            return True
        pub = _pq_public(area)
        key = keys.parameter_set(S.TPM_ALG_MLDSA, pub.parameter_set).public_cls.from_public_bytes(pub.unique)
        if alg == S.TPM_ALG_HASH_MLDSA:
            hash_alg = r.u16()
            ph = digest if digest is not None else hashlib.new(S.HASHES[hash_alg], message).digest()
            key.verify_mu(r.tpm2b(), keys.prehash_mu(keys.tr(pub.unique), context, hash_alg, ph))
        else:
            key.verify(r.tpm2b(), message, context)
        return True
    except (InvalidSignature, TpmError, ValueError, KeyError, AttributeError):
        return False
