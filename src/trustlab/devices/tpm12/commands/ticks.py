"""Tick counter: TPM_GetTicks and TPM_TickStampBlob (Part 3, 23).

The tick counter counts microseconds of *modelled* time (the clock the
profile charges), with a nonce fixed per boot: TPM_CURRENT_TICKS (Part 2,
15.1) = tag, UINT64 currentTicks, UINT16 tickRate (1 µs per tick), tickNonce.
"""

from __future__ import annotations

from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12.commands.sign import signing_key
from trustlab.devices.tpm12.registry import Request, Response, tpm_command
from trustlab.devices.tpm12.transport_log import sign_info
from trustlab.devices.tpm12.wire import Writer


@tpm_command("TPM_GetTicks")
def get_ticks(tpm, req: Request) -> Response:
    req.params.end()
    return Response(params=tpm.current_ticks())


@tpm_command("TPM_TickStampBlob", handles=1, auth=(0, 1))
def tick_stamp_blob(tpm, req: Request) -> Response:
    """Sign TPM_SIGN_INFO("TSTP", antiReplay, digestToStamp || TPM_CURRENT_TICKS) (Part 3, 23.2)."""
    anti_replay, digest = req.params.raw(20), req.params.raw(20)
    req.params.end()
    key = signing_key(tpm, req, req.handles[0], (C.TPM_KEY_SIGNING, C.TPM_KEY_LEGACY, C.TPM_KEY_IDENTITY))
    ticks = tpm.current_ticks()
    sig = tpm.crypto.rsa_sign(key.private, tpm.crypto.sha1(sign_info(anti_replay, digest + ticks, b"TSTP")))
    return Response(params=ticks + Writer().sized(sig).bytes())
