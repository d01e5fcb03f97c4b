"""TPM_Sign and TPM_Quote (Part 3, 13.1 and 16.1).

TPM_Sign with TPM_SS_RSASSAPKCS1v15_SHA1 signs a 20-byte digest the caller
hashed: 83 input bytes (10 + 4 handle + 4 + 20 + 45) and 311 output bytes
(10 + 4 + 256 + 41); hashing 1 + 5 + 5 + 5 = 16 blocks = 1024 bytes.

TPM_Quote over all 24 PCRs: TPM_PCR_COMPOSITE is 5 + 4 + 480 = 489 bytes
(8 blocks to hash), TPM_QUOTE_INFO 48 bytes (1 block), plus the parameter
digest (1), the output digest over 757 bytes (12) and two HMACs (10): 32
blocks = 2048 bytes; 84 bytes in, 800 out — the paper's Quote formula.
"""

from __future__ import annotations

from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12.commands.owner import read_bool
from trustlab.devices.tpm12.errors import TpmError
from trustlab.devices.tpm12.pcrs import pcr_composite, pcr_selection
from trustlab.devices.tpm12.registry import Request, Response, tpm_command
from trustlab.devices.tpm12.version import version_info
from trustlab.devices.tpm12.wire import Writer, sized

SIGNERS = (C.TPM_KEY_SIGNING, C.TPM_KEY_LEGACY)


def signing_key(tpm, req: Request, handle: int, usages=SIGNERS):
    key = tpm.key(handle)
    if key.blob.auth_usage != C.TPM_AUTH_NEVER or len(req.auth):
        req.auth.check(0, key.usage_auth, (C.TPM_ET_KEYHANDLE, handle))
    if key.blob.usage not in usages or key.private is None:
        raise TpmError("TPM_INVALID_KEYUSAGE", f"key {handle:#010x} cannot sign here")
    return key


@tpm_command("TPM_Sign", handles=1, auth=(0, 1))
def sign(tpm, req: Request) -> Response:
    area = req.params.sized(4096)
    req.params.end()
    key = signing_key(tpm, req, req.handles[0])
    if key.blob.parms.sig_scheme == C.TPM_SS_RSASSAPKCS1v15_SHA1 and len(area) != 20:
        raise TpmError("TPM_BAD_PARAMETER", "RSASSA-PKCS1v15-SHA1 signs a 20-byte digest")  # Part 3, 13.1
    sig = tpm.crypto.rsa_sign(key.private, area if len(area) == 20 else tpm.crypto.sha1(area))
    return Response(sized(sig))


@tpm_command("TPM_Quote", handles=1, auth=(0, 1))
def quote(tpm, req: Request) -> Response:
    nonce = req.params.raw(20)
    start = req.params.pos
    indices = pcr_selection(req.params)
    size_of_select = req.params.pos - start - 2
    req.params.end()
    key = signing_key(tpm, req, req.handles[0], SIGNERS + (C.TPM_KEY_IDENTITY,))
    composite = pcr_composite(tpm, indices, size_of_select)
    info = C.STRUCT_VER + b"QUOT" + tpm.crypto.sha1(composite) + nonce
    sig = tpm.crypto.rsa_sign(key.private, tpm.crypto.sha1(info))
    return Response(composite + sized(sig))


@tpm_command("TPM_Quote2", handles=1, auth=(0, 1))
def quote2(tpm, req: Request) -> Response:
    """Part 3, 16.5: sign TPM_QUOTE_INFO2("QUT2", externalData, TPM_PCR_INFO_SHORT) [+ version]."""
    nonce = req.params.raw(20)
    start = req.params.pos
    indices = pcr_selection(req.params)
    selection = req.param_bytes[start:req.params.pos]
    add_version = read_bool(req.params)
    req.params.end()
    key = signing_key(tpm, req, req.handles[0], SIGNERS + (C.TPM_KEY_IDENTITY,))
    composite = pcr_composite(tpm, indices, len(selection) - 2)
    info_short = selection + bytes([1 << tpm.locality]) + tpm.crypto.sha1(composite)
    version = b""
    if add_version:
        version = version_info()
    info = Writer().u16(C.TPM_TAG_QUOTE_INFO2).raw(b"QUT2").raw(nonce).raw(info_short).bytes()
    sig = tpm.crypto.rsa_sign(key.private, tpm.crypto.sha1(info, version))
    return Response(params=info_short + Writer().sized(version).sized(sig).bytes())
