"""TPM2_SignDigest / TPM2_VerifyDigestSignature with one of swtpm's own keys (RSA, ECC, HMAC).

1.85 defines both commands for any signing key, not only ML-DSA: wolfTPM's
fwTPM signs and verifies with RSA and ECC keys through them (with the key's
own scheme; a key whose scheme is TPM_ALG_NULL is TPM_RC_SCHEME). swtpm
(libtpms) predates 1.85, so the handler runs the 1.83 commands that do the same
work - TPM2_Sign with ``inScheme`` TPM_ALG_NULL (the key's scheme) and
TPM2_VerifySignature - on swtpm, replaying the client's password session, and
renumbers swtpm's error codes to the 1.85 command's parameters. swtpm checks
the key's type, attributes, authorization and, for a restricted key, the
TPMT_TK_HASHCHECK itself.

The one choice: these schemes take no signature context, so a non-empty
``context`` is TPM_RC_SIZE on parameter 1 (TPMU_SIGNATURE_CTX has no buffer
member for them: Part 2 Table 219 as public extracts quote it); wolfTPM
ignores the context instead.
"""

from __future__ import annotations

from trustlab.devices.tpm2 import objects
from trustlab.devices.tpm2.extensions import (
    TPM_RC_AUTH_MISSING,
    TPM_RC_SCHEME,
    TPM_RC_SIZE,
    Command,
    Context,
    Reader,
    Reply,
    TpmError,
    at_handle,
    at_param,
    is_extension_handle,
)
from trustlab.devices.tpm2.pqc import binding
from trustlab.devices.tpm2.pqc import structures as S
from trustlab.timing.formula_sets import tpm2 as rules

TPM_CC_SIGN = 0x15D
TPM_CC_VERIFY_SIGNATURE = 0x177
TPM_RC_RETRY = 0x922
TPM_RC_YIELDED = 0x908
RETRIES = 4


def is_backend_key(handle: int) -> bool:
    """A transient or persistent object of swtpm's (not one of the extension's)."""
    return handle >> 24 in (0x80, 0x81) and not is_extension_handle(handle)


def renumber(rc: int, params: dict[int, int]) -> int:
    """swtpm's response code with its parameter number N moved to the 1.85 command's ``params[N]``.

    A parameter the 1.85 command lacks (TPM2_Sign's ``inScheme``: the key's own
    scheme is used) becomes an error of the key, handle 1.
    """
    if not rc & 0x80 or not rc & 0x40:  # format 0, or a handle/session error: same numbering
        return rc
    n = (rc >> 8) & 0xF
    base = rc & ~0xF40
    if n in params:
        return at_param(base, params[n])
    return at_handle(base, 1)


def _ticket_bytes(r: Reader) -> bytes:
    """The raw TPMT_TK_HASHCHECK at ``r`` (tag, hierarchy, hmac), read past."""
    start = r.pos
    r.u16(), r.u32(), r.tpm2b(S.MAX_DIGEST_BUFFER)
    return r.data[start:r.pos]


def _context(r: Reader) -> None:
    if r.param(1).tpm2b(S.MAX_SIGNATURE_CTX):
        raise TpmError(at_param(TPM_RC_SIZE, 1), "RSA/ECC/HMAC signatures take no signature context")


def _variant(ctx: Context, handle: int) -> str | None:
    rc, public, _name, _qn = binding.read_public(ctx.backend_transact, handle)
    return objects.key_variant(S.tpm2b(public)) if rc == 0 else None


def _backend(ctx: Context, command: bytes, params: dict[int, int]) -> bytes:
    """The parameter area of ``command``'s answer from swtpm; an error is renumbered and raised.

    swtpm answers the first ECDSA signature after start-up TPM_RC_RETRY; like
    ESAPI, the command is sent again (a few times at most).
    """
    for _ in range(RETRIES):
        response = ctx.backend_transact(command)
        rc = S.response_code(response)
        if rc not in (TPM_RC_RETRY, TPM_RC_YIELDED):
            break
    if rc != 0:
        raise TpmError(renumber(rc, params), "backend refused")
    r = Reader(response, 10)
    if command[:2] == b"\x80\x02":
        return r.take(r.u32())
    return r.rest()


def _terms(name: str, variant: str | None):
    """Priced as the 1.83 command that did the work (the formula of ``name`` for the key's algorithm)."""
    def terms(n_in: int, n_out: int) -> dict[str, float]:
        return rules.command_terms(name, variant, n_in, n_out, 0, ok=True)
    return terms


def sign_digest(cmd: Command, ctx: Context) -> Reply:
    """TPM2_SignDigest(@keyHandle; context, digest, validation) as swtpm's TPM2_Sign."""
    r = cmd.params
    _context(r)
    digest = r.param(2).tpm2b(S.MAX_DIGEST_BUFFER)
    ticket = _ticket_bytes(r.param(3))
    r.end()
    if not cmd.sessions:
        raise TpmError(TPM_RC_AUTH_MISSING, "the key must be authorized")
    handle = cmd.handles[0]
    command = S.frame(TPM_CC_SIGN, [handle], S.tpm2b(digest) + S.u16(S.TPM_ALG_NULL) + ticket, [cmd.auth_area])
    signature = _backend(ctx, command, {1: 2, 3: 3})
    if S.u16(S.TPM_ALG_NULL) == signature[:2]:
        raise TpmError(at_handle(TPM_RC_SCHEME, 1), "the key has no signing scheme")
    variant = _variant(ctx, handle)
    return Reply(params=signature, terms=_terms("TPM2_Sign", variant), variant=variant)


def verify_digest_signature(cmd: Command, ctx: Context) -> Reply:
    """TPM2_VerifyDigestSignature(keyHandle; context, digest, signature) as swtpm's TPM2_VerifySignature.

    The answer is a TPM_ST_DIGEST_VERIFIED ticket of the NULL hierarchy with the
    signature's hash as metadata, as for ML-DSA keys (the proof values that
    would make it a checkable ticket live inside swtpm; see the README).
    """
    r = cmd.params
    _context(r)
    digest = r.param(2).tpm2b(S.MAX_DIGEST_BUFFER)
    start = r.param(3).pos
    signature = r.rest()
    handle = cmd.handles[0]
    command = S.frame(TPM_CC_VERIFY_SIGNATURE, [handle], S.tpm2b(digest) + signature)
    _backend(ctx, command, {1: 2, 2: 3})
    sig = Reader(cmd.raw, start)
    sig.u16()
    hash_alg = sig.u16()  # every RSA/ECC/HMAC TPMU_SIGNATURE member starts with its hash
    variant = _variant(ctx, handle)
    return Reply(params=S.null_verified_ticket(S.TPM_ST_DIGEST_VERIFIED, hash_alg),
                 terms=_terms("TPM2_VerifySignature", variant), variant=variant)
