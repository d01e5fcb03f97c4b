"""TPM_SaveKeyContext and TPM_LoadKeyContext (Part 3, 27.2.1-27.2.2: deprecated 1.1 commands a 1.2 TPM answers).

TrouSerS' tcsd asks at start-up whether the TPM has TPM_SaveKeyContext and,
if so, swaps keys out with it when the key slots run out. The blob is the
TPM_CONTEXT_BLOB of TPM_SaveContext (``commands/context.py``: the same
integrity digest under tpmProof and AES-128-CTR encryption under the context
key), holding the loaded key; only this TPM, with this owner, accepts it back
(TPM_BADCONTEXT otherwise, as libtpms answers). Unlike TPM_SaveContext these
need no owner (libtpms: TPM_CHECK_ALLOW_NO_OWNER), and the handle of the
reloaded key is a parameter, not an output handle.
"""

from __future__ import annotations

import hmac as _hmac
import json
import os

from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12.commands.context import AES_BLOCK, LABEL, TAG_CONTEXTBLOB, _blob, _crypt, _integrity
from trustlab.devices.tpm12.commands.keys import KEY_SLOTS
from trustlab.devices.tpm12.errors import TpmError
from trustlab.devices.tpm12.keys import key_from_json, key_to_json
from trustlab.devices.tpm12.registry import Request, Response, tpm_command
from trustlab.devices.tpm12.wire import Writer

_LABEL = bytes(LABEL)


@tpm_command("TPM_SaveKeyContext", handles=1)
def save_key_context(tpm, req: Request) -> Response:
    handle = req.handles[0]
    req.params.end()
    key = tpm.keys.get(handle)
    if key is None:
        raise TpmError("TPM_INVALID_KEYHANDLE", f"no key loaded at handle {handle:#010x}")
    sensitive = json.dumps(key_to_json(key), sort_keys=True).encode()
    digest = _integrity(tpm, _blob(C.TPM_RT_KEY, handle, _LABEL, 0, bytes(20), sensitive))
    iv = os.urandom(AES_BLOCK)
    blob = _blob(C.TPM_RT_KEY, handle, _LABEL, 0, digest, iv + _crypt(tpm, iv, sensitive))
    return Response(Writer().sized(blob).bytes())


@tpm_command("TPM_LoadKeyContext")
def load_key_context(tpm, req: Request) -> Response:
    r = req.params
    r.u32()  # keyContextSize: libtpms parses the TPM_CONTEXT_BLOB that follows, not this count
    if r.u16() != TAG_CONTEXTBLOB:
        raise TpmError("TPM_INVALID_STRUCTURE", "keyContextBlob is not a TPM_CONTEXT_BLOB (tag)")
    rtype, handle, label, count, digest = r.u32(), r.u32(), r.raw(LABEL), r.u32(), r.raw(20)
    r.raw(r.u32())  # additionalData
    encrypted = r.sized(1 << 16)
    r.end()
    if rtype != C.TPM_RT_KEY or len(encrypted) < AES_BLOCK:
        raise TpmError("TPM_BADCONTEXT", "not a key's context")
    sensitive = _crypt(tpm, encrypted[:AES_BLOCK], encrypted[AES_BLOCK:])
    expect = _integrity(tpm, _blob(rtype, handle, label, count, bytes(20), sensitive))
    if not _hmac.compare_digest(expect, digest):
        raise TpmError("TPM_BADCONTEXT", "the key context was not saved by this TPM or was altered")
    key = key_from_json(json.loads(sensitive))
    if len(tpm.keys) >= KEY_SLOTS:
        raise TpmError("TPM_RESOURCES", f"all {KEY_SLOTS} key slots are in use")
    new = tpm.new_handle("key")
    tpm.keys[new] = key
    return Response(Writer().u32(new).bytes())
