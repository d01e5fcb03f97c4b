"""Exclusive logged transport sessions (Part 3, 24): Establish, Execute, ReleaseSigned.

The log digest construction lives in :mod:`..transport_log` so verifiers share
it. Building the session charges ``transport`` when the profile defines it
(Sarmenta's T_tt; the 2010 profiles have no such variable). An exclusive
session is ended by any command not sent through it (checked by the
dispatcher), which is what makes the log a faithful record of everything the
TPM did in between — the basis of the log-based virtual counters.
"""

from __future__ import annotations

import struct

from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12 import transport_log as L
from trustlab.devices.tpm12.errors import TpmError
from trustlab.devices.tpm12.registry import Request, Response, tpm_command
from trustlab.devices.tpm12.sessions import Session
from trustlab.devices.tpm12.wire import Writer


def _log(tpm, s: Session, in_digest: bytes, out_digest: bytes, ticks: bytes, pubkey_hash: bytes = L.ZERO) -> None:
    if s.attributes & C.TPM_TRANSPORT_LOG:
        s.digest = L.extend(s.digest, L.log_in(in_digest, pubkey_hash), tpm.crypto.sha1)
        s.digest = L.extend(s.digest, L.log_out(ticks, out_digest), tpm.crypto.sha1)


def _ticks_struct(tpm) -> bytes:
    return tpm.current_ticks()


@tpm_command("TPM_EstablishTransport", handles=1, auth=(0, 1), transport_ok=False)
def establish(tpm, req: Request) -> Response:
    p = req.params
    tag, attributes, _alg, _scheme = p.u16(), p.u32(), p.u32(), p.u16()
    secret = p.sized(512)
    p.end()
    if tag != C.TPM_TAG_TRANSPORT_PUBLIC:
        raise TpmError("TPM_INVALID_STRUCTURE", "transPublic tag")
    if attributes & C.TPM_TRANSPORT_ENCRYPT:
        raise TpmError("TPM_BAD_SCHEME", "encrypted transport sessions are not implemented")
    handle = req.handles[0]
    if handle != C.TPM_KH_TRANSPORT:
        key = tpm.key(handle)
        req.auth.check(0, key.usage_auth, (C.TPM_ET_KEYHANDLE, handle))
        secret = tpm.crypto.rsa_decrypt(key.private, secret)
    elif len(req.auth):
        raise TpmError("TPM_BADTAG", "TPM_KH_TRANSPORT takes no authorization")
    if len(secret) != 20:
        raise TpmError("TPM_BAD_PARAMETER", "the transport secret is 20 bytes")
    tpm.crypto.optional("transport")
    s = Session(tpm.new_handle("trans"), "TRANSPORT", tpm.crypto.random(20),
                auth_secret=secret, attributes=attributes)
    tpm.sessions[s.handle] = s
    if attributes & C.TPM_TRANSPORT_EXCLUSIVE:
        if tpm.exclusive is not None:
            tpm.sessions.pop(tpm.exclusive, None)
        tpm.exclusive = s.handle
    ticks = _ticks_struct(tpm)
    in_digest = tpm.crypto.sha1(struct.pack(">I", req.ordinal), req.param_bytes)
    out = Writer().u32(0).raw(ticks).raw(s.nonce_even).bytes()
    _log(tpm, s, in_digest, tpm.crypto.sha1(struct.pack(">II", 0, req.ordinal), out), ticks)
    return Response(handles=Writer().u32(s.handle).bytes(), params=out)


def _transport_session(tpm, req: Request) -> Session:
    s = req.auth.session(len(req.auth) - 1)
    if s.kind != "TRANSPORT":
        raise TpmError("TPM_INVALID_AUTHHANDLE", "the last session must be a transport session")
    req.auth.check_transport(len(req.auth) - 1, s)
    return s


@tpm_command("TPM_ExecuteTransport", auth=(1,), transport_ok=False)
def execute_transport(tpm, req: Request) -> Response:
    wrapped = req.params.sized(1 << 16)
    req.params.end()
    s = _transport_session(tpm, req)
    if len(wrapped) >= 10:
        inner = struct.unpack(">I", wrapped[6:10])[0]
        from trustlab.devices.tpm12 import registry

        spec = registry.by_ordinal(inner)
        if spec is not None and not spec.transport_ok:
            raise TpmError("TPM_BAD_ORDINAL", f"{spec.name} cannot be wrapped in a transport session")
    rsp, in_d, out_d = tpm.dispatch(wrapped, outer=False, transport=s.handle)
    if not out_d:  # a failed inner command is logged as (ordinal||body, rc||ordinal)
        in_d = tpm.crypto.sha1(wrapped[6:10], wrapped[10:])
        out_d = tpm.crypto.sha1(rsp[6:10], wrapped[6:10])
    ticks = _ticks_struct(tpm)
    _log(tpm, s, in_d, out_d, ticks)
    return Response(params=ticks[2:10] + Writer().u32(0).sized(rsp).bytes())


@tpm_command("TPM_ReleaseTransportSigned", handles=1, auth=(1, 2), transport_ok=False)
def release_transport_signed(tpm, req: Request) -> Response:
    anti_replay = req.params.raw(20)
    req.params.end()
    s = _transport_session(tpm, req)
    key = tpm.key(req.handles[0])
    if len(req.auth) == 2:
        req.auth.check(0, key.usage_auth, (C.TPM_ET_KEYHANDLE, req.handles[0]))
    elif key.blob.auth_usage != C.TPM_AUTH_NEVER:
        raise TpmError("TPM_AUTHFAIL", "the signing key needs authorization")
    if key.blob.usage not in (C.TPM_KEY_IDENTITY, C.TPM_KEY_SIGNING) or key.private is None:
        raise TpmError("TPM_INVALID_KEYUSAGE", "ReleaseTransportSigned needs an identity or signing key")
    if not s.attributes & C.TPM_TRANSPORT_LOG:
        raise TpmError("TPM_BAD_PARAMETER", "the session is not logged")
    ticks = _ticks_struct(tpm)
    s.digest = L.extend(s.digest, L.log_in(req.in_digest), tpm.crypto.sha1)
    s.digest = L.extend(s.digest, L.log_out(ticks, req.in_digest), tpm.crypto.sha1)
    sig = tpm.crypto.rsa_sign(key.private, tpm.crypto.sha1(L.sign_info(anti_replay, s.digest)))
    tpm.sessions.pop(s.handle, None)
    if tpm.exclusive == s.handle:
        tpm.exclusive = None
    return Response(params=Writer().u32(0).raw(ticks).sized(sig).bytes())
