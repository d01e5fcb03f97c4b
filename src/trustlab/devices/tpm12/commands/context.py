"""TPM_SaveContext and TPM_LoadContext (Part 3, 21.2-21.3), as libtpms' TPM_Process_SaveContext/LoadContext.

A saved context is a TPM_CONTEXT_BLOB: tag, resourceType, handle, label[16],
contextCount, integrityDigest (HMAC over the blob with the sensitive part in
clear, keyed with tpmProof), additionalData (empty) and the encrypted
TPM_CONTEXT_SENSITIVE (tag, contextNonce, internalData). What internalData
holds is the manufacturer's choice (Part 3, 21.2 step 6); here it is the
key's or session's JSON, encrypted with AES-128-CTR under a permanent
context key (IV first). Keys stay loaded when saved (contextCount 0) and
reload under any boot unless volatile; a session is removed when saved,
counted in contextList, and reloads once, in this boot only.

Differences from libtpms, stated: DAA sessions do not exist here (TPM_RT_DAA_TPM
answers TPM_INVALID_RESOURCE), and an OSAP session's entity is not re-checked
on reload (libtpms compares the entity digest, TPM_RESOURCEMISSING).
"""

from __future__ import annotations

import hmac
import json
import os

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12.commands.owner import read_bool
from trustlab.devices.tpm12.contexts import CONTEXT_LIST, session_from_json, session_to_json
from trustlab.devices.tpm12.errors import TpmError
from trustlab.devices.tpm12.keys import key_from_json, key_to_json
from trustlab.devices.tpm12.owner_evict import is_owner_evict
from trustlab.devices.tpm12.registry import Request, Response, tpm_command
from trustlab.devices.tpm12.wire import Reader, Writer

TAG_CONTEXTBLOB, TAG_CONTEXT_SENSITIVE = 0x0001, 0x0002
LABEL = 16
CONTEXT_KEY = "contextKey"  # PersistentState.extra: TPM_PERMANENT_DATA -> contextKey (hex), made once
AES_BLOCK = 16


def _context_key(tpm) -> bytes:
    key = tpm.state.extra.get(CONTEXT_KEY)
    if key is None:
        key = tpm.crypto.random(16).hex()
        tpm.state.extra[CONTEXT_KEY] = key
        tpm.mark_dirty()
    return bytes.fromhex(key)


def _crypt(tpm, iv: bytes, data: bytes) -> bytes:
    tpm.crypto.optional("aes_block", -(-len(data) // AES_BLOCK))
    c = Cipher(algorithms.AES(_context_key(tpm)), modes.CTR(iv)).encryptor()
    return c.update(data) + c.finalize()


def _blob(rtype: int, handle: int, label: bytes, count: int, digest: bytes, sensitive: bytes) -> bytes:
    return (Writer().u16(TAG_CONTEXTBLOB).u32(rtype).u32(handle).raw(label).u32(count).raw(digest)
            .u32(0).sized(sensitive).bytes())


def _integrity(tpm, blob_with_zero_digest: bytes) -> bytes:
    secret = tpm.state.tpm_proof or _context_key(tpm)  # libtpms: tpmProof
    return tpm.crypto.hmac(secret, blob_with_zero_digest)


def _nonce(tpm, which: str) -> bytes:
    ctx = tpm.contexts
    if getattr(ctx, which) is None:
        setattr(ctx, which, tpm.crypto.random(20))
    return getattr(ctx, which)


@tpm_command("TPM_SaveContext", handles=1)
def save_context(tpm, req: Request) -> Response:
    handle = req.handles[0]
    rtype, label = req.params.u32(), req.params.raw(LABEL)
    req.params.end()
    if rtype == C.TPM_RT_KEY:
        key = tpm.keys.get(handle)
        if key is None:
            raise TpmError("TPM_INVALID_RESOURCE", f"no loaded key {handle:#010x}")
        if is_owner_evict(tpm, handle):  # Part 3, 21.2 step 4.a.iii (libtpms: TPM_OWNER_CONTROL)
            raise TpmError("TPM_OWNER_CONTROL", f"key {handle:#010x} is owner-evict")
        nonce, internal = _nonce(tpm, "nonce_key"), key_to_json(key)
    elif rtype in (C.TPM_RT_AUTH, C.TPM_RT_TRANS):
        s = tpm.sessions.get(handle)
        if s is None or (s.kind == "TRANSPORT") != (rtype == C.TPM_RT_TRANS):
            raise TpmError("TPM_INVALID_RESOURCE", f"no session {handle:#010x} of resource type {rtype}")
        nonce, internal = _nonce(tpm, "nonce_session"), session_to_json(s)
    else:
        raise TpmError("TPM_INVALID_RESOURCE", f"resource type {rtype:#x} cannot be saved here")
    sensitive = Writer().u16(TAG_CONTEXT_SENSITIVE).raw(nonce).sized(
        json.dumps(internal, sort_keys=True).encode()).bytes()
    count = 0
    if rtype != C.TPM_RT_KEY:
        if len(tpm.contexts.saved) >= CONTEXT_LIST:
            raise TpmError("TPM_NOCONTEXTSPACE", f"{CONTEXT_LIST} session contexts are saved already")
        tpm.contexts.count += 1
        count = tpm.contexts.count
        tpm.contexts.saved.append(count)
        del tpm.sessions[handle]  # step 10.c: the session lives on in the blob only
        if handle == tpm.exclusive:
            tpm.exclusive = None
    digest = _integrity(tpm, _blob(rtype, handle, label, count, bytes(20), sensitive))
    iv = os.urandom(AES_BLOCK)
    blob = _blob(rtype, handle, label, count, digest, iv + _crypt(tpm, iv, sensitive))
    return Response(params=Writer().sized(blob).bytes())


@tpm_command("TPM_LoadContext", handles=1)
def load_context(tpm, req: Request) -> Response:
    hint = req.handles[0]
    keep, size = read_bool(req.params), req.params.u32()
    blob = req.params.raw(size)
    req.params.end()
    r = Reader(blob, "context blob")
    tag, rtype, handle, label, count, digest = (r.u16(), r.u32(), r.u32(), r.raw(LABEL), r.u32(), r.raw(20))
    r.raw(r.u32())  # additionalData
    encrypted = r.sized()
    r.end()
    if tag != TAG_CONTEXTBLOB or len(encrypted) < AES_BLOCK:
        raise TpmError("TPM_BADCONTEXT", "not a TPM_CONTEXT_BLOB")
    if rtype not in (C.TPM_RT_KEY, C.TPM_RT_AUTH, C.TPM_RT_TRANS):
        raise TpmError("TPM_INVALID_RESOURCE", f"resource type {rtype:#x} cannot be loaded here")
    sensitive = _crypt(tpm, encrypted[:AES_BLOCK], encrypted[AES_BLOCK:])
    expect = _integrity(tpm, _blob(rtype, handle, label, count, bytes(20), sensitive))
    s = Reader(sensitive, "context")
    try:
        s_tag, nonce, internal = s.u16(), s.raw(20), json.loads(s.sized())
        s.end()
    except (TpmError, ValueError):
        raise TpmError("TPM_BADCONTEXT", "the context does not decrypt") from None
    if s_tag != TAG_CONTEXT_SENSITIVE:
        raise TpmError("TPM_BADCONTEXT", "not a TPM_CONTEXT_SENSITIVE")
    if rtype == C.TPM_RT_KEY:
        key = key_from_json(internal)
        if key.blob.flags & C.TPM_KEY_FLAG_VOLATILE and nonce != tpm.contexts.nonce_key:
            raise TpmError("TPM_BADCONTEXT", "a volatile key's context is from another boot")
    elif nonce != tpm.contexts.nonce_session:
        raise TpmError("TPM_BADCONTEXT", "a session context is from another boot")
    if not hmac.compare_digest(expect, digest):
        raise TpmError("TPM_BADCONTEXT", "the context's integrity digest does not match")
    if rtype != C.TPM_RT_KEY:
        if count not in tpm.contexts.saved:
            raise TpmError("TPM_BADCONTEXT", f"context {count} was loaded already or never saved")
        tpm.contexts.saved.remove(count)
    table = tpm.keys if rtype == C.TPM_RT_KEY else tpm.sessions
    if keep:
        if handle in table:
            raise TpmError("TPM_BAD_HANDLE", f"handle {handle:#010x} is in use")
        new = handle
    else:
        new = tpm.new_handle("key" if rtype == C.TPM_RT_KEY else "trans" if rtype == C.TPM_RT_TRANS else "auth")
    if rtype == C.TPM_RT_KEY:
        from trustlab.devices.tpm12.commands.keys import KEY_SLOTS

        if len(tpm.keys) >= KEY_SLOTS:
            raise TpmError("TPM_NOSPACE", f"all {KEY_SLOTS} key slots are in use")
        tpm.keys[new] = key
    else:
        session = session_from_json(internal)
        session.handle = new
        tpm.sessions[new] = session
    del hint  # libtpms reads entityHandle only to re-check an OSAP session's entity
    return Response(handles=Writer().u32(new).bytes())
