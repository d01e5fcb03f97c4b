"""TPM_SaveKeyContext and TPM_LoadKeyContext (Part 3, 27.2.1-27.2.2; deprecated in 1.2, still used).

TrouSerS' tcsd asks at start-up whether the TPM has TPM_SaveKeyContext and,
if so, swaps keys out with it when the key slots run out. The blob's format
is the vendor's; this engine's follows TPM_CONTEXT_BLOB (Part 2, 18.1):
tag, resource type, handle, label, count, integrityDigest, additionalData
(the AES-CTR IV) and sensitiveData (the loaded key, AES-128-CTR encrypted
under a key derived from tpmProof). The digest is HMAC-SHA1 under tpmProof
over the blob with the digest zeroed, so only this TPM, with this owner,
accepts it back (else TPM_BADCONTEXT, as libtpms answers). The symmetric
cipher is not a modelled component; the HMAC is charged as every HMAC is.
"""

from __future__ import annotations

import hmac as _hmac
import json
import os

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12.commands.keys import KEY_SLOTS
from trustlab.devices.tpm12.errors import TpmError
from trustlab.devices.tpm12.keys import key_from_json, key_to_json
from trustlab.devices.tpm12.registry import Request, Response, tpm_command
from trustlab.devices.tpm12.wire import Writer

TPM_TAG_CONTEXTBLOB = 0x0001
_LABEL = b"trustlab keyctx\x00"  # 16 bytes


def _cipher(tpm, iv: bytes) -> Cipher:
    key = tpm.crypto.sha1(tpm.state.tpm_proof or bytes(20), b"TPM_SaveKeyContext")[:16]
    return Cipher(algorithms.AES(key), modes.CTR(iv))


def _blob(handle: int, digest: bytes, iv: bytes, sensitive: bytes) -> bytes:
    return (Writer().u16(TPM_TAG_CONTEXTBLOB).u32(C.TPM_RT_KEY).u32(handle).raw(_LABEL).u32(0).raw(digest)
            .sized(iv).sized(sensitive).bytes())


@tpm_command("TPM_SaveKeyContext", handles=1)
def save_key_context(tpm, req: Request) -> Response:
    handle = req.handles[0]
    req.params.end()
    key = tpm.keys.get(handle)
    if key is None:
        raise TpmError("TPM_INVALID_KEYHANDLE", f"no key loaded at handle {handle:#010x}")
    iv = os.urandom(16)
    enc = _cipher(tpm, iv).encryptor()
    sensitive = enc.update(json.dumps(key_to_json(key), sort_keys=True).encode()) + enc.finalize()
    digest = tpm.crypto.hmac(tpm.state.tpm_proof or bytes(20), _blob(handle, bytes(20), iv, sensitive))
    return Response(Writer().sized(_blob(handle, digest, iv, sensitive)).bytes())


@tpm_command("TPM_LoadKeyContext")
def load_key_context(tpm, req: Request) -> Response:
    req.params.u32()  # keyContextSize: libtpms parses the TPM_CONTEXT_BLOB that follows, not this count
    r = req.params
    if r.u16() != TPM_TAG_CONTEXTBLOB:
        raise TpmError("TPM_INVALID_STRUCTURE", "keyContextBlob is not a TPM_CONTEXT_BLOB (tag)")
    rtype, handle = r.u32(), r.u32()
    r.raw(16)
    r.u32()
    digest, iv, sensitive = r.raw(20), r.sized(16), r.sized(1 << 16)
    r.end()
    if rtype != C.TPM_RT_KEY:
        raise TpmError("TPM_BADCONTEXT", f"a context of resource type {rtype}, not a key")
    expect = tpm.crypto.hmac(tpm.state.tpm_proof or bytes(20), _blob(handle, bytes(20), iv, sensitive))
    if len(iv) != 16 or not _hmac.compare_digest(digest, expect):
        raise TpmError("TPM_BADCONTEXT", "the key context was not saved by this TPM or was altered")
    dec = _cipher(tpm, iv).decryptor()
    key = key_from_json(json.loads(dec.update(sensitive) + dec.finalize()))
    if len(tpm.keys) >= KEY_SLOTS:
        raise TpmError("TPM_RESOURCES", f"all {KEY_SLOTS} key slots are in use")
    new = tpm.new_handle("key")
    tpm.keys[new] = key
    return Response(Writer().u32(new).bytes())
