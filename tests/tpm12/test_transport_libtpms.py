"""Transport sessions in both directions: libtpms' signed logs verify with our
``transport_log.verify_release``; ours verify with a verifier written here from
Part 3, 24 (rev 116) that reads only the raw command and response bytes."""

from __future__ import annotations

import hashlib
import shutil
import struct

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, utils

from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12 import key_template, secret
from trustlab.devices.tpm12 import transport_log as L
from trustlab.devices.tpm12.keys import Key12, rsa_public
from trustlab.devices.tpm12.primitives import KeyPool

from .conformance_cases import OAEP_PARMS, frame
from .differential import pair

pytestmark = [pytest.mark.swtpm, pytest.mark.skipif(shutil.which("swtpm") is None, reason="swtpm not installed")]

OWNER, SRK, SIGN, CNT, TRANS = (secret(x) for x in ("owner", "srk", "sign", "counter", "transport"))
ET, EST, REL = C.ORD["TPM_ExecuteTransport"], C.ORD["TPM_EstablishTransport"], C.ORD["TPM_ReleaseTransportSigned"]


def sha1(*parts: bytes) -> bytes:
    return hashlib.sha1(b"".join(parts)).digest()


def u32(v: int) -> bytes:
    return struct.pack(">I", v)


@pytest.fixture(scope="module")
def sides():
    a, b = pair(KeyPool())
    for s in (a, b):
        s.raw(frame(C.ORD["TPM_Startup"], b"\x00\x01"))
        s.raw(frame(C.ORD["TPM_CreateEndorsementKeyPair"], b"\x01" * 20 + OAEP_PARMS.marshal()))
        s.tpm.TPM_TakeOwnership(OWNER, SRK)
        blob = s.tpm.TPM_CreateWrapKey(C.TPM_KH_SRK, SRK, key_template(C.TPM_KEY_SIGNING), SIGN)
        s.ctx["key"] = s.tpm.TPM_LoadKey2(C.TPM_KH_SRK, blob, SRK)
        s.ctx["pub"] = rsa_public(Key12.from_bytes(blob).pub)
        s.ctx["cid"], _ = s.tpm.TPM_CreateCounter(OWNER, CNT)
    yield a, b
    b.target.close()


def run_session(s, nonce: bytes):
    """Establish (logged, exclusive), three wrapped commands (one naming a key), release."""
    tpm, key = s.tpm, s.ctx["key"]
    sign_s, cnt_s = tpm.TPM_OIAP(SIGN), tpm.TPM_OIAP(CNT)  # opened before the exclusive session
    s.record = []
    t = tpm.TPM_EstablishTransport(TRANS, exclusive=True, logged=True)
    t.pubkeys[key] = s.ctx["pub"].public_numbers().n.to_bytes(256, "big")
    with tpm.through(t):
        tpm.TPM_IncrementCounter(s.ctx["cid"], cnt_s)
        tpm.TPM_ReadCounter(s.ctx["cid"])
        tpm.TPM_Sign(key, b"\x33" * 20, sign_s)
    rel = tpm.TPM_ReleaseTransportSigned(key, nonce, t, sign_s)
    record, s.record = s.record, None
    return rel, record


def spec_verify(record, nonce: bytes, public, moduli: dict[int, bytes]) -> None:
    """Recompute transDigest from the raw exchanges (Part 3, 24.1-24.3) and check the signature."""
    digest = b"\x00" * 20
    signature = None
    tick_rate_nonce = b""
    for cmd, rsp in record:
        tag, _size, ordinal = struct.unpack(">HII", cmd[:10])
        assert struct.unpack(">I", rsp[6:10])[0] == 0, f"ordinal {ordinal:#x} failed"
        if ordinal == EST:  # 24.1 steps 8.f-h: LOG_IN over the input, LOG_OUT over the output
            params = cmd[14:]
            out = rsp[14:14 + 4 + 32 + 20]  # locality, currentTicks, transNonceEven (after transHandle)
            locality, ticks = out[:4], out[4:36]
            digest = sha1(digest, struct.pack(">H", 0x0010), sha1(u32(EST), params), b"\x00" * 20)
            digest = sha1(digest, struct.pack(">H", 0x0011), ticks,
                          sha1(u32(0), u32(EST), locality, ticks, out[36:56]), locality)
            tick_rate_nonce = ticks[10:32]  # the session's tickRate and tickNonce
        elif ordinal == ET:  # 24.2 steps 6, 10, 14, 16
            wsize = struct.unpack(">I", cmd[10:14])[0]
            wrapped = cmd[14:14 + wsize]
            wtag, _, word = struct.unpack(">HII", wrapped[:10])
            n_auth = {0xC1: 0, 0xC2: 1, 0xC3: 2}[wtag]
            n_handles = 1 if word == C.ORD["TPM_Sign"] else 0
            h1 = sha1(wrapped[6:10], wrapped[10 + 4 * n_handles:len(wrapped) - 45 * n_auth])
            if n_handles:
                handle = struct.unpack(">I", wrapped[10:14])[0]
                pkh = sha1(sha1(u32(len(moduli[handle])), moduli[handle]))
            else:
                pkh = b"\x00" * 20
            digest = sha1(digest, struct.pack(">H", 0x0010), h1, pkh)
            body = rsp[10:len(rsp) - 41]
            locality = body[8:12]
            inner = body[16:16 + struct.unpack(">I", body[12:16])[0]]
            itag = struct.unpack(">H", inner[:2])[0]
            s2 = inner[10:len(inner) - 41 * {0xC4: 0, 0xC5: 1, 0xC6: 2}[itag]]
            h2 = sha1(inner[6:10], wrapped[6:10], s2)
            # the TPM_CURRENT_TICKS of LOG_OUT: tag, the UINT64 returned here, rate and nonce of this boot
            ticks = struct.pack(">H", 0x0014) + body[:8] + tick_rate_nonce
            digest = sha1(digest, struct.pack(">H", 0x0011), ticks, h2, locality)
        elif ordinal == REL:  # 24.3 step 6: one LOG_OUT, then sign TPM_SIGN_INFO "TRAN"
            assert cmd[14:34] == nonce
            body = rsp[10:]
            locality, ticks = body[:4], body[4:36]
            digest = sha1(digest, struct.pack(">H", 0x0011), ticks, sha1(u32(REL), nonce), locality)
            signature = body[40:40 + struct.unpack(">I", body[36:40])[0]]
    info = struct.pack(">H", 0x0005) + b"TRAN" + nonce + u32(20) + digest
    public.verify(signature, sha1(info), padding.PKCS1v15(), utils.Prehashed(hashes.SHA1()))


@pytest.mark.parametrize("which", ["trustlab", "libtpms"])
def test_release_verifies_both_ways(sides, which) -> None:
    side = sides[0] if which == "trustlab" else sides[1]
    nonce = hashlib.sha1(which.encode()).digest()
    rel, record = run_session(side, nonce)
    pub = side.ctx["pub"]
    # our host-side replay + transport_log.verify_release accept the TPM's signature ...
    assert L.verify_release(pub, nonce, rel.trans_digest, rel.signature)
    assert not L.verify_release(pub, b"\x00" * 20, rel.trans_digest, rel.signature)
    # ... and so does the verifier written from the specification, from the raw bytes alone
    moduli = {side.ctx["key"]: pub.public_numbers().n.to_bytes(256, "big")}
    spec_verify(record, nonce, pub, moduli)
    # a dropped wrapped command breaks it
    dropped = [x for i, x in enumerate(record) if i != 2]
    with pytest.raises((InvalidSignature, AssertionError, KeyError)):
        spec_verify(dropped, nonce, pub, moduli)


def test_both_tpms_refuse_an_identity_key_for_release(sides) -> None:
    for s in sides:
        blob, _ = s.tpm.TPM_MakeIdentity(OWNER, SRK, SIGN)
        aik = s.tpm.TPM_LoadKey2(C.TPM_KH_SRK, blob, SRK)
        t = s.tpm.TPM_EstablishTransport(TRANS)
        with pytest.raises(Exception, match="TPM_INVALID_KEYUSAGE"):
            s.tpm.TPM_ReleaseTransportSigned(aik, b"\x00" * 20, t, SIGN)
        s.tpm.TPM_FlushSpecific(aik)


@pytest.mark.parametrize("cipher", ["MGF1", "AES128-CTR", "AES128-OFB"])
@pytest.mark.parametrize("which", ["trustlab", "libtpms"])
def test_encrypted_transport(sides, which, cipher) -> None:
    """Part 3, 24.2 steps 4 and 17: our host's pads match the TPM's - the TPM decrypts the
    commands (their authorizations verify) and the host decrypts the answers (theirs verify)."""
    s = sides[0] if which == "trustlab" else sides[1]
    tpm = s.tpm
    alg, scheme = {"MGF1": (C.TPM_ALG_MGF1, C.TPM_ES_NONE), "AES128-CTR": (C.TPM_ALG_AES128, C.TPM_ES_SYM_CTR),
                   "AES128-OFB": (C.TPM_ALG_AES128, C.TPM_ES_SYM_OFB)}[cipher]
    blob = tpm.TPM_CreateWrapKey(C.TPM_KH_SRK, SRK, key_template(C.TPM_KEY_STORAGE), SIGN)
    storage = tpm.TPM_LoadKey2(C.TPM_KH_SRK, blob, SRK)
    sign_s = tpm.TPM_OIAP(SIGN)
    t = tpm.TPM_EstablishTransport(TRANS, exclusive=False, logged=False, alg=alg, scheme=scheme,
                                   key=(storage, Key12.from_bytes(blob).pub, SIGN))
    with tpm.through(t):
        assert len(tpm.TPM_GetRandom(100)) == 100  # a response longer than one AES block
        value = tpm.TPM_ReadCounter(s.ctx["cid"])
        sig = tpm.TPM_Sign(s.ctx["key"], b"\x44" * 20, sign_s)
    s.ctx["pub"].verify(sig, b"\x44" * 20, padding.PKCS1v15(), utils.Prehashed(hashes.SHA1()))
    assert value == tpm.TPM_ReadCounter(s.ctx["cid"])
    tpm.TPM_FlushSpecific(storage)
