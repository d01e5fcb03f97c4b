"""The scenarios of the differential check: 1.85 command frames built from the answers they get.

Each scenario takes a :class:`.peer_session.Session` (one TPM) and builds its
frames from that TPM's own answers (handles, public keys), so it runs
unchanged on trustlab serve and on wolfTPM's fwTPM.
"""

from __future__ import annotations

import hashlib
import struct
from typing import Callable

from trustlab.devices.tpm2.commands import TPM_ALG_ECC, TPM_ECC_NIST_P256
from trustlab.devices.tpm2.extensions import Reader
from trustlab.devices.tpm2.pqc import structures as S
from trustlab.devices.tpm2.pqc.peer_shapes import (
    TPM_ALG_ECDSA,
    attest_shape,
    creation_shape,
    parameters,
    public_shape,
    signature_shape,
    skip2b,
    ticket_shape,
    verifies,
)
from trustlab.devices.tpm2.pqc.peer_session import PW, Session

GENERATED = struct.pack(">I", 0xFF544347)
SIGNER = S.FIXED_TPM | S.FIXED_PARENT | S.SENSITIVE_DATA_ORIGIN | S.USER_WITH_AUTH | S.SIGN
KEM = S.FIXED_TPM | S.FIXED_PARENT | S.SENSITIVE_DATA_ORIGIN | S.USER_WITH_AUTH | S.DECRYPT


def mldsa_area(pset: int, *, hash_alg: int | None = None, attributes: int = SIGNER) -> bytes:
    if hash_alg is None:
        return S.Public(S.TPM_ALG_MLDSA, S.TPM_ALG_SHA256, attributes, b"", pset).marshal()
    return S.Public(S.TPM_ALG_HASH_MLDSA, S.TPM_ALG_SHA256, attributes, b"", pset, hash_alg=hash_alg).marshal()


def ecc_area() -> bytes:
    return (S.u16(TPM_ALG_ECC) + S.u16(S.TPM_ALG_SHA256) + S.u32(SIGNER) + S.tpm2b(b"") + S.u16(S.TPM_ALG_NULL)
            + S.u16(TPM_ALG_ECDSA) + S.u16(S.TPM_ALG_SHA256) + S.u16(TPM_ECC_NIST_P256) + S.u16(S.TPM_ALG_NULL)
            + S.tpm2b(b"") + S.tpm2b(b""))


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
                                       "ciphertext": len(skip2b(parameters(rsp)).tpm2b())})
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


def cross_key(s: Session) -> None:
    """Errors that need two keys: a sequence completed with another key, a KEM operation on a signing key."""
    s.send("CreatePrimary, userAuth longer than the nameAlg digest",
           S.frame(0x131, [S.TPM_RH_OWNER], S.sensitive_create(b"\x01" * 48) + S.tpm2b(mldsa_area(1))
                   + S.tpm2b(b"") + S.u32(0), [PW]))
    a, _pa = s.create_primary("CreatePrimary ML-DSA-44", mldsa_area(1))
    b, _pb = s.create_primary("CreatePrimary ML-DSA-65", mldsa_area(2))
    if a is None or b is None:
        return
    response = s.send("SignSequenceStart", S.frame(0x1AA, [a], S.tpm2b(b"") + S.tpm2b(b"")))
    if s.ok(response):
        seq = struct.unpack_from(">I", response, 10)[0]
        s.send("SignSequenceComplete with another key", S.frame(0x1A4, [seq, b], S.tpm2b(b"m"), [PW, PW]))
        s.flush(seq)  # wolfTPM ends a sequence whose Complete failed; trustlab keeps it (either is allowed)
    s.send("SignSequenceStart, auth longer than the nameAlg digest",
           S.frame(0x1AA, [a], S.tpm2b(b"\x01" * 48) + S.tpm2b(b"")))
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
                          lambda rsp: {"digest": len(Reader(rsp, 10).tpm2b()),
                                       **ticket_shape(skip2b(Reader(rsp, 10)))})
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
                          lambda rsp: {"public": public_shape(skip2b(parameters(rsp)).tpm2b()),
                                       **creation_shape(skip2b(skip2b(parameters(rsp))))})
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
               lambda rsp: {"matches": kem.decapsulate(skip2b(parameters(rsp)).tpm2b()) == parameters(rsp).tpm2b()})
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
