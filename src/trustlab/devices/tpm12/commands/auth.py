"""TPM_OIAP and TPM_OSAP: opening authorization sessions (Part 3, 18.1-18.2).

Neither hashes the command (no authorization trailer); OSAP computes the
shared secret ``HMAC(entity secret, nonceEvenOSAP || nonceOddOSAP)`` — 4 SHA-1
blocks — which is the "authorization-session overhead" the oracle study
reports separately.
"""

from __future__ import annotations

import struct

from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12.errors import TpmError
from trustlab.devices.tpm12.nvareas import areas
from trustlab.devices.tpm12.registry import Request, Response, tpm_command
from trustlab.devices.tpm12.sessions import Session

_U32 = struct.Struct(">I").pack

MAX_SESSIONS = 64


def _new_session(tpm, kind: str) -> Session:
    if len(tpm.sessions) >= MAX_SESSIONS:
        raise TpmError("TPM_RESOURCES", f"all {MAX_SESSIONS} session slots are in use")
    s = Session(tpm.new_handle("auth"), kind, tpm.crypto.random(20))
    tpm.sessions[s.handle] = s
    return s


@tpm_command("TPM_OIAP")
def oiap(tpm, req: Request) -> Response:
    req.params.end()
    s = _new_session(tpm, "OIAP")
    return Response(_U32(s.handle) + s.nonce_even)


def entity_secret(tpm, etype: int, value: int) -> bytes:
    if etype == C.TPM_ET_OWNER:
        return tpm.owner_auth()
    if etype == C.TPM_ET_SRK:
        tpm.key(C.TPM_KH_SRK)
        return tpm.state.srk_auth
    if etype == C.TPM_ET_KEYHANDLE:
        return tpm.key(value).usage_auth
    if etype == C.TPM_ET_COUNTER:
        counter = tpm.state.counters.get(value)
        if counter is None:
            raise TpmError("TPM_BAD_COUNTER", f"no counter {value}")
        return counter.auth
    if etype == C.TPM_ET_NV:
        area = areas(tpm).get(value)
        if area is None:
            raise TpmError("TPM_BADINDEX", f"no NV area {value:#010x}")
        return area.auth
    raise TpmError("TPM_BAD_PARAMETER", f"entity type {etype:#x}")


@tpm_command("TPM_OSAP")
def osap(tpm, req: Request) -> Response:
    etype, value, odd_osap = req.params.u16(), req.params.u32(), req.params.raw(20)
    req.params.end()
    if etype >> 8 != C.TPM_ET_XOR:  # Part 2, 4.9: the MSB names the ADIP encryption; only XOR here
        raise TpmError("TPM_INAPPROPRIATE_ENC", f"ADIP encryption scheme {etype >> 8:#x}")
    if etype == C.TPM_ET_OWNER:  # the owner is one entity whatever entityValue says (TrouSerS sends 0)
        value = C.TPM_KH_OWNER
    secret = entity_secret(tpm, etype, value)
    s = _new_session(tpm, "OSAP")
    even_osap = tpm.crypto.random(20)
    s.shared_secret = tpm.crypto.hmac(secret, even_osap, odd_osap)
    # the SRK may be named as TPM_ET_SRK or as a key handle; handlers ask for the latter
    s.entity = (C.TPM_ET_KEYHANDLE, C.TPM_KH_SRK) if etype == C.TPM_ET_SRK else (etype, value)
    return Response(_U32(s.handle) + s.nonce_even + even_osap)


@tpm_command("TPM_Terminate_Handle", handles=1)
def terminate_handle(tpm, req: Request) -> Response:
    """Close an authorization session (TPM 1.1's TPM_Terminate_Handle, deprecated in 1.2 but kept).

    IBM's TPM 1.2 utilities send it after every authorized command; libtpms
    (TPM_Process_TerminateHandle) answers TPM_INVALID_AUTHHANDLE for a handle
    that is not an open OIAP/OSAP/DSAP session, transport sessions included.
    """
    req.params.end()
    handle = req.handles[0]
    s = tpm.sessions.get(handle)
    if s is None or s.kind == "TRANSPORT":
        raise TpmError("TPM_INVALID_AUTHHANDLE", f"no authorization session {handle:#010x}")
    del tpm.sessions[handle]
    return Response()
