"""Ownership, PCRs, randomness and resource management (Part 3, 6-8, 11, 13, 16, 22).

TPM_TakeOwnership installs the owner secret and the SRK (both secrets arrive
OAEP-encrypted under the endorsement key, so two RSA decryptions are charged)
and creates tpmProof, the TPM's secret that MACs every blob it issues.
"""

from __future__ import annotations

from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12 import flags
from trustlab.devices.tpm12.owner_evict import is_owner_evict
from trustlab.devices.tpm12.pc_client import PCR_EXTEND_LOCAL, PCR_RESET_LOCAL, PCR_RESETTABLE
from trustlab.devices.tpm12.errors import TpmError
from trustlab.devices.tpm12.commands.endorsement import ek as ek_key
from trustlab.devices.tpm12.keys import check_key_parms, modulus_of, unmarshal_key
from trustlab.devices.tpm12.pcrs import pcr_selection
from trustlab.devices.tpm12.registry import Request, Response, tpm_command
from trustlab.devices.tpm12.wire import Writer, sized


@tpm_command("TPM_Startup")
def startup(tpm, req: Request) -> Response:
    kind = req.params.u16()
    req.params.end()
    if not tpm.post_init:
        raise TpmError("TPM_INVALID_POSTINIT", "TPM_Startup was already run since _TPM_Init")
    try:
        if kind not in (C.TPM_ST_CLEAR, C.TPM_ST_STATE, C.TPM_ST_DEACTIVATED):
            raise TpmError("TPM_BAD_PARAMETER", f"startup type {kind:#x}")
        tpm.startup(kind)
    finally:  # Part 3, 3.2 action 6: postInitialise is FALSE afterwards, even if Startup failed
        tpm.post_init = False
    return Response()


@tpm_command("TPM_SaveState")
def save_state(tpm, req: Request) -> Response:
    """Part 3, 3.3: preserve PCRs and key slots for TPM_Startup(ST_STATE)."""
    req.params.end()
    if req.transported:  # libtpms, and Part 3 3.3 note: the save would be void at once
        raise TpmError("TPM_NO_WRAP_TRANSPORT", "TPM_SaveState inside a transport session")
    tpm.save_state()
    return Response()


@tpm_command("TPM_SelfTestFull")
def self_test_full(tpm, req: Request) -> Response:
    """Part 3, 4.1: the engine's crypto is OpenSSL's, tested on load; nothing can fail here."""
    req.params.end()
    return Response()


@tpm_command("TPM_ContinueSelfTest")
def continue_self_test(tpm, req: Request) -> Response:
    req.params.end()
    return Response()


@tpm_command("TPM_GetTestResult")
def get_test_result(tpm, req: Request) -> Response:
    """Part 3, 4.3: manufacturer-specific outData; here the self-test state as text."""
    req.params.end()
    text = b"failure mode\n" if tpm.failed else b"self-test passed\n"
    return Response(params=Writer().sized(text).bytes())


@tpm_command("TPM_ResetLockValue", auth=(1,))
def reset_lock_value(tpm, req: Request) -> Response:
    """Part 3, 5.6: the owner ends the dictionary-attack defence - also while it runs (libtpms
    TPM_Process_ResetLockValue has no lockout check). A wrong owner authorization sets
    disableResetLock, which makes every later try TPM_AUTHFAIL until the lockout period is over
    (libtpms TPM_Authdata_CheckState) or the next TPM_Startup(ST_CLEAR)."""
    if tpm.lockout_remaining_s() <= 0:
        tpm.disable_reset_lock = False
    req.params.end()
    if tpm.disable_reset_lock:
        raise TpmError("TPM_AUTHFAIL", "TPM_ResetLockValue: disableResetLock (an earlier try failed)")
    try:
        req.auth.check(0, tpm.owner_auth(), (C.TPM_ET_OWNER, C.TPM_KH_OWNER))
    except TpmError:
        tpm.disable_reset_lock = True
        raise
    tpm.auth_fail_count = 0
    return Response()


@tpm_command("TPM_TakeOwnership", auth=(1,))
def take_ownership(tpm, req: Request) -> Response:
    """Part 3, 6.1. The SRK template may be a TPM_KEY12 or TrouSerS' TPM 1.1 TPM_KEY; srkPub
    answers in the same structure."""
    p = req.params
    pid = p.u16()
    enc_owner, enc_srk = p.sized(512), p.sized(512)
    template = unmarshal_key(p)
    p.end()
    if pid != C.TPM_PID_OWNER:
        raise TpmError("TPM_BAD_PARAMETER", "protocolID must be TPM_PID_OWNER")
    if tpm.state.owner_auth is not None:
        raise TpmError("TPM_OWNER_SET", "the TPM already has an owner")
    if not flags.permanent(tpm, "ownership"):
        raise TpmError("TPM_INSTALL_DISABLED", "TPM_SetOwnerInstall(FALSE) forbids taking ownership")
    ek = ek_key(tpm)
    req.auth.session(0)  # libtpms looks the session up before it decrypts the secrets
    if template.usage != C.TPM_KEY_STORAGE or template.migratable:
        raise TpmError("TPM_INVALID_KEYUSAGE", "the SRK must be a non-migratable storage key")
    check_key_parms(template.usage, template.parms)
    owner_auth = tpm.crypto.rsa_decrypt(ek, enc_owner)
    srk_auth = tpm.crypto.rsa_decrypt(ek, enc_srk)
    if len(owner_auth) != 20 or len(srk_auth) != 20:
        raise TpmError("TPM_BAD_KEY_PROPERTY", "owner and SRK secrets are 20 bytes")
    req.auth.check(0, owner_auth)  # proves the caller knows the secret it is installing
    srk = tpm.crypto.rsa_generate()
    st = tpm.state
    st.owner_auth, st.srk_auth, st.srk = owner_auth, srk_auth, srk
    st.tpm_proof = tpm.crypto.random(20)
    flags.forget_permanent(tpm, "readPubek")  # step 13: readPubek FALSE (it follows ownership)
    tpm.mark_dirty()
    return Response(params=template.with_public(modulus_of(srk)).marshal())


@tpm_command("TPM_GetRandom")
def get_random(tpm, req: Request) -> Response:
    n = req.params.u32()
    req.params.end()
    # Part 3, 13.6: the TPM may return fewer bytes; like libtpms, as many as fit a 4096-byte
    # response (header 10 + randomBytesSize 4)
    data = tpm.crypto.random(min(n, 4096 - 14))
    return Response(sized(data))


@tpm_command("TPM_Extend")
def extend(tpm, req: Request) -> Response:
    index, digest = req.params.u32(), req.params.raw(20)
    req.params.end()
    if index >= C.NUM_PCRS:
        raise TpmError("TPM_BADINDEX", f"PCR {index} (the TPM has {C.NUM_PCRS})")
    if not PCR_EXTEND_LOCAL[index] & (1 << tpm.locality):
        raise TpmError("TPM_BAD_LOCALITY", f"PCR {index} cannot be extended from locality {tpm.locality}")
    tpm.pcrs[index] = tpm.crypto.sha1(tpm.pcrs[index], digest)
    return Response(tpm.pcrs[index])


@tpm_command("TPM_PCR_Reset")
def pcr_reset(tpm, req: Request) -> Response:
    """Part 3, 16.4: reset the selected resettable PCRs to zero, if the locality may."""
    indices = pcr_selection(req.params)
    req.params.end()
    for i in indices:
        if not PCR_RESETTABLE[i]:
            raise TpmError("TPM_NOTRESETABLE", f"PCR {i} is not resettable")
        if not PCR_RESET_LOCAL[i] & (1 << tpm.locality):
            raise TpmError("TPM_NOTLOCAL", f"PCR {i} cannot be reset from locality {tpm.locality}")
    for i in indices:
        tpm.pcrs[i] = b"\x00" * 20
    return Response()


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
    if rtype == C.TPM_RT_KEY:
        if handle not in tpm.keys:
            raise TpmError("TPM_BAD_PARAMETER", f"no key {handle:#010x}")
        if is_owner_evict(tpm, handle):  # Part 3, 22.1 step 2.b
            raise TpmError("TPM_KEY_OWNER_CONTROL", f"key {handle:#010x} is owner-evict")
        del tpm.keys[handle]
    elif rtype in (C.TPM_RT_AUTH, C.TPM_RT_TRANS):
        s = tpm.sessions.get(handle)
        if s is None or (s.kind == "TRANSPORT") != (rtype == C.TPM_RT_TRANS):
            raise TpmError("TPM_INVALID_AUTHHANDLE", f"no session {handle:#010x} of type {rtype}")
        del tpm.sessions[handle]
        if handle == tpm.exclusive:
            tpm.exclusive = None
    else:
        raise TpmError("TPM_INVALID_RESOURCE", f"resource type {rtype:#x} cannot be flushed here")
    return Response()


@tpm_command("TPM_GetPubKey", handles=1, auth=(0, 1))
def get_pub_key(tpm, req: Request) -> Response:
    key = tpm.key(req.handles[0])
    if len(req.auth):
        req.auth.check(0, key.usage_auth)
    elif key.blob.auth_usage != C.TPM_AUTH_NEVER:
        raise TpmError("TPM_AUTHFAIL", "this key needs authorization to read its public part")
    if req.handles[0] == C.TPM_KH_SRK and not flags.permanent(tpm, "readSRKPub"):  # Part 3, 13.8 step 3
        raise TpmError("TPM_INVALID_KEYHANDLE", "the SRK's public key is readable only with readSRKPub")
    return Response(params=key.blob.pubkey())
