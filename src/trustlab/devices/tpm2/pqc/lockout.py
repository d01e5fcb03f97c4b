"""Dictionary-attack protection of PQC key passwords, kept by the backend TPM's own DA logic.

The extension keeps no counter of its own: libtpms' ``failedTries``,
``maxTries``, ``recoveryTime`` and ``lockoutRecovery`` govern PQC keys as they
govern swtpm's keys, so TPM2_DictionaryAttackParameters,
TPM2_DictionaryAttackLockReset, TPM2_Clear and self-healing apply unchanged,
and TPM2_GetCapability(TPM_PT_LOCKOUT_COUNTER) counts PQC failures.

- Before the password of a DA-protected key (noDA CLEAR) is compared, the
  TPM's lockout test is made (libtpms ``CheckLockedOut``:
  ``failedTries >= maxTries`` answers TPM_RC_LOCKOUT, whatever the password),
  from TPM_PT_LOCKOUT_COUNTER and TPM_PT_MAX_AUTH_FAIL read just then (the
  TPM applies its self-healing at every command, the GetCapability included).
- A wrong password is replayed on the TPM as a failed authorization of a
  DA-protected *canary*: a keyed-hash primary in the null hierarchy with a
  random authValue, made, refused once (TPM2_HMAC with an empty password) and
  flushed directly on the TPM, past the resource manager (it takes no slot of
  the client's space and the client never sees it). libtpms'
  ``IncrementLockout`` then counts it exactly as a failure on one of its own
  keys. If the TPM does not count it (a warning such as TPM_RC_NV_RATE, which
  libtpms answers for its own keys then without comparing the password), the
  client gets that code, not TPM_RC_AUTH_FAIL: no uncounted guess is answered.

noDA keys and sequences (which libtpms makes DA-exempt) answer
TPM_RC_BAD_AUTH and count nothing.
"""

from __future__ import annotations

import os
import struct

from trustlab.devices.tpm2.commands import TPM_RC_AUTH_FAIL, TPM_RC_RETRY
from trustlab.devices.tpm2.extensions import TPM_RC_OBJECT_MEMORY, Context, TpmError, at_session
from trustlab.devices.tpm2.pqc import structures as S

TPM_RC_LOCKOUT = 0x921
TPM_PT_LOCKOUT_COUNTER = 0x20E
TPM_PT_MAX_AUTH_FAIL = 0x20F
TPM_HT_TRANSIENT_FIRST = 0x80000000
COUNTED = at_session(TPM_RC_AUTH_FAIL, 1)
"""The canary's answer when libtpms counted its failure (IncrementLockout: TPM_RC_AUTH_FAIL on session 1)."""
CANARY_ATTRIBUTES = S.FIXED_TPM | S.FIXED_PARENT | S.SENSITIVE_DATA_ORIGIN | S.USER_WITH_AUTH | S.SIGN
"""An HMAC key that is DA-protected (noDA CLEAR) and usable with a password."""


def _canary_template() -> bytes:
    """TPMT_PUBLIC of the canary: keyed-hash, SHA-256, HMAC-SHA256 scheme, empty policy and unique."""
    return (S.u16(S.TPM_ALG_KEYEDHASH) + S.u16(S.TPM_ALG_SHA256) + S.u32(CANARY_ATTRIBUTES) + S.tpm2b(b"")
            + S.u16(S.TPM_ALG_HMAC) + S.u16(S.TPM_ALG_SHA256) + S.tpm2b(b""))


def direct(ctx: Context):
    """The backend TPM past the resource manager (the same TPM without one)."""
    return ctx.backend_direct if ctx.backend_direct is not None else ctx.backend_transact


def check(ctx: Context) -> None:
    """TPM_RC_LOCKOUT if the TPM is in lockout now (libtpms' ``failedTries >= maxTries``).

    Asked directly, past the resource manager: a property read needs nothing of the client's space, whose
    objects the RM would otherwise load and save around it (and charge to the PQC command)."""
    response = direct(ctx)(S.frame(S.TPM_CC_GET_CAPABILITY, [], S.u32(S.TPM_CAP_TPM_PROPERTIES)
                                            + S.u32(TPM_PT_LOCKOUT_COUNTER) + S.u32(2)))
    values = S.tpm_properties(response)
    counter, limit = values.get(TPM_PT_LOCKOUT_COUNTER), values.get(TPM_PT_MAX_AUTH_FAIL)
    if counter is None or limit is None:
        raise TpmError(S.response_code(response) or 0x101, "the TPM's dictionary-attack state is unreadable")
    if counter >= limit:
        raise TpmError(TPM_RC_LOCKOUT, "the TPM is in dictionary-attack lockout")



def record_failure(ctx: Context) -> int:
    """Have the TPM count one failed authorization of a DA-protected object; its response code
    (TPM_RC_AUTH_FAIL + session 1 when counted; TPM_RC_LOCKOUT if the TPM was locked out meanwhile)."""
    transact = direct(ctx)
    create = S.frame(S.TPM_CC_CREATE_PRIMARY, [S.TPM_RH_NULL],
                     S.tpm2b(S.tpm2b(os.urandom(16)) + S.tpm2b(b"")) + S.tpm2b(_canary_template())
                     + S.tpm2b(b"") + S.u32(0), [S.password()])
    response = transact(create)
    evicted = None
    if S.response_code(response) == TPM_RC_OBJECT_MEMORY:  # no resource manager: clients' objects fill it
        evicted = evict_one(transact)
        if evicted is not None:
            response = transact(create)
    try:
        if S.response_code(response) != 0 or len(response) < 14:
            raise TpmError(S.response_code(response) or 0x101, "the dictionary-attack canary was refused")
        (canary,) = struct.unpack_from(">I", response, 10)
        try:
            wrong = S.frame(S.TPM_CC_HMAC, [canary], S.tpm2b(b"\0") + S.u16(S.TPM_ALG_SHA256), [S.password(b"")])
            refused = transact(wrong)
            if S.response_code(refused) == TPM_RC_RETRY:  # libtpms' first DA use since Startup (daUsed)
                refused = transact(wrong)
        finally:
            transact(S.frame(S.TPM_CC_FLUSH_CONTEXT, [], S.u32(canary)))
        return S.response_code(refused)
    finally:
        if evicted is not None:
            restore(transact, evicted)


def restore(transact, evicted: bytes) -> None:
    """Load back an object :func:`evict_one` borrowed a slot from; never silently: if the TPM refuses it, a
    client's object would be gone, so that is an error the client sees."""
    back = transact(S.frame(S.TPM_CC_CONTEXT_LOAD, [], evicted))
    if S.response_code(back) != 0:
        raise TpmError(S.response_code(back), "an object whose TPM slot was borrowed could not be loaded back")


def evict_one(transact) -> bytes | None:
    """Save and flush the first loaded transient object (it is loaded back, into the slot it leaves, after
    the canary): the TPMS_CONTEXT, or None."""
    listed = transact(S.frame(S.TPM_CC_GET_CAPABILITY, [],
                              S.u32(S.TPM_CAP_HANDLES) + S.u32(TPM_HT_TRANSIENT_FIRST) + S.u32(1)))
    if S.response_code(listed) != 0 or len(listed) < 23 or struct.unpack_from(">I", listed, 15)[0] < 1:
        return None
    (handle,) = struct.unpack_from(">I", listed, 19)
    saved = transact(S.frame(S.TPM_CC_CONTEXT_SAVE, [handle], b""))
    if S.response_code(saved) != 0:
        return None
    transact(S.frame(S.TPM_CC_FLUSH_CONTEXT, [], S.u32(handle)))
    return saved[10:]
