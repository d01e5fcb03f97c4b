"""TPM_HMAC: HMAC-SHA1 with a loaded HMAC key — the "TPM oracle" query (what-if).

Gunupudi & Tate (2010, Sec. VI-A) propose an external interface to the HMAC
engine the TPM already has for authorization. Output block ``i`` of ``bo``
is ``HMAC(K, data)`` for ``bo = 1`` and ``HMAC(K, data || UINT32 i)``
otherwise; each costs ``(b_i + 3)`` SHA-1 blocks where ``b_i`` is the padded
input in blocks (key block + input + 2 outer blocks) — the paper's
``4.5 (b_i + 3) b_o`` ms estimate with its 4.5 ms per block. Here hashing is
charged per the profile's ``sha1_byte`` like every other command.
"""

from __future__ import annotations

from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12.errors import TpmError
from trustlab.devices.tpm12.registry import Request, Response, tpm_command
from trustlab.devices.tpm12.wire import Writer

MAX_OUTPUT_BLOCKS = 64


@tpm_command("TPM_HMAC", handles=1, auth=(1,))
def tpm_hmac(tpm, req: Request) -> Response:
    data = req.params.sized(1 << 16)
    blocks = req.params.u32()
    req.params.end()
    key = tpm.key(req.handles[0])
    req.auth.check(0, key.usage_auth, (C.TPM_ET_KEYHANDLE, req.handles[0]))
    if key.blob.usage != C.TPM_KEY_HMAC or key.hmac_secret is None:
        raise TpmError("TPM_INVALID_KEYUSAGE", "TPM_HMAC needs an HMAC key")
    if not 1 <= blocks <= MAX_OUTPUT_BLOCKS:
        raise TpmError("TPM_BAD_PARAMETER", f"output blocks must be 1..{MAX_OUTPUT_BLOCKS}")
    if blocks == 1:
        out = tpm.crypto.hmac(key.hmac_secret, data)
    else:
        out = b"".join(tpm.crypto.hmac(key.hmac_secret, data, i.to_bytes(4, "big")) for i in range(blocks))
    return Response(params=Writer().sized(out).bytes())
