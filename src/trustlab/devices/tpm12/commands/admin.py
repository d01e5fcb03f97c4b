"""Ownership, PCRs, randomness and resource management (Part 3, 6-8, 11, 13, 16, 22).

TPM_TakeOwnership installs the owner secret and the SRK (both secrets arrive
OAEP-encrypted under the endorsement key, so two RSA decryptions are charged)
and creates tpmProof, the TPM's secret that MACs every blob it issues.
"""

from __future__ import annotations

from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12.errors import TpmError
from trustlab.devices.tpm12.keys import Key12, KeyParms, modulus_of
from trustlab.devices.tpm12.registry import Request, Response, tpm_command
from trustlab.devices.tpm12.wire import Writer


@tpm_command("TPM_Startup")
def startup(tpm, req: Request) -> Response:
    kind = req.params.u16()
    req.params.end()
    if kind not in (C.TPM_ST_CLEAR, C.TPM_ST_STATE):
        raise TpmError("TPM_BAD_PARAMETER", f"startup type {kind:#x}")
    tpm.startup()
    return Response()


@tpm_command("TPM_TakeOwnership", auth=(1,))
def take_ownership(tpm, req: Request) -> Response:
    p = req.params
    if p.u16() != 0x0005:  # TPM_PID_OWNER
        raise TpmError("TPM_BAD_PARAMETER", "protocolID must be TPM_PID_OWNER")
    enc_owner, enc_srk = p.sized(256), p.sized(256)
    template = Key12.unmarshal(p)
    p.end()
    if tpm.state.owner_auth is not None:
        raise TpmError("TPM_OWNER_SET", "the TPM already has an owner")
    if template.usage != C.TPM_KEY_STORAGE or template.parms.algorithm != C.TPM_ALG_RSA:
        raise TpmError("TPM_BAD_KEY_PROPERTY", "the SRK must be an RSA storage key")
    owner_auth = tpm.crypto.rsa_decrypt(tpm.state.ek, enc_owner)
    srk_auth = tpm.crypto.rsa_decrypt(tpm.state.ek, enc_srk)
    if len(owner_auth) != 20 or len(srk_auth) != 20:
        raise TpmError("TPM_BAD_PARAMETER", "owner and SRK secrets are 20 bytes")
    req.auth.check(0, owner_auth)  # proves the caller knows the secret it is installing
    srk = tpm.crypto.rsa_generate()
    st = tpm.state
    st.owner_auth, st.srk_auth, st.srk = owner_auth, srk_auth, srk
    st.tpm_proof = tpm.crypto.random(20)
    tpm.mark_dirty()
    pub = Key12(C.TPM_KEY_STORAGE, 0, C.TPM_AUTH_ALWAYS,
                KeyParms(C.TPM_ALG_RSA, C.TPM_ES_RSAESOAEP_SHA1_MGF1, C.TPM_SS_NONE), modulus_of(srk))
    return Response(params=pub.marshal())


@tpm_command("TPM_GetRandom")
def get_random(tpm, req: Request) -> Response:
    n = req.params.u32()
    req.params.end()
    data = tpm.crypto.random(min(n, 4096))
    return Response(params=Writer().sized(data).bytes())


@tpm_command("TPM_Extend")
def extend(tpm, req: Request) -> Response:
    index, digest = req.params.u32(), req.params.raw(20)
    req.params.end()
    if index >= C.NUM_PCRS:
        raise TpmError("TPM_BADINDEX", f"PCR {index} (the TPM has {C.NUM_PCRS})")
    tpm.pcrs[index] = tpm.crypto.sha1(tpm.pcrs[index], digest)
    return Response(params=tpm.pcrs[index])


@tpm_command("TPM_PCRRead")
def pcr_read(tpm, req: Request) -> Response:
    index = req.params.u32()
    req.params.end()
    if index >= C.NUM_PCRS:
        raise TpmError("TPM_BADINDEX", f"PCR {index} (the TPM has {C.NUM_PCRS})")
    return Response(params=tpm.pcrs[index])


@tpm_command("TPM_FlushSpecific", handles=1)
def flush_specific(tpm, req: Request) -> Response:
    handle = req.handles[0]
    rtype = req.params.u32()
    req.params.end()
    table = {C.TPM_RT_KEY: tpm.keys, C.TPM_RT_AUTH: tpm.sessions, C.TPM_RT_TRANS: tpm.sessions}.get(rtype)
    if table is None or handle not in table:
        raise TpmError("TPM_BAD_PARAMETER", f"no resource {handle:#010x} of type {rtype}")
    del table[handle]
    if handle == tpm.exclusive:
        tpm.exclusive = None
    return Response()


@tpm_command("TPM_GetPubKey", handles=1, auth=(0, 1))
def get_pub_key(tpm, req: Request) -> Response:
    key = tpm.key(req.handles[0])
    if len(req.auth):
        req.auth.check(0, key.usage_auth)
    elif key.blob.auth_usage != C.TPM_AUTH_NEVER:
        raise TpmError("TPM_AUTHFAIL", "this key needs authorization to read its public part")
    return Response(params=key.blob.pubkey())


@tpm_command("TPM_ReadPubek", ordinal=0x7C)
def read_pubek(tpm, req: Request) -> Response:
    nonce = req.params.raw(20)
    req.params.end()
    if tpm.state.owner_auth is not None:
        raise TpmError("TPM_OWNER_SET", "the owner has disabled TPM_ReadPubek")  # Part 3, 27.6
    parms = KeyParms(C.TPM_ALG_RSA, C.TPM_ES_RSAESOAEP_SHA1_MGF1, C.TPM_SS_NONE)
    pub = parms.marshal() + Writer().sized(modulus_of(tpm.state.ek)).bytes()
    return Response(params=pub + tpm.crypto.sha1(pub, nonce))
