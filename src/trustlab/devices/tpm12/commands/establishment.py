"""TSC_ResetEstablishmentBit (Part 3, 6.2.2): clear TPM_PERMANENT_FLAGS.tpmEstablished.

The flag records that a dynamic root of trust was measured (a locality-4 HASH_START); only
locality 3 or 4 may clear it, so software at locality 0 gets TPM_BAD_LOCALITY, as from
libtpms' TPM_Process_ResetEstablishmentBit. A served TPM keeps the flag where swtpm's control
channel (CMD_RESET_TPMESTABLISHED) finds it: flags.ESTABLISHED.
"""

from __future__ import annotations

from trustlab.devices.tpm12 import flags
from trustlab.devices.tpm12.errors import TpmError
from trustlab.devices.tpm12.registry import Request, Response, tpm_command

ALLOWED_LOCALITIES = (3, 4)


@tpm_command("TSC_ResetEstablishmentBit")
def reset_establishment_bit(tpm, req: Request) -> Response:
    req.params.end()
    if tpm.locality not in ALLOWED_LOCALITIES:
        raise TpmError("TPM_BAD_LOCALITY", f"locality {tpm.locality} may not reset the establishment bit (3 or 4)")
    if tpm.state.extra.get(flags.ESTABLISHED) != "0":
        tpm.state.extra[flags.ESTABLISHED] = "0"
        tpm.mark_dirty()
    return Response()
