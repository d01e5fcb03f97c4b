"""Logged, exclusive transport sessions (Part 3, 24): Establish, Execute, ReleaseSigned.

Follows Part 3 rev 116 step by step (and libtpms): TPM_ExecuteTransport's
authorization covers ``SHA1(ORDet || wrappedCmdSize || H1)`` with ``H1 =
SHA1(ORDw || DATAw)``, its response ``SHA1(RCet || ORDet || currentTicks ||
locality || wrappedRspSize || H2)``; the log entries are described in
:mod:`..transport_log`. The wrapped command is charged its own crypto but no bus
overhead (it crossed the bus inside the outer command). Establishing a session
charges ``transport`` when the profile defines it (Sarmenta's T_tt; the 2010
profiles have no such variable). An exclusive session is ended by any command
not sent through it (checked by the dispatcher) - the basis of the log-based
virtual counters. Encrypted sessions (TPM_TRANSPORT_ENCRYPT, established with a
key) use MGF1 or AES-128 CTR/OFB pads (:mod:`..transport_crypt`).
"""

from __future__ import annotations

import struct

from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12 import registry
from trustlab.devices.tpm12 import transport_crypt as crypt
from trustlab.devices.tpm12 import transport_log as L
from trustlab.devices.tpm12.commands.endorsement import ek
from trustlab.devices.tpm12.errors import TpmError
from trustlab.devices.tpm12.keys import modulus_of
from trustlab.devices.tpm12.registry import Request, Response, tpm_command
from trustlab.devices.tpm12.sessions import Session
from trustlab.devices.tpm12.wire import Reader, Writer

_U32 = struct.Struct(">I").pack
_ORD_ET = _U32(C.ORD["TPM_ExecuteTransport"])
TRANSPORT_AUTH_TAG = C.TPM_TAG_TRANSPORT_AUTH


def _log(tpm, s: Session, entry: bytes) -> None:
    if s.attributes & C.TPM_TRANSPORT_LOG:
        s.digest = L.extend(s.digest, entry, tpm.crypto.sha1)


@tpm_command("TPM_EstablishTransport", handles=1, auth=(0, 1), transport_ok=False)
def establish(tpm, req: Request) -> Response:
    p = req.params
    tag, attributes, alg, scheme = p.u16(), p.u32(), p.u32(), p.u16()
    secret = p.sized(512)
    p.end()
    if tag != C.TPM_TAG_TRANSPORT_PUBLIC:
        raise TpmError("TPM_INVALID_STRUCTURE", "transPublic tag")
    handle = req.handles[0]
    if handle == C.TPM_KH_TRANSPORT:  # step 1: the secret in clear
        if len(req.auth):
            raise TpmError("TPM_BADTAG", "TPM_KH_TRANSPORT takes no authorization")
        if attributes & C.TPM_TRANSPORT_ENCRYPT:
            raise TpmError("TPM_BAD_SCHEME", "an encrypted session needs an encryption key")
        if len(secret) != 20:
            raise TpmError("TPM_BAD_PARAM_SIZE", "the transport secret is 20 bytes", parsed=True)
    else:  # step 2: TPM_TRANSPORT_AUTH encrypted under a storage or legacy key
        key = tpm.key(handle)
        if key.blob.usage not in (C.TPM_KEY_STORAGE, C.TPM_KEY_LEGACY):
            raise TpmError("TPM_INVALID_KEYUSAGE", "the transport key must be a storage or legacy key")
        if len(req.auth):
            req.auth.check(0, key.usage_auth, (C.TPM_ET_KEYHANDLE, handle))
        elif key.blob.auth_usage != C.TPM_AUTH_NEVER:
            raise TpmError("TPM_AUTHFAIL", "the transport key needs authorization")
        r = Reader(tpm.crypto.rsa_decrypt(key.private, secret), "TPM_TRANSPORT_AUTH")
        if r.u16() != TRANSPORT_AUTH_TAG:
            raise TpmError("TPM_INVALID_STRUCTURE", "not a TPM_TRANSPORT_AUTH")
        secret = r.raw(20)
        r.end()
        if attributes & C.TPM_TRANSPORT_ENCRYPT:  # step 7
            crypt.check_scheme(alg, scheme)
    if sum(1 for x in tpm.sessions.values() if x.kind == "TRANSPORT") >= MAX_TRANSPORTS:
        raise TpmError("TPM_RESOURCES", f"all {MAX_TRANSPORTS} transport session slots are in use")
    tpm.crypto.optional("transport")
    s = Session(tpm.new_handle("trans"), "TRANSPORT", tpm.crypto.random(20),
                auth_secret=secret, attributes=attributes)
    if attributes & C.TPM_TRANSPORT_ENCRYPT:
        s.alg, s.scheme = alg, scheme
    tpm.sessions[s.handle] = s
    ticks = tpm.current_ticks()
    out = _U32(req.locality) + ticks + s.nonce_even
    ordinal = _U32(req.ordinal)
    _log(tpm, s, L.log_in(tpm.crypto.sha1(ordinal, req.param_bytes)))
    _log(tpm, s, L.log_out(ticks, tpm.crypto.sha1(_U32(C.TPM_SUCCESS), ordinal, out), req.locality))
    if attributes & C.TPM_TRANSPORT_EXCLUSIVE:  # step 9
        if tpm.exclusive is not None:
            tpm.end_session(tpm.exclusive)
        tpm.exclusive = s.handle
    return Response(handles=Writer().u32(s.handle).bytes(), params=out)


MAX_TRANSPORTS = 16
_ORD_NAMES = {v: k for k, v in C.ORD.items()}


def _transport_session(req: Request) -> Session:
    s = req.auth.session(len(req.auth) - 1)
    if s.kind != "TRANSPORT":
        raise TpmError("TPM_INVALID_AUTHHANDLE", "the last session must be a transport session")
    return s


# Ordinals of the specification this engine does not implement, as libtpms' ordinal table frames them in
# a transport session: it knows every one (its TPM_Process_Unused, or a command not built here, answers
# TPM_BAD_ORDINAL inside a successful TPM_ExecuteTransport, as the TSS 1.2 testsuite's -trans03 tests of
# delegation and maintenance show; step 3's TPM_BAD_PARAMETER is for ordinals no table lists). Their
# input handles (all key handles), where they have any.
UNIMPLEMENTED_HANDLES = {"TPM_Delegate_CreateKeyDelegation": 1, "TPM_CertifySelfTest": 1, "TPM_ChangeAuthAsymStart": 1,
                         "TPM_ChangeAuthAsymFinish": 1, "TPM_MigrateKey": 1, "TPM_SetRedirection": 1}


def _pubkey_hash(tpm, name: str, n_handles: int, wrapped: bytes) -> bytes:
    """LOG_IN pubKeyHash (step 10.c-e): over the keys the wrapped command names, else zero."""
    handles = list(struct.unpack_from(f">{n_handles}I", wrapped, 10)) if n_handles else []
    if name == "TPM_FlushSpecific":  # step 5 special case: only a key being flushed is logged
        rtype = struct.unpack_from(">I", wrapped, 14)[0] if len(wrapped) >= 18 else 0
        handles = handles if rtype == C.TPM_RT_KEY else []
    elif name == "TPM_OwnerReadInternalPub" and len(wrapped) >= 14:
        # libtpms' ordinal table: no input handle, but one key handle (TPM_KH_SRK or TPM_KH_EK) that opens
        # the parameters (TrouSerS' Tspi_TPM_OwnerGetSRKPubKey in a logged session checks this entry)
        handles = [struct.unpack_from(">I", wrapped, 10)[0]]
    if not handles:
        return L.ZERO
    digests = []
    for h in handles:
        if h == C.TPM_KH_EK:  # (libtpms TPM_KeyHandleEntries_GetKey with "can use EK")
            public = modulus_of(ek(tpm))
        else:
            key = tpm.key(h)
            public = key.blob.pub if key.private is None else modulus_of(key.private)
        digests.append(tpm.crypto.sha1(Writer().sized(public).bytes()))
    return tpm.crypto.sha1(*digests)


def _crypt(tpm, s: Session, even: bytes, odd: bytes, label: bytes, data: bytes) -> bytes:
    """One direction's pad; MGF1's hashing is charged, AES blocks as ``aes_block`` where profiled."""
    if s.alg == C.TPM_ALG_AES128:
        tpm.crypto.optional("aes_block", -(-len(data) // crypt.AES_BLOCK))
    return crypt.crypt(s.alg, s.scheme, s.auth_secret, even, odd, label, data, tpm.crypto.sha1)


@tpm_command("TPM_ExecuteTransport", auth=(1,), transport_ok=False, own_digests=True)
def execute_transport(tpm, req: Request) -> Response:
    wrapped = req.params.sized(1 << 16)
    req.params.end()
    s = _transport_session(req)
    if len(wrapped) < 10:
        raise TpmError("TPM_BAD_PARAM_SIZE", "the wrapped command is shorter than a header", parsed=True)
    tag_w, _size_w, ord_w = struct.unpack_from(">HII", wrapped)
    spec = registry.by_ordinal(ord_w)
    name = spec.name if spec else _ORD_NAMES.get(ord_w, "")
    n_handles = spec.handles if spec else UNIMPLEMENTED_HANDLES.get(name, 0)
    n_auth = C.REQUEST_TAGS.get(tag_w, 0)
    start = 10 + 4 * n_handles
    end = start if ord_w in L.NO_DATA_ORDINALS else max(start, len(wrapped) - 45 * n_auth)
    odd = req.auth.uses[0].nonce_odd
    encrypted = bool(s.attributes & C.TPM_TRANSPORT_ENCRYPT)
    if encrypted and end > start:  # step 4: C1 = the decrypted DATAw
        plain = _crypt(tpm, s, s.nonce_even, odd, b"in", wrapped[start:end])
        wrapped = wrapped[:start] + plain + wrapped[end:]
    h1 = tpm.crypto.sha1(wrapped[6:10], wrapped[start:end])  # step 6
    req.auth.check_transport(0, s, tpm.crypto.sha1(_ORD_ET, _U32(len(wrapped)), h1))  # step 7
    if not name:
        raise TpmError("TPM_BAD_PARAMETER", f"wrapped ordinal {ord_w:#x} is unknown")  # step 3
    if spec is not None and not spec.transport_ok:
        raise TpmError("TPM_NO_WRAP_TRANSPORT", f"{name} cannot be wrapped")  # step 9
    if s.attributes & C.TPM_TRANSPORT_LOG:
        _log(tpm, s, L.log_in(h1, _pubkey_hash(tpm, name, n_handles, wrapped)))
    rsp, _, h2 = tpm.dispatch(wrapped, outer=False, transport=s.handle, in_digest=h1)
    if not h2 or ord_w in L.NO_DATA_ORDINALS:  # failed, or no DATAw: H2 = SHA1(RCw || ORDw) (step 14)
        h2 = tpm.crypto.sha1(rsp[6:10], wrapped[6:10])
    ticks = tpm.current_ticks()
    _log(tpm, s, L.log_out(ticks, h2, req.locality))
    if encrypted and rsp[6:10] == _U32(C.TPM_SUCCESS) and ord_w not in L.NO_DATA_ORDINALS:  # step 17
        s.next_even = tpm.crypto.random(20)  # the nonceEven this response carries seeds its pad
        n_out = {C.TPM_TAG_RSP_AUTH1_COMMAND: 1, C.TPM_TAG_RSP_AUTH2_COMMAND: 2}.get(struct.unpack(">H", rsp[:2])[0], 0)
        a, b = 10 + 4 * tpm.last_out_handles, len(rsp) - 41 * n_out
        rsp = rsp[:a] + _crypt(tpm, s, s.next_even, odd, b"out", rsp[a:b]) + rsp[b:]
    head = ticks[2:10] + _U32(req.locality)
    out_digest = tpm.crypto.sha1(_U32(C.TPM_SUCCESS), _ORD_ET, head, _U32(len(rsp)), h2)  # step 15
    return Response(params=head + Writer().sized(rsp).bytes(), out_digest=out_digest)


@tpm_command("TPM_ReleaseTransportSigned", handles=1, auth=(1, 2), transport_ok=False)
def release_transport_signed(tpm, req: Request) -> Response:
    anti_replay = req.params.raw(20)
    req.params.end()
    s = _transport_session(req)
    key = tpm.key(req.handles[0])
    if key.blob.parms.sig_scheme not in (C.TPM_SS_RSASSAPKCS1v15_SHA1, C.TPM_SS_RSASSAPKCS1v15_INFO):
        raise TpmError("TPM_INAPPROPRIATE_SIG", "the key must sign with RSASSA-PKCS1v15 SHA1 or INFO")
    if len(req.auth) == 1 and key.blob.auth_usage != C.TPM_AUTH_NEVER:
        raise TpmError("TPM_AUTHFAIL", "the signing key needs authorization")
    if key.blob.usage != C.TPM_KEY_SIGNING or key.private is None:  # step 3
        raise TpmError("TPM_INVALID_KEYUSAGE", "TPM_ReleaseTransportSigned needs a signing key")
    if len(req.auth) == 2:
        req.auth.check(0, key.usage_auth, (C.TPM_ET_KEYHANDLE, req.handles[0]))
    req.auth.check_transport(len(req.auth) - 1, s, code="TPM_AUTH2FAIL")  # step 5
    if not s.attributes & C.TPM_TRANSPORT_LOG:
        raise TpmError("TPM_BAD_MODE", "the session is not logged")
    ticks = tpm.current_ticks()
    s.digest = L.release_output(s.digest, ticks, req.in_digest, req.locality, tpm.crypto.sha1)  # step 6
    sig = tpm.crypto.rsa_sign(key.private, tpm.crypto.sha1(L.sign_info(anti_replay, s.digest)))
    req.auth.uses[-1].cont = 0  # step 10: continueTransSession = FALSE, the session ends
    return Response(params=_U32(req.locality) + ticks + Writer().sized(sig).bytes())
