"""Command auditing: TPM_SetOrdinalAuditStatus, TPM_GetAuditDigest, TPM_GetAuditDigestSigned (Part 3, 8).

The owner chooses which ordinals are audited; each successful execution of one
extends auditDigest with TPM_AUDIT_EVENT_IN (tag 0x0012, input parameter digest,
the audit counter) and TPM_AUDIT_EVENT_OUT (tag 0x0013, output digest, counter),
done by the engine's dispatcher. Nothing is audited by default: the TPMs the
2010 profiles were measured on spent no time on audit hashing in the paper's
experiments (libtpms audits 22 ordinals by default; see the README).
"""

from __future__ import annotations

import struct

from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12.commands.owner import read_bool
from trustlab.devices.tpm12.commands.sign import signing_key
from trustlab.devices.tpm12.errors import TpmError
from trustlab.devices.tpm12.registry import Request, Response, by_ordinal, tpm_command
from trustlab.devices.tpm12.transport_log import sign_info
from trustlab.devices.tpm12.wire import Writer

NEVER_AUDITED = {C.ORD[n] for n in ("TPM_GetAuditDigest", "TPM_GetAuditDigestSigned", "TPM_GetAuditEvent",
                                    "TPM_GetAuditEventSigned", "TPM_GetOrdinalAuditStatus")}


def _ordinal_list(tpm, start: int = 0) -> bytes:
    return b"".join(struct.pack(">I", o) for o in sorted(tpm.audited) if o >= start)


@tpm_command("TPM_SetOrdinalAuditStatus", auth=(1,))
def set_ordinal_audit_status(tpm, req: Request) -> Response:
    ordinal, state = req.params.u32(), read_bool(req.params)
    req.params.end()
    req.auth.check(0, tpm.owner_auth(), (C.TPM_ET_OWNER, C.TPM_KH_OWNER))
    if state and (ordinal in NEVER_AUDITED or by_ordinal(ordinal) is None):
        raise TpmError("TPM_BAD_PARAMETER", f"ordinal {ordinal:#x} cannot be audited")
    tpm.set_audited(tpm.audited | {ordinal} if state else tpm.audited - {ordinal})
    return Response()


@tpm_command("TPM_GetAuditDigest")
def get_audit_digest(tpm, req: Request) -> Response:
    start = req.params.u32()
    req.params.end()
    return Response(params=tpm.audit_counter_value() + tpm.audit_digest + b"\x00"
                    + Writer().sized(_ordinal_list(tpm, start)).bytes())


@tpm_command("TPM_GetAuditDigestSigned", handles=1, auth=(0, 1))
def get_audit_digest_signed(tpm, req: Request) -> Response:
    """Part 3, 8.5: sign TPM_SIGN_INFO("ADIG", antiReplay, auditDigest || counterValue || ordinalDigest).

    closeAudit is a TPM_BOOL: TrouSerS passes a caller's -1 on as 0xFF, which libtpms refuses with
    TPM_BAD_PARAMETER before anything else (the TSS 1.2 testsuite's Tspi_TPM_GetAuditDigest05)."""
    close, anti_replay = read_bool(req.params), req.params.raw(20)
    req.params.end()
    key = signing_key(tpm, req, req.handles[0], (C.TPM_KEY_SIGNING, C.TPM_KEY_IDENTITY, C.TPM_KEY_LEGACY))
    if key.blob.parms.sig_scheme not in (C.TPM_SS_RSASSAPKCS1v15_SHA1, C.TPM_SS_RSASSAPKCS1v15_INFO):
        raise TpmError("TPM_INVALID_KEYUSAGE", "the key must sign with RSASSA-PKCS1v15 SHA1 or INFO")
    counter, digest = tpm.audit_counter_value(), tpm.audit_digest
    ordinal_digest = tpm.crypto.sha1(_ordinal_list(tpm))
    sig = tpm.crypto.rsa_sign(key.private, tpm.crypto.sha1(sign_info(anti_replay, digest + counter + ordinal_digest,
                                                                     b"ADIG")))
    if close:
        if key.blob.usage != C.TPM_KEY_IDENTITY:
            raise TpmError("TPM_INVALID_KEYUSAGE", "only an identity key may close the audit session")
        tpm.audit_digest = bytes(20)
    return Response(params=counter + digest + ordinal_digest + Writer().sized(sig).bytes())
