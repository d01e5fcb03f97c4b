"""The same 1.85 command frames sent to two TPMs, and the shape of every answer, for a differential check.

A *peer* is another 1.85 implementation - wolfTPM's fwTPM (``fwtpm_server``)
over the MS-simulator protocol - and *ours* is ``trustlab serve``. Each
scenario builds its frames from the answers it got (handles, public keys),
so it runs unchanged on both. A step records the command, the response code
and the *shape* of a successful answer: every structure field whose value is
fixed by the spec (tags, algorithm IDs, attributes, parameter sets, sizes),
random bytes by their size only, and whether each signature verifies and
each shared secret matches - checked here with cryptography (OpenSSL), never
by either TPM.

Compared: the response code with a format-one code's parameter/handle number
stripped (wolfTPM's fwTPM answers unnumbered codes), and the shape. A
ticket's hierarchy and HMAC are left out of the shape: ours are NULL tickets
(the hierarchy proof values live inside swtpm; see the README).

:func:`known` names the differences that are understood, each with its reason;
``tools/wolftpm_differential.py`` runs both TPMs, ``tests/tpm2/test_pqc_peer_check.py``
checks ours against a recorded run of the peer.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import asdict, dataclass
from typing import Any, Callable

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import Prehashed, encode_dss_signature

from trustlab.devices.tpm2.extensions import Reader, TpmError
from trustlab.errors import TrustlabError
from trustlab.devices.tpm2.pqc import keys
from trustlab.devices.tpm2.pqc import structures as S

TPM_ALG_ECC = 0x0023
TPM_ALG_ECDSA = 0x0018
TPM_ECC_NIST_P256 = 0x0003
GENERATED = struct.pack(">I", 0xFF544347)
SIGNER = S.FIXED_TPM | S.FIXED_PARENT | S.SENSITIVE_DATA_ORIGIN | S.USER_WITH_AUTH | S.SIGN
KEM = S.FIXED_TPM | S.FIXED_PARENT | S.SENSITIVE_DATA_ORIGIN | S.USER_WITH_AUTH | S.DECRYPT
PW = S.password()


@dataclass
class Step:
    scenario: str
    label: str
    code: int
    rc: int
    shape: Any = None


def normalized(rc: int) -> int:
    """A response code without the handle/parameter/session number of a format-one code."""
    return rc & 0xBF if rc & 0x80 else rc


# ---- reading answers ----------------------------------------------------------------


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


# ---- one TPM ----------------------------------------------------------------------


class Session:
    """Sends a scenario's frames to one TPM and records a :class:`Step` per command."""

    def __init__(self, connect: Callable[[], Callable[[bytes], bytes]]) -> None:
        self.connect = connect
        self.transact = connect()
        self.steps: list[Step] = []
        self.scenario = ""
        self.reconnects = 0

    def _exchange(self, command: bytes) -> bytes:
        """One command; a TPM that ended the connection (a frame it could not take) is reconnected once."""
        try:
            return self.transact(command)
        except (TrustlabError, OSError):
            self.reconnects += 1
            self.transact = self.connect()
            return self.transact(command)

    def send(self, label: str, command: bytes, shape: Callable[[bytes], Any] | None = None) -> bytes:
        response = self._exchange(command)
        rc = S.response_code(response)
        value = None
        if rc == 0 and shape is not None:
            try:
                value = shape(response)
            except (TpmError, struct.error, ValueError, IndexError) as exc:
                value = {"unreadable": str(exc)}
        self.steps.append(Step(self.scenario, label, struct.unpack_from(">I", command, 6)[0], rc, value))
        return response

    def ok(self, response: bytes) -> bool:
        return S.response_code(response) == 0

    # -- commands both scenarios use

    def create_primary(self, label: str, area: bytes) -> tuple[int | None, bytes]:
        """(handle, outPublic area) of a new owner-hierarchy primary, (None, b"") if refused."""
        response = self.send(label, S.frame(0x131, [S.TPM_RH_OWNER], S.sensitive_create() + S.tpm2b(area)
                                            + S.tpm2b(b"") + S.u32(0), [PW]),
                             lambda rsp: {"public": public_shape(parameters(rsp, 1).tpm2b()),
                                          **creation_shape(_after_public(parameters(rsp, 1)))})
        if not self.ok(response):
            return None, b""
        return struct.unpack_from(">I", response, 10)[0], parameters(response, 1).tpm2b()

    def flush(self, handle: int | None) -> None:
        if handle is not None:
            self._exchange(S.frame(0x165, [], S.u32(handle)))


def _after_public(r: Reader) -> Reader:
    r.tpm2b()
    return r


# ---- checking what a TPM signed ----------------------------------------------------------


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


def mldsa_area(pset: int, *, hash_alg: int | None = None, attributes: int = SIGNER) -> bytes:
    if hash_alg is None:
        return S.Public(S.TPM_ALG_MLDSA, S.TPM_ALG_SHA256, attributes, b"", pset).marshal()
    return S.Public(S.TPM_ALG_HASH_MLDSA, S.TPM_ALG_SHA256, attributes, b"", pset, hash_alg=hash_alg).marshal()


def ecc_area() -> bytes:
    return (S.u16(TPM_ALG_ECC) + S.u16(S.TPM_ALG_SHA256) + S.u32(SIGNER) + S.tpm2b(b"") + S.u16(S.TPM_ALG_NULL)
            + S.u16(TPM_ALG_ECDSA) + S.u16(S.TPM_ALG_SHA256) + S.u16(TPM_ECC_NIST_P256) + S.u16(S.TPM_ALG_NULL)
            + S.tpm2b(b"") + S.tpm2b(b""))


# ---- scenarios ------------------------------------------------------------------------------


def capabilities(s: Session) -> None:
    def listed(width: int, wanted: range):
        def shape(rsp: bytes):
            r = Reader(rsp, 10)
            r.u8(), r.u32()
            entries = [r.take(width) for _ in range(r.u32())]
            key = (lambda e: struct.unpack(">H", e[:2])[0]) if width == 6 else (lambda e: struct.unpack(">I", e[:4])[0])
            return {f"{key(e) & 0xFFFF:#x}": e.hex() for e in entries if key(e) & 0xFFFF in wanted}
        return shape

    s.send("algorithms 0xA0-0xA2", S.frame(0x17A, [], S.u32(0) + S.u32(0xA0) + S.u32(3)), listed(6, range(0xA0, 0xA3)))
    s.send("commands 0x1A3-0x1AA", S.frame(0x17A, [], S.u32(2) + S.u32(0x1A3) + S.u32(8)),
           listed(4, range(0x1A3, 0x1AB)))
    s.send("TPM_PT_ML_PARAMETER_SETS", S.frame(0x17A, [], S.u32(6) + S.u32(0x131) + S.u32(1)),
           listed(8, range(0x131, 0x132)))
    for pset in (1, 2, 3, 7):
        s.send(f"TestParms ML-DSA set {pset}", S.frame(0x18A, [], S.u16(S.TPM_ALG_MLDSA) + S.u16(pset) + b"\x00"))
    for pset in (1, 2, 3):
        s.send(f"TestParms ML-KEM set {pset}", S.frame(0x18A, [], S.u16(S.TPM_ALG_MLKEM) + S.u16(S.TPM_ALG_NULL)
                                                       + S.u16(pset)))
    s.send("TestParms ML-DSA allowExternalMu", S.frame(0x18A, [], S.u16(S.TPM_ALG_MLDSA) + S.u16(2) + b"\x01"))


def _sign_sequence(s: Session, key: int, area: bytes, label: str, message: bytes, context: bytes = b"") -> bytes:
    """SignSequenceStart, one SequenceUpdate (all but the last 16 bytes), SignSequenceComplete; the TPMT_SIGNATURE."""
    response = s.send(f"{label}: SignSequenceStart", S.frame(0x1AA, [key], S.tpm2b(b"") + S.tpm2b(context)),
                      lambda rsp: {"handles": 1})
    if not s.ok(response):
        return b""
    seq = struct.unpack_from(">I", response, 10)[0]
    for i, chunk in enumerate(_chunks(message[:-16])):
        s.send(f"{label}: SequenceUpdate {i + 1}", S.frame(0x15C, [seq], S.tpm2b(chunk), [PW]))
    response = s.send(f"{label}: SignSequenceComplete", S.frame(0x1A4, [seq, key], S.tpm2b(message[-16:]), [PW, PW]),
                      lambda rsp: {**signature_shape(parameters(rsp)),
                                   "verifies": verifies(area, parameters(rsp).rest(), message=message,
                                                        context=context)})
    return parameters(response).rest() if s.ok(response) else b""


def _chunks(data: bytes) -> list[bytes]:
    """TPM2B_MAX_BUFFER pieces (1024 bytes, the size both TPMs take)."""
    return [data[i:i + S.MAX_BUFFER] for i in range(0, len(data), S.MAX_BUFFER)]


def _verify_sequence(s: Session, key: int, label: str, message: bytes, signature: bytes, context: bytes = b"") -> None:
    response = s.send(f"{label}: VerifySequenceStart",
                      S.frame(0x1A9, [key], S.tpm2b(b"") + S.tpm2b(b"") + S.tpm2b(context)), lambda rsp: {"handles": 1})
    if not s.ok(response):
        return
    seq = struct.unpack_from(">I", response, 10)[0]
    for i, chunk in enumerate(_chunks(message)):
        s.send(f"{label}: SequenceUpdate {i + 1}", S.frame(0x15C, [seq], S.tpm2b(chunk), [PW]))
    s.send(f"{label}: VerifySequenceComplete", S.frame(0x1A3, [seq, key], signature, [PW]),
           lambda rsp: ticket_shape(parameters(rsp)))


def mldsa(pset: int) -> Callable[[Session], None]:
    def scenario(s: Session) -> None:
        area = mldsa_area(pset)
        key, public = s.create_primary("CreatePrimary", area)
        if key is None:
            return
        s.send("ReadPublic", S.frame(0x173, [key], b""), lambda rsp: {"public": public_shape(Reader(rsp, 10).tpm2b())})
        message = bytes(range(256)) * 3
        sig = _sign_sequence(s, key, public, "sign", message, b"ctx")
        if sig:
            _verify_sequence(s, key, "verify", message, sig, b"ctx")
            bad = sig[:-1] + bytes([sig[-1] ^ 1])
            _verify_sequence(s, key, "verify tampered", message, bad, b"ctx")
        s.send("SignDigest, allowExternalMu CLEAR", S.frame(0x1A6, [key], S.tpm2b(b"") + S.tpm2b(b"\0" * 64)
                                                              + S.null_hashcheck_ticket(), [PW]))
        response = s.send("SignSequenceStart, then Complete without session",
                          S.frame(0x1AA, [key], S.tpm2b(b"") + S.tpm2b(b"")), lambda rsp: {"handles": 1})
        if s.ok(response):
            seq = struct.unpack_from(">I", response, 10)[0]
            s.send("SignSequenceComplete without session", S.frame(0x1A4, [seq, key], S.tpm2b(b"")))
            s.flush(seq)
        s.flush(key)
    return scenario


def hash_mldsa(pset: int, hash_alg: int) -> Callable[[Session], None]:
    def scenario(s: Session) -> None:
        key, public = s.create_primary("CreatePrimary", mldsa_area(pset, hash_alg=hash_alg))
        if key is None:
            return
        digest = hashlib.new(S.HASHES[hash_alg], b"document").digest()
        response = s.send("SignDigest", S.frame(0x1A6, [key], S.tpm2b(b"c") + S.tpm2b(digest)
                                                + S.null_hashcheck_ticket(), [PW]),
                          lambda rsp: {**signature_shape(parameters(rsp)),
                                       "verifies": verifies(public, parameters(rsp).rest(), digest=digest,
                                                            context=b"c")})
        if s.ok(response):
            sig = parameters(response).rest()
            s.send("VerifyDigestSignature", S.frame(0x1A5, [key], S.tpm2b(b"c") + S.tpm2b(digest) + sig),
                   lambda rsp: ticket_shape(parameters(rsp)))
            s.send("VerifyDigestSignature, other context",
                   S.frame(0x1A5, [key], S.tpm2b(b"d") + S.tpm2b(digest) + sig))
        s.send("SignDigest, digest of the wrong size", S.frame(0x1A6, [key], S.tpm2b(b"") + S.tpm2b(digest[:20])
                                                               + S.null_hashcheck_ticket(), [PW]))
        s.send("SignDigest, validation not a hashcheck", S.frame(0x1A6, [key], S.tpm2b(b"") + S.tpm2b(digest)
                                                                 + S.u16(0x8022) + S.u32(S.TPM_RH_NULL)
                                                                 + S.tpm2b(b""), [PW]))
        s.send("SignDigest without session", S.frame(0x1A6, [key], S.tpm2b(b"") + S.tpm2b(digest)
                                                      + S.null_hashcheck_ticket()))
        message = b"streamed " * 200
        sig = _sign_sequence(s, key, public, "sign", message)
        if sig:
            _verify_sequence(s, key, "verify", message, sig)
            response = s.send("VerifySequenceStart, abandoned", S.frame(0x1A9, [key], S.tpm2b(b"") + S.tpm2b(b"")
                                                                        + S.tpm2b(b"")))
            if s.ok(response):
                s.send("FlushContext of a sequence", S.frame(0x165, [], response[10:14]))
        s.flush(key)
    return scenario


def mlkem(pset: int) -> Callable[[Session], None]:
    def scenario(s: Session) -> None:
        area = S.Public(S.TPM_ALG_MLKEM, S.TPM_ALG_SHA256, KEM, b"", pset).marshal()
        key, _public = s.create_primary("CreatePrimary", area)
        if key is None:
            return
        response = s.send("Encapsulate", S.frame(0x1A7, [key], b""),
                          lambda rsp: {"sharedSecret": len(parameters(rsp).tpm2b()),
                                       "ciphertext": len(_skip2b(parameters(rsp)).tpm2b())})
        if s.ok(response):
            r = parameters(response)
            shared, ct = r.tpm2b(), r.tpm2b()
            s.send("Decapsulate", S.frame(0x1A8, [key], S.tpm2b(ct), [PW]),
                   lambda rsp: {"sharedSecret": len(parameters(rsp).tpm2b()),
                                "matches": parameters(rsp).tpm2b() == shared})
            tampered = ct[:-1] + bytes([ct[-1] ^ 1])
            s.send("Decapsulate tampered (implicit rejection)", S.frame(0x1A8, [key], S.tpm2b(tampered), [PW]),
                   lambda rsp: {"sharedSecret": len(parameters(rsp).tpm2b()),
                                "matches": parameters(rsp).tpm2b() == shared})
            s.send("Encapsulate with a password session", S.frame(0x1A7, [key], b"", [PW]),
                   lambda rsp: {"sharedSecret": len(parameters(rsp).tpm2b())})
        s.send("Decapsulate without session", S.frame(0x1A8, [key], S.tpm2b(b"\0" * 32)))
        s.send("SignDigest with a KEM key", S.frame(0x1A6, [key], S.tpm2b(b"") + S.tpm2b(b"\0" * 32)
                                                    + S.null_hashcheck_ticket(), [PW]))
        s.send("SignSequenceStart with a KEM key", S.frame(0x1AA, [key], S.tpm2b(b"") + S.tpm2b(b"")))
        s.flush(key)
    return scenario


def _skip2b(r: Reader) -> Reader:
    r.tpm2b()
    return r


def cross_key(s: Session) -> None:
    """Errors that need two keys: a sequence completed with another key, a KEM operation on a signing key."""
    a, _pa = s.create_primary("CreatePrimary ML-DSA-44", mldsa_area(1))
    b, _pb = s.create_primary("CreatePrimary ML-DSA-65", mldsa_area(2))
    if a is None or b is None:
        return
    response = s.send("SignSequenceStart", S.frame(0x1AA, [a], S.tpm2b(b"") + S.tpm2b(b"")))
    if s.ok(response):
        seq = struct.unpack_from(">I", response, 10)[0]
        s.send("SignSequenceComplete with another key", S.frame(0x1A4, [seq, b], S.tpm2b(b"m"), [PW, PW]))
        s.flush(seq)  # wolfTPM ends a sequence whose Complete failed; trustlab keeps it (either is allowed)
    s.send("Encapsulate with an ML-DSA key", S.frame(0x1A7, [a], b""))
    s.send("VerifySequenceStart with a hint", S.frame(0x1A9, [a], S.tpm2b(b"") + S.tpm2b(b"R") + S.tpm2b(b"")))
    s.send("VerifyDigestSignature, HashML-DSA signature on an ML-DSA key",
           S.frame(0x1A5, [a], S.tpm2b(b"") + S.tpm2b(b"\0" * 32) + S.u16(S.TPM_ALG_HASH_MLDSA)
                   + S.u16(S.TPM_ALG_SHA256) + S.tpm2b(b"\0" * 2420)))
    s.send("FlushContext of a sequence-free handle", S.frame(0x165, [], S.u32(0x80FFFFFE)))
    s.flush(a)
    s.flush(b)


def restricted(s: Session) -> None:
    """Restricted ML-DSA keys: hash-check tickets for SignDigest, TPM_GENERATED_VALUE for sequences."""
    area = mldsa_area(2, hash_alg=S.TPM_ALG_SHA256, attributes=SIGNER | S.RESTRICTED)
    key, public = s.create_primary("CreatePrimary restricted HashML-DSA-65", area)
    if key is not None:
        digest = hashlib.sha256(b"hashed by the TPM").digest()
        s.send("SignDigest, NULL ticket", S.frame(0x1A6, [key], S.tpm2b(b"") + S.tpm2b(digest)
                                                  + S.null_hashcheck_ticket(), [PW]))
        response = s.send("Hash (owner hierarchy)", S.frame(0x17D, [], S.tpm2b(b"hashed by the TPM")
                                                            + S.u16(S.TPM_ALG_SHA256) + S.u32(S.TPM_RH_OWNER)),
                          lambda rsp: {"digest": len(Reader(rsp, 10).tpm2b()), **ticket_shape(_skip2b(Reader(rsp, 10)))})
        if s.ok(response):
            r = Reader(response, 10)
            r.tpm2b()
            ticket = r.rest()
            s.send("SignDigest, Hash's ticket", S.frame(0x1A6, [key], S.tpm2b(b"") + S.tpm2b(digest) + ticket, [PW]),
                   lambda rsp: {**signature_shape(parameters(rsp)),
                                "verifies": verifies(public, parameters(rsp).rest(), digest=digest)})
            forged = ticket[:-1] + bytes([ticket[-1] ^ 1])
            s.send("SignDigest, forged ticket", S.frame(0x1A6, [key], S.tpm2b(b"") + S.tpm2b(digest) + forged, [PW]))
        s.flush(key)
    key, public = s.create_primary("CreatePrimary restricted ML-DSA-44", mldsa_area(1, attributes=SIGNER
                                                                                     | S.RESTRICTED))
    if key is not None:
        _sign_sequence(s, key, public, "ordinary message", b"an ordinary message " * 10)
        _sign_sequence(s, key, public, "TPM_GENERATED_VALUE message", GENERATED + b"forged" * 10)
        _sign_sequence(s, key, public, "TPM_GENERATED_VALUE message, one buffer", GENERATED + b"x")
        s.flush(key)


def attest_shape(attest: bytes) -> dict:
    """TPMS_ATTEST of a quote: magic, type, field sizes, the PCR selection (clock and versions vary)."""
    r = Reader(attest)
    shape = {"magic": r.u32(), "type": r.u16(), "qualifiedSigner": len(r.tpm2b()), "extraData": len(r.tpm2b())}
    r.take(17 + 8)  # clockInfo, firmwareVersion
    count = r.u32()
    shape["pcrSelect"] = [[r.u16(), r.take(r.u8()).hex()] for _ in range(count)]
    shape["pcrDigest"] = len(r.tpm2b())
    return shape


def quote(s: Session) -> None:
    """TPM2_Quote with a restricted ML-DSA-65 attestation key (the signed message is the TPMS_ATTEST)."""
    key, public = s.create_primary("CreatePrimary restricted ML-DSA-65", mldsa_area(2, attributes=SIGNER
                                                                                    | S.RESTRICTED))
    if key is None:
        return
    selection = S.u32(1) + S.u16(S.TPM_ALG_SHA256) + b"\x03\x07\x00\x00"  # PCRs 0-2

    def shape(rsp: bytes) -> dict:
        r = parameters(rsp)
        attest = r.tpm2b()
        signature = r.rest()
        return {**attest_shape(attest), **signature_shape(Reader(signature)),
                "verifies": verifies(public, signature, message=attest)}
    s.send("Quote PCRs 0-2", S.frame(0x158, [key], S.tpm2b(b"nonce") + S.u16(S.TPM_ALG_NULL) + selection, [PW]),
           shape)
    s.flush(key)


def storage_area() -> bytes:
    """An ECC P-256 storage parent (restricted decryption key, AES-128-CFB)."""
    attributes = (S.FIXED_TPM | S.FIXED_PARENT | S.SENSITIVE_DATA_ORIGIN | S.USER_WITH_AUTH | S.NO_DA
                  | S.RESTRICTED | S.DECRYPT)
    return (S.u16(TPM_ALG_ECC) + S.u16(S.TPM_ALG_SHA256) + S.u32(attributes) + S.tpm2b(b"")
            + S.u16(S.TPM_ALG_AES) + S.u16(128) + S.u16(S.TPM_ALG_CFB) + S.u16(S.TPM_ALG_NULL)
            + S.u16(TPM_ECC_NIST_P256) + S.u16(S.TPM_ALG_NULL) + S.tpm2b(b"") + S.tpm2b(b""))


def ordinary(s: Session) -> None:
    """TPM2_Create and TPM2_Load of ML-DSA-65 and ML-KEM-768 keys under an ECC storage key (blobs are opaque)."""
    parent, _area = s.create_primary("CreatePrimary ECC storage key", storage_area())
    if parent is None:
        return
    for name, area in (("ML-DSA-65", mldsa_area(2)),
                       ("ML-KEM-768", S.Public(S.TPM_ALG_MLKEM, S.TPM_ALG_SHA256, KEM, b"", 2).marshal())):
        password = b"" if name.startswith("ML-DSA") else b"pw"
        response = s.send(f"Create {name}", S.frame(0x153, [parent], S.sensitive_create(password) + S.tpm2b(area)
                                                   + S.tpm2b(b"") + S.u32(0), [PW]),
                          lambda rsp: {"public": public_shape(_skip2b(parameters(rsp)).tpm2b()),
                                       **creation_shape(_skip2b(_skip2b(parameters(rsp))))})
        if not s.ok(response):
            continue
        r = parameters(response)
        private, public = r.tpm2b(), r.tpm2b()
        loaded = s.send(f"Load {name}", S.frame(0x157, [parent], S.tpm2b(private) + S.tpm2b(public), [PW]),
                        lambda rsp: {"name": [parameters(rsp, 1).tpm2b()[:2].hex(), len(parameters(rsp, 1).tpm2b())]})
        if not s.ok(loaded):
            continue
        key = struct.unpack_from(">I", loaded, 10)[0]
        s.send(f"ReadPublic {name}", S.frame(0x173, [key], b""),
               lambda rsp: {"public": public_shape(Reader(rsp, 10).tpm2b())})
        if name.startswith("ML-DSA"):
            _sign_sequence(s, key, public, "sign with the loaded key", b"message" * 10)
        else:
            s.send("Decapsulate, wrong password", S.frame(0x1A8, [key], S.tpm2b(b"\0" * 1088), [S.password(b"x")]))
        s.flush(key)
    s.flush(parent)


def external(s: Session) -> None:
    """Public keys made outside the TPM, loaded with TPM2_LoadExternal: verify and encapsulate with them."""
    from cryptography.hazmat.primitives.asymmetric import mldsa as sw_mldsa, mlkem as sw_mlkem

    signer = sw_mldsa.MLDSA65PrivateKey.from_seed_bytes(bytes(range(32)))
    public = S.Public(S.TPM_ALG_MLDSA, S.TPM_ALG_SHA256, S.USER_WITH_AUTH | S.SIGN, b"", 2,
                      unique=signer.public_key().public_bytes_raw()).marshal()
    response = s.send("LoadExternal ML-DSA-65 public key", S.frame(0x167, [], S.u16(0) + S.tpm2b(public)
                                                                     + S.u32(S.TPM_RH_NULL)),
                      lambda rsp: {"name": [Reader(rsp, 14).tpm2b()[:2].hex(), len(Reader(rsp, 14).tpm2b())]})
    if s.ok(response):
        key = struct.unpack_from(">I", response, 10)[0]
        message = b"signed outside the TPM"
        sig = S.u16(S.TPM_ALG_MLDSA) + S.tpm2b(signer.sign(message, b"ctx"))
        started = s.send("VerifySequenceStart", S.frame(0x1A9, [key], S.tpm2b(b"") + S.tpm2b(b"") + S.tpm2b(b"ctx")))
        if s.ok(started):
            seq = struct.unpack_from(">I", started, 10)[0]
            s.send("SequenceUpdate", S.frame(0x15C, [seq], S.tpm2b(message), [PW]))
            s.send("VerifySequenceComplete", S.frame(0x1A3, [seq, key], sig, [PW]),
                   lambda rsp: ticket_shape(parameters(rsp)))
        s.send("SignDigest with a public key only", S.frame(0x1A6, [key], S.tpm2b(b"") + S.tpm2b(b"\0" * 64)
                                                            + S.null_hashcheck_ticket(), [PW]))
        s.flush(key)
    kem = sw_mlkem.MLKEM768PrivateKey.from_seed_bytes(bytes(range(64)))
    public = S.Public(S.TPM_ALG_MLKEM, S.TPM_ALG_SHA256, S.USER_WITH_AUTH | S.DECRYPT, b"", 2,
                      unique=kem.public_key().public_bytes_raw()).marshal()
    response = s.send("LoadExternal ML-KEM-768 public key", S.frame(0x167, [], S.u16(0) + S.tpm2b(public)
                                                                      + S.u32(S.TPM_RH_NULL)))
    if s.ok(response):
        key = struct.unpack_from(">I", response, 10)[0]
        s.send("Encapsulate to it", S.frame(0x1A7, [key], b""),
               lambda rsp: {"matches": kem.decapsulate(_skip2b(parameters(rsp)).tpm2b()) == parameters(rsp).tpm2b()})
        s.send("Decapsulate with a public key only", S.frame(0x1A8, [key], S.tpm2b(b"\0" * 1088), [PW]))
        s.flush(key)


def ecc(s: Session) -> None:
    """An ECC P-256 ECDSA key through the 1.85 digest commands."""
    area = ecc_area()
    key, public = s.create_primary("CreatePrimary ECC P-256", area)
    if key is None:
        return
    digest = hashlib.sha256(b"classical").digest()
    command = S.frame(0x1A6, [key], S.tpm2b(b"") + S.tpm2b(digest) + S.null_hashcheck_ticket(), [PW])
    response = s.send("SignDigest", command,
                      lambda rsp: {**signature_shape(parameters(rsp)),
                                   "verifies": verifies(public, parameters(rsp).rest(), digest=digest)})
    if s.ok(response):
        s.send("VerifyDigestSignature", S.frame(0x1A5, [key], S.tpm2b(b"") + S.tpm2b(digest)
                                                + parameters(response).rest()),
               lambda rsp: ticket_shape(parameters(rsp)))
    s.send("SignDigest, digest of the wrong size", S.frame(0x1A6, [key], S.tpm2b(b"") + S.tpm2b(digest[:20])
                                                           + S.null_hashcheck_ticket(), [PW]))
    message = b"a classical key's message " * 60
    sig = _sign_sequence(s, key, public, "sign", message)
    if sig:
        _verify_sequence(s, key, "verify", message, sig)
    s.flush(key)


SCENARIOS: dict[str, Callable[[Session], None]] = {
    "capabilities": capabilities,
    **{f"ML-DSA-{n}": mldsa(p) for p, n in ((1, 44), (2, 65), (3, 87))},
    **{f"HashML-DSA-{n}/{h}": hash_mldsa(p, a) for p, n, a, h in (
        (1, 44, S.TPM_ALG_SHA256, "SHA-256"), (2, 65, S.TPM_ALG_SHA384, "SHA-384"),
        (3, 87, S.TPM_ALG_SHA512, "SHA-512"))},
    **{f"ML-KEM-{n}": mlkem(p) for p, n in ((1, 512), (2, 768), (3, 1024))},
    "two keys": cross_key,
    "restricted": restricted,
    "Quote": quote,
    "Create/Load": ordinary,
    "LoadExternal": external,
    "ECC": ecc,
}


def run(connect: Callable[[], Callable[[bytes], bytes]], names: list[str] | None = None) -> list[Step]:
    """Every scenario (or those named) against one TPM, after TPM2_Startup(CLEAR) (an error there is ignored).

    ``connect`` opens a connection and returns its transact function.
    """
    session = Session(connect)
    session.transact(S.frame(0x144, [], S.u16(0)))
    for name in names or list(SCENARIOS):
        session.scenario = name
        SCENARIOS[name](session)
    return session.steps


# ---- comparing ------------------------------------------------------------------------------

PARENT_NAME_ALG = ("creationData.parentNameAlg of a primary key: TPM_ALG_NULL in the TCG reference code "
                   "(libtpms; swtpm's own primaries say the same), wolfTPM writes the key's nameAlg")
NO_MLKEM512 = ("ML-KEM-512: pyca/cryptography offers ML-KEM-768/1024 only, so this TPM answers TPM_RC_PARMS "
               "and TPM_PT_ML_PARAMETER_SETS leaves bit 0 clear")
BIG_COMMAND = ("verifying ML-DSA-87 in the TPM is a 4.7 KB command: serve takes 4096-byte commands (libtpms's "
               "buffer) and ends the connection, wolfTPM's PQC build takes 8192")
KNOWN_RULES: list[tuple[Callable[[str, str], bool], str]] = [
    (lambda sc, lb: lb.startswith("CreatePrimary ECC"),
     "the ECC key is swtpm's own (libtpms): its creation data has parentNameAlg TPM_ALG_NULL, the digest of the "
     "empty PCR selection and locality 1, wolfTPM's an empty digest and locality 0"),
    (lambda sc, lb: lb.startswith("CreatePrimary"), PARENT_NAME_ALG),
    (lambda sc, lb: sc == "Create/Load" and lb.startswith("Create "),
     "creationData.parentName of an ordinary key: the parent's Name (nameAlg + digest, 34 bytes) as Part 2 "
     "defines it and libtpms writes it; wolfTPM writes the parent's 4-byte handle"),
    (lambda sc, lb: sc == "ML-KEM-512" or lb == "TestParms ML-KEM set 1", NO_MLKEM512),
    (lambda sc, lb: lb == "TPM_PT_ML_PARAMETER_SETS",
     "the sets each TPM runs: trustlab has no ML-KEM-512 (bit 0) and does external mu (bit 6); wolfTPM has all "
     "six sets and no external mu (wolfCrypt has no mu-direct signing)"),
    (lambda sc, lb: lb == "TestParms ML-DSA allowExternalMu",
     "wolfTPM's fwTPM does not implement external mu and says TPM_RC_EXT_MU, as 1.85 prescribes for such a TPM; "
     "trustlab implements it"),
    (lambda sc, lb: sc == "Quote" and lb.startswith("Quote"),
     "wolfTPM's fwTPM signs no attestation with an ML-DSA key (TPM_RC_KEY); trustlab signs the TPMS_ATTEST "
     "bytes with pure ML-DSA (the README's choice; the quote verifies with OpenSSL)"),
    (lambda sc, lb: "-87" in sc and ("VerifySequenceComplete" in lb or "VerifyDigestSignature" in lb), BIG_COMMAND),
]


def known(scenario: str, label: str) -> str | None:
    """Why ours differs from wolfTPM's fwTPM at this step, if that is understood."""
    for rule, why in KNOWN_RULES:
        if rule(scenario, label):
            return why
    return None


@dataclass
class Row:
    scenario: str
    label: str
    ours_rc: int | None
    peer_rc: int | None
    ours: Any
    peer: Any
    agree: bool
    known: str | None


def compare(ours: list[Step], peer: list[Step]) -> list[Row]:
    """Step by step (matched by scenario and label): same normalized response code and the same shape."""
    index = {(p.scenario, p.label): p for p in peer}
    mine = {(o.scenario, o.label): o for o in ours}
    rows = []
    for key in list(mine) + [k for k in index if k not in mine]:
        o, p = mine.get(key), index.get(key)
        agree = (o is not None and p is not None and normalized(o.rc) == normalized(p.rc) and o.shape == p.shape)
        rows.append(Row(key[0], key[1], o.rc if o else None, p.rc if p else None, o.shape if o else None,
                        p.shape if p else None, agree, None if agree else known(*key)))
    return rows


def steps_to_json(steps: list[Step]) -> list[dict]:
    return [asdict(s) for s in steps]


def steps_from_json(rows: list[dict]) -> list[Step]:
    return [Step(**r) for r in rows]


def tally(rows: list[Row]) -> dict[str, int]:
    """Steps compared, agreeing, differing for a known reason, differing unexplained."""
    return {"compared": len(rows), "agree": sum(r.agree for r in rows),
            "known": sum(not r.agree and r.known is not None for r in rows),
            "unexplained": sum(not r.agree and r.known is None for r in rows)}
