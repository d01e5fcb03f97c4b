"""A revocable endorsement key: TPM_CreateRevocableEK and TPM_RevokeTrust (Part 3, 27.2-27.3).

As libtpms' TPM_Process_CreateRevocableEK / TPM_Process_RevokeTrust: the EK is made as by
TPM_CreateEndorsementKeyPair (once: TPM_DISABLED_CMD after), with an EKreset secret the TPM draws
or the caller gives; whoever holds it and is physically present may later revoke the EK, which
clears the owner and every NV area (the D-bit ones too) and leaves the TPM without an EK.
"""

from __future__ import annotations

import hmac

from trustlab.devices.tpm12 import flags
from trustlab.devices.tpm12.commands.endorsement import create_ek
from trustlab.devices.tpm12.commands.owner import clear_owner, read_bool
from trustlab.devices.tpm12.commands.physical import require_presence
from trustlab.devices.tpm12.errors import TpmError
from trustlab.devices.tpm12.keys import KeyParms
from trustlab.devices.tpm12.nvareas import save as save_areas
from trustlab.devices.tpm12.registry import Request, Response, tpm_command


@tpm_command("TPM_CreateRevocableEK")
def create_revocable_ek(tpm, req: Request) -> Response:
    anti_replay = req.params.raw(20)
    parms = KeyParms.unmarshal(req.params)
    generate, input_reset = read_bool(req.params), req.params.raw(20)
    req.params.end()
    out = create_ek(tpm, anti_replay, parms)
    reset = tpm.crypto.random(20) if generate else input_reset  # step 3.a/b
    tpm.state.extra[flags.EK_RESET] = reset.hex()  # enableRevokeEK: TRUE from now on
    tpm.mark_dirty()
    return Response(params=out + reset)


@tpm_command("TPM_RevokeTrust")
def revoke_trust(tpm, req: Request) -> Response:
    reset = req.params.raw(20)
    req.params.end()
    if not flags.permanent(tpm, "enableRevokeEK"):
        raise TpmError("TPM_PERMANENTEK", "the endorsement key is not revocable")
    if not hmac.compare_digest(reset, bytes.fromhex(tpm.state.extra.get(flags.EK_RESET, "00" * 20))):
        raise TpmError("TPM_AUTHFAIL", "EKReset does not match")
    require_presence(tpm)
    clear_owner(tpm)
    save_areas(tpm, {})  # step 3.a: every NV area, the D-bit ones too
    tpm.state.extra.pop("nv_locked", None)  # nvLocked FALSE
    tpm.state.ek = None
    tpm.state.extra.pop("cekp_used", None)  # CEKPUsed FALSE
    tpm.mark_dirty()
    return Response()
