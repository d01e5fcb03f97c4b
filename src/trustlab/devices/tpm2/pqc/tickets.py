"""Is a TPMT_TK_HASHCHECK valid? Asked of swtpm, which holds the hierarchy proofs that make one.

A restricted ML-DSA key may sign an external digest only with a valid
hash-check ticket: proof that the TPM hashed a message which does not begin
with TPM_GENERATED_VALUE (1.85 Part 3, 20.7.1, as public extracts quote it;
wolfTPM's fwTPM enforces the same). Such tickets come from swtpm's TPM2_Hash or
TPM2_SequenceComplete: an HMAC under the hierarchy's proof value, which only
swtpm knows. So the ticket is shown to swtpm in the one command that checks
one - TPM2_Sign with a restricted keyed-hash key of the same hash - and the
result is discarded.

There is no valid ticket for pure ML-DSA: its digest is the message
representative mu, not the hash of a message (the spec's own note), so any
ticket offered with it is TPM_RC_TICKET.
"""

from __future__ import annotations

from trustlab.devices.tpm2.extensions import Reader, TpmError, at_param
from trustlab.devices.tpm2.pqc import binding
from trustlab.devices.tpm2.pqc import structures as S

TPM_RC_TICKET = 0x0A0
TPM_CC_SIGN = 0x15D
CHECKABLE_HIERARCHIES = (S.TPM_RH_OWNER, S.TPM_RH_ENDORSEMENT, S.TPM_RH_PLATFORM)


def checker_template(hash_alg: int) -> bytes:
    """A restricted HMAC signing key (a fresh random key; only its restriction matters)."""
    attributes = (S.FIXED_TPM | S.FIXED_PARENT | S.SENSITIVE_DATA_ORIGIN | S.USER_WITH_AUTH | S.NO_DA
                  | S.RESTRICTED | S.SIGN)
    return (S.u16(S.TPM_ALG_KEYEDHASH) + S.u16(S.TPM_ALG_SHA256) + S.u32(attributes) + S.tpm2b(b"")
            + S.u16(S.TPM_ALG_HMAC) + S.u16(hash_alg) + S.tpm2b(b""))


def require_hashcheck(transact, hash_alg: int | None, digest: bytes, hierarchy: int, hmac: bytes,
                      param: int = 3) -> None:
    """Raise TPM_RC_TICKET (on ``param``) unless (hierarchy, hmac) is swtpm's ticket for ``digest``.

    ``hash_alg`` None: the digest is no message hash (pure ML-DSA's mu), so no ticket is valid.
    """
    if hierarchy == S.TPM_RH_NULL or not hmac:
        raise TpmError(at_param(TPM_RC_TICKET, param), "a restricted key needs a valid hash-check ticket")
    if hash_alg is None:
        raise TpmError(at_param(TPM_RC_TICKET, param), "no hash-check ticket covers an ML-DSA mu")
    if hierarchy not in CHECKABLE_HIERARCHIES:
        raise TpmError(at_param(TPM_RC_TICKET, param), "ticket of no hierarchy")
    response = transact(S.frame(S.TPM_CC_CREATE_PRIMARY, [hierarchy], S.sensitive_create()
                                + S.tpm2b(checker_template(hash_alg)) + S.tpm2b(b"") + S.u32(0),
                                [binding.PASSWORD_EMPTY]))
    rc = S.response_code(response)
    if rc != 0:
        raise TpmError(rc, "backend could not make a key to check the ticket (hierarchy password set?)")
    handle = Reader(response, 10).u32()
    try:
        ticket = S.u16(S.TPM_ST_HASHCHECK) + S.u32(hierarchy) + S.tpm2b(hmac)
        rc = S.response_code(transact(S.frame(TPM_CC_SIGN, [handle], S.tpm2b(digest) + S.u16(S.TPM_ALG_NULL)
                                              + ticket, [binding.PASSWORD_EMPTY])))
    finally:
        transact(S.frame(S.TPM_CC_FLUSH_CONTEXT, [], S.u32(handle)))
    if rc != 0:
        raise TpmError(at_param(TPM_RC_TICKET, param), "hash-check ticket does not match the digest")
