"""Protected storage: TPM_Seal, TPM_Unseal, TPM_UnBind, TPM_ChangeAuth (Part 3, 10 and 17).

Derivations of the paper's coefficients (its experiments sealed/bound 11
bytes, no PCR binding):

* Seal: 98 in = 10 + 4 + 20 encAuth + 4 + 0 PCR info + 4 + 11 + 45; 319 out =
  10 + 268 TPM_STORED_DATA + 41. Hash 35 blocks = parameter digest 1 + HMAC 5
  + ADIP 1 + storedDigest 1 + OAEP 17 + output digest 5 + HMAC 5 = 2240 bytes.
* Unseal: 372 in (two sessions), 107 out; 5 + 10 + 17 + 1 (storedDigest
  check) + 1 + 10 = 44 blocks = 2816.
* UnBind: 319 in, 66 out; 5 + 5 + 17 + 1 + 5 = 33 blocks = 2112.
* ChangeAuth: 388 in, 352 out; 5 + 10 + 1 (ADIP) + 17 (decrypt) + 17
  (re-encrypt) + 5 + 10 = 65 blocks = 4160.
"""

from __future__ import annotations

import functools
import hmac as _hmac

from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12.errors import TpmError
from trustlab.devices.tpm12.keys import StoreAsymkey
from trustlab.devices.tpm12.pcrs import PcrInfo
from trustlab.devices.tpm12.primitives import mgf1, xor
from trustlab.devices.tpm12.registry import Request, Response, tpm_command
from trustlab.devices.tpm12.wire import Reader, sized

TPM_PT_SEAL = 0x05
TPM_PT_BIND = 0x02
_PT_SEAL = bytes((TPM_PT_SEAL,))
_STORED_DATA12 = C.TPM_TAG_STORED_DATA12.to_bytes(2, "big")


def stored_data(seal_info: bytes, enc: bytes) -> bytes:
    """TPM_STORED_DATA (Part 2, 9.1): version, sealInfo, encData."""
    return C.STRUCT_VER + sized(seal_info) + sized(enc)


def _storage_key(tpm, req: Request, handle: int, session: int = 0):
    key = tpm.key(handle)
    req.auth.check(session, key.usage_auth, (C.TPM_ET_KEYHANDLE, handle))
    if key.blob.usage != C.TPM_KEY_STORAGE:
        raise TpmError("TPM_INVALID_KEYUSAGE", f"key {handle:#010x} is not a storage key")
    return key


def stored_data12(seal_info: bytes, enc: bytes, et: int = 0) -> bytes:
    """TPM_STORED_DATA12 (Part 2, 9.2): tag, et (0: not encrypted; TPM_Sealx: the ADIP scheme), sealInfo,
    encData."""
    return _STORED_DATA12 + et.to_bytes(2, "big") + sized(seal_info) + sized(enc)


# TPM_Sealx's et for XOR ADIP: TPM_ET_XOR in the MSB, TPM_ET_KEY in the LSB because TPM_Unseal
# takes 0 for "not encrypted" (Part 3, 10.7 step 11.a.i; libtpms TPM_Process_Sealx)
SEALX_XOR_ET = (C.TPM_ET_XOR << 8) | C.TPM_ET_KEY


def seal_crypt(tpm, use, data: bytes) -> bytes:
    """TPM_SealCryptCommon, XOR: data XOR MGF1(nonceEven || nonceOdd || "XOR" || sharedSecret), the
    session's last nonceEven and this command's nonceOdd (Part 3, 10.7 step 13; 10.3 step 9.c)."""
    seed = use.session.nonce_even + use.nonce_odd + b"XOR" + use.session.shared_secret
    return xor(data, mgf1(tpm.crypto.sha1, seed, len(data)))


@tpm_command("TPM_Sealx", handles=1, auth=(1,))
def sealx(tpm, req: Request) -> Response:
    """Part 3, 10.7, as libtpms' TPM_Process_Sealx: TPM_Seal for 1.2 structures whose inData comes
    encrypted under the OSAP session; the sealed blob remembers it (et) so TPM_Unseal encrypts the
    data on the way out. The session ends (step 18)."""
    enc_auth = req.params.raw(20)
    pcr_info = req.params.sized(256)
    data = req.params.sized(256)
    req.params.end()
    handle = req.handles[0]
    key = tpm.key(handle)
    req.auth.check(0, key.usage_auth, (C.TPM_ET_KEYHANDLE, handle))
    if not data:
        raise TpmError("TPM_BAD_PARAMETER", "inDataSize is 0")
    if key.blob.usage != C.TPM_KEY_STORAGE:
        raise TpmError("TPM_INVALID_KEYUSAGE", f"key {handle:#010x} is not a storage key")
    if key.blob.migratable:
        raise TpmError("TPM_INVALID_KEYUSAGE", "TPM_Sealx needs a non-migratable storage key")
    if pcr_info:
        info = PcrInfo.parse(pcr_info)
        if not info.long:
            raise TpmError("TPM_BADINDEX", "TPM_Sealx takes a TPM_PCR_INFO_LONG")
        pcr_info = info.with_creation(tpm, tpm.locality)
    data_auth = req.auth.decrypt_auth(0, enc_auth)  # (an OSAP session: the XOR below needs its secret)
    use = req.auth.uses[0]
    plain = seal_crypt(tpm, use, data)
    digest = tpm.crypto.sha1(stored_data12(pcr_info, b"", SEALX_XOR_ET))
    sealed = _PT_SEAL + data_auth + tpm.state.tpm_proof + digest + sized(plain)
    use.cont = 0
    return Response(stored_data12(pcr_info, tpm.crypto.rsa_encrypt(key.public, sealed), SEALX_XOR_ET))


@tpm_command("TPM_Seal", handles=1, auth=(1,))
def seal(tpm, req: Request) -> Response:
    """Part 3, 10.1. A TPM_PCR_INFO_LONG pcrInfo makes a TPM_STORED_DATA12, a TPM_PCR_INFO a
    TPM_STORED_DATA; either keeps the caller's PCR selections byte for byte."""
    enc_auth = req.params.raw(20)
    pcr_info = req.params.sized(256)
    data = req.params.sized(256)
    req.params.end()
    key = _storage_key(tpm, req, req.handles[0])
    data_auth = req.auth.decrypt_auth(0, enc_auth)
    wrap = stored_data
    if pcr_info:
        info = PcrInfo.parse(pcr_info)
        pcr_info = info.with_creation(tpm, tpm.locality)
        if info.long:
            wrap = stored_data12
    digest = tpm.crypto.sha1(wrap(pcr_info, b""))
    sealed = _PT_SEAL + data_auth + tpm.state.tpm_proof + digest + sized(data)
    return Response(wrap(pcr_info, tpm.crypto.rsa_encrypt(key.public, sealed)))


@tpm_command("TPM_Unseal", handles=1, auth=(2,))
def unseal(tpm, req: Request) -> Response:
    p = req.params
    head = p.raw(4)
    et = 0
    if head[:2] == _STORED_DATA12:
        et = int.from_bytes(head[2:], "big")
        if et and et >> 8 != C.TPM_ET_XOR:  # only XOR ADIP exists here (TPM_OSAP refuses the others)
            raise TpmError("TPM_INAPPROPRIATE_ENC", f"TPM_STORED_DATA12 with encryption scheme {et >> 8:#x}")
        wrap = functools.partial(stored_data12, et=et)
    elif head == C.STRUCT_VER:
        wrap = stored_data
    else:
        raise TpmError("TPM_BAD_VERSION", "sealedData is neither a TPM_STORED_DATA12 nor a 1.1 TPM_STORED_DATA")
    pcr_info, enc = p.sized(256), p.sized(512)
    p.end()
    key = _storage_key(tpm, req, req.handles[0])
    try:  # Part 3, 10.3 step 6.h: any failure to decrypt or validate is TPM_NOTSEALED_BLOB
        r = Reader(tpm.crypto.rsa_decrypt(key.private, enc), "TPM_SEALED_DATA")
        payload, data_auth, proof, digest, data = r.u8(), r.raw(20), r.raw(20), r.raw(20), r.sized(256)
        if payload != TPM_PT_SEAL or not _hmac.compare_digest(proof, tpm.state.tpm_proof):
            raise TpmError("TPM_NOTSEALED_BLOB", "not sealed by this TPM")
        if not _hmac.compare_digest(digest, tpm.crypto.sha1(wrap(pcr_info, b""))):
            raise TpmError("TPM_NOTSEALED_BLOB", "sealInfo was altered")
    except TpmError as e:
        raise TpmError("TPM_NOTSEALED_BLOB", str(e)) from None
    if pcr_info:  # step 7, before the data's authorization (step 8)
        PcrInfo.parse(pcr_info, "TPM_NOTSEALED_BLOB").check_release(tpm, tpm.locality)
    req.auth.check(1, data_auth)
    if et:  # step 9: a TPM_Sealx blob leaves encrypted under the key's OSAP session, which ends
        use = req.auth.uses[0]
        if use.session is None or use.session.kind != "OSAP":
            raise TpmError("TPM_BAD_MODE", "a TPM_Sealx blob is unsealed under an OSAP session")
        data = seal_crypt(tpm, use, data)
        use.cont = 0
    return Response(sized(data))


@tpm_command("TPM_UnBind", handles=1, auth=(0, 1))
def unbind(tpm, req: Request) -> Response:
    enc = req.params.sized(512)
    req.params.end()
    key = tpm.key(req.handles[0])
    if len(req.auth) or key.blob.auth_usage != C.TPM_AUTH_NEVER:
        req.auth.check(0, key.usage_auth, (C.TPM_ET_KEYHANDLE, req.handles[0]))
    if key.blob.usage not in (C.TPM_KEY_BIND, C.TPM_KEY_LEGACY):
        raise TpmError("TPM_INVALID_KEYUSAGE", "UnBind needs a bind key")
    r = Reader(tpm.crypto.rsa_decrypt(key.private, enc), "TPM_BOUND_DATA")
    if r.raw(4) != C.STRUCT_VER or r.u8() != TPM_PT_BIND:
        raise TpmError("TPM_DECRYPT_ERROR", "not TPM_BOUND_DATA")
    return Response(sized(r.rest()))


@tpm_command("TPM_ChangeAuth", handles=1, auth=(2,))
def change_auth(tpm, req: Request) -> Response:
    p = req.params
    protocol, enc_auth, etype, enc = p.u16(), p.raw(20), p.u16(), p.sized(512)
    p.end()
    if etype not in (C.TPM_ET_KEY, C.TPM_ET_DATA):  # Part 3, 17.1 step 1
        raise TpmError("TPM_WRONG_ENTITYTYPE", f"entity type {etype:#x} (TPM_ET_DATA or TPM_ET_KEY)")
    tpm.key(req.handles[0])  # the parent must be loaded (TPM_INVALID_KEYHANDLE) ...
    if protocol != C.TPM_PID_ADCP:  # ... before step 4 (0x0004), then its authorization, as libtpms
        raise TpmError("TPM_BAD_PARAMETER", f"protocolID {protocol:#06x} must be TPM_PID_ADCP (0x0004)")
    parent = _storage_key(tpm, req, req.handles[0])
    new_auth = req.auth.decrypt_auth(0, enc_auth)
    plain = tpm.crypto.rsa_decrypt(parent.private, enc)
    if etype == C.TPM_ET_KEY:  # Part 2, 4.9: 0x0005 (TPM_ET_KEYHANDLE 0x0001 names a loaded key)
        store = StoreAsymkey.from_bytes(plain)
        req.auth.check(1, store.usage_auth)
        plain = StoreAsymkey(store.payload, new_auth, store.migration_auth, store.pub_digest,
                             store.priv).marshal()
    else:  # TPM_ET_DATA
        if plain[0] != TPM_PT_SEAL or not _hmac.compare_digest(plain[21:41], tpm.state.tpm_proof):
            raise TpmError("TPM_DECRYPT_ERROR", "not sealed by this TPM")
        req.auth.check(1, plain[1:21])
        plain = plain[:1] + new_auth + plain[21:]
    return Response(sized(tpm.crypto.rsa_encrypt(parent.public, plain)))
