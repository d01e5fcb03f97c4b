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

The sign/verify sequences (TPM2_SignSequenceStart ... Complete) with an RSA
or ECC key run on swtpm's own hash sequence (TPM2_HashSequenceStart,
TPM2_SequenceUpdate, TPM2_SequenceComplete), whose hash-check ticket then
lets TPM2_Sign sign with a restricted key - and refuses, as swtpm does, a
message that starts with TPM_GENERATED_VALUE (TPM_RC_TICKET). HMAC keys are
not offered for sequences (TPM_RC_SCHEME); wolfTPM has them. A sequence is
bound to its key's Name at SequenceStart, as the ML-DSA sequences are: another
key loaded at the flushed key's (recycled) handle is TPM_RC_SIGN_CONTEXT_KEY on
handle 2 at Complete (wolfTPM's fwTPM compares Names), and the refused Complete
leaves the sequence as it was.

The one choice: these schemes take no signature context, so a non-empty
``context`` is TPM_RC_SIZE on its parameter (TPMU_SIGNATURE_CTX has no buffer
member for them: Part 2 Table 219 as public extracts quote it); wolfTPM
ignores the context instead.
"""

from __future__ import annotations

from trustlab.devices.tpm2 import objects
from trustlab.devices.tpm2.commands import TPM_ALG_ECC, TPM_ALG_RSA, TPM_RC_RETRY
from trustlab.devices.tpm2.extensions import (
    TPM_RC_AUTH_MISSING,
    TPM_RC_KEY,
    TPM_RC_SCHEME,
    TPM_RC_SIGN_CONTEXT_KEY,
    TPM_RC_SIZE,
    TPM_RC_VALUE,
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
from trustlab.devices.tpm2.pqc.state import Sequence, state_of
from trustlab.timing.formula_sets import tpm2 as rules

TPM_CC_SIGN = 0x15D
TPM_CC_VERIFY_SIGNATURE = 0x177
TPM_CC_HASH_SEQUENCE_START = 0x186
TPM_CC_SEQUENCE_UPDATE = 0x15C
TPM_CC_SEQUENCE_COMPLETE = 0x13E
TPM_RC_TICKET = 0x0A0
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


def _context(r: Reader, n: int = 1) -> None:
    if r.param(n).tpm2b(S.MAX_SIGNATURE_CTX):
        raise TpmError(at_param(TPM_RC_SIZE, n), "RSA/ECC/HMAC signatures take no signature context")


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


# ---- sequences --------------------------------------------------------------------------


def _scheme_hash(ctx: Context, handle: int) -> tuple[int, int, bytes]:
    """(nameAlg, scheme hash, Name) of an RSA/ECC signing key (TPM_RC_KEY: not such a key; TPM_RC_SCHEME: no
    scheme)."""
    rc, public, name, _qn = binding.read_public(ctx.backend_transact, handle)
    if rc != 0:
        raise TpmError(renumber(rc, {}), "no such key")
    r = Reader(public)
    kind, name_alg, attributes, _policy = r.u16(), r.u16(), r.u32(), r.tpm2b()
    if kind not in (TPM_ALG_RSA, TPM_ALG_ECC) or not attributes & S.SIGN:
        raise TpmError(at_handle(TPM_RC_KEY, 1), "sequences sign with ML-DSA, RSA or ECC keys")
    if r.u16() != S.TPM_ALG_NULL:  # symmetric (a signing key's is NULL)
        raise TpmError(at_handle(TPM_RC_KEY, 1), "not a signing key")
    scheme = r.u16()
    if scheme == S.TPM_ALG_NULL:
        raise TpmError(at_handle(TPM_RC_SCHEME, 1), "the key has no signing scheme")
    return name_alg, r.u16(), name


def start_sequence(cmd: Command, ctx: Context, sign: bool) -> Reply:
    """SignSequenceStart / VerifySequenceStart with an RSA/ECC key: a hash sequence on swtpm."""
    name_alg, hash_alg, key_name = _scheme_hash(ctx, cmd.handles[0])
    r = cmd.params
    auth = r.param(1).tpm2b(S.MAX_AUTH)
    if name_alg in S.HASHES and len(auth.rstrip(b"\x00")) > len(S.digest(name_alg, b"")):
        raise TpmError(at_param(TPM_RC_SIZE, 1), "auth is longer than the key's nameAlg digest")
    if not sign and r.param(2).tpm2b(S.MAX_SIGNATURE_HINT):
        raise TpmError(at_param(TPM_RC_VALUE, 2), "RSA and ECDSA take no signature hint")
    _context(r, 2 if sign else 3)
    r.end()
    state = state_of(ctx)
    handle = state.allocate()
    started = _backend(ctx, S.frame(TPM_CC_HASH_SEQUENCE_START, [], S.tpm2b(b"") + S.u16(hash_alg)), {})
    backend = Reader(started).u32()  # the answer's handle (no parameters follow)
    state.sequences[handle] = Sequence(handle, cmd.handles[0], sign, auth.rstrip(b"\x00"), None,
                                       key_name=key_name, backend=backend)
    return Reply(handles=[handle], variant=_variant(ctx, cmd.handles[0]))


def update(ctx: Context, seq: Sequence, data: bytes) -> None:
    _backend(ctx, S.frame(TPM_CC_SEQUENCE_UPDATE, [seq.backend], S.tpm2b(data), [binding.PASSWORD_EMPTY]),
             {1: 1})


def _finish(ctx: Context, seq: Sequence, data: bytes, hierarchy: int) -> tuple[bytes, bytes]:
    """(digest, TPMT_TK_HASHCHECK) of the whole message: swtpm's TPM2_SequenceComplete (which ends it)."""
    params = _backend(ctx, S.frame(TPM_CC_SEQUENCE_COMPLETE, [seq.backend], S.tpm2b(data) + S.u32(hierarchy),
                                   [binding.PASSWORD_EMPTY]), {1: 1})
    r = Reader(params)
    digest = r.tpm2b()
    return digest, r.rest()


def drop(ctx: Context, seq: Sequence) -> None:
    """End swtpm's hash sequence behind ``seq`` (a flushed or abandoned sequence) - unless ``seq`` is live
    again (a Complete refused by :func:`_bound_key` keeps it)."""
    if seq.backend and state_of(ctx).sequences.get(seq.handle) is not seq:
        ctx.backend_transact(S.frame(S.TPM_CC_FLUSH_CONTEXT, [], S.u32(seq.backend)))


def _session_bytes(cmd: Command, index: int) -> bytes:
    s = cmd.sessions[index]
    return S.u32(s.handle) + S.tpm2b(s.nonce) + bytes([s.attributes]) + S.tpm2b(s.hmac)


def _bound_key(ctx: Context, cmd: Command, seq: Sequence) -> str | None:
    """The variant of Complete's key (handle 2) if it is the key the sequence was started with - the same
    Name, not only the same handle number: else TPM_RC_SIGN_CONTEXT_KEY, the sequence kept as it was.

    A key swtpm cannot read is left to swtpm's TPM2_Sign / TPM2_VerifySignature to answer."""
    rc, public, name, _qn = binding.read_public(ctx.backend_transact, cmd.handles[1])
    if rc != 0:
        return None
    if name != seq.key_name:
        state_of(ctx).sequences[seq.handle] = seq  # the caller had ended it: a refused Complete does not
        raise TpmError(at_handle(TPM_RC_SIGN_CONTEXT_KEY, 2), "another key is loaded at the sequence key's handle")
    return objects.key_variant(S.tpm2b(public))


def complete_sign(cmd: Command, ctx: Context, seq: Sequence) -> Reply:
    """SignSequenceComplete: the digest and ticket from swtpm's sequence, then TPM2_Sign with the key."""
    variant = _bound_key(ctx, cmd, seq)
    if len(cmd.sessions) < 2:
        raise TpmError(TPM_RC_AUTH_MISSING, "the key must be authorized")
    data = cmd.params.param(1).tpm2b(S.MAX_BUFFER)
    cmd.params.end()
    digest, ticket = _finish(ctx, seq, data, S.TPM_RH_OWNER)
    seq.backend = 0
    command = S.frame(TPM_CC_SIGN, [cmd.handles[1]], S.tpm2b(digest) + S.u16(S.TPM_ALG_NULL) + ticket,
                      [_session_bytes(cmd, 1)])
    try:
        signature = _backend(ctx, command, {})
    except TpmError as exc:
        if exc.rc & 0xBF == TPM_RC_TICKET:  # swtpm gave no ticket: the message starts with TPM_GENERATED_VALUE
            raise TpmError(at_param(TPM_RC_VALUE, 1), "a restricted key does not sign this message") from None
        raise
    return Reply(params=signature, terms=_terms("TPM2_Sign", variant), variant=variant)


def complete_verify(cmd: Command, ctx: Context, seq: Sequence) -> Reply:
    """VerifySequenceComplete: the digest from swtpm's sequence, then TPM2_VerifySignature."""
    variant = _bound_key(ctx, cmd, seq)
    signature = cmd.params.param(1).rest()
    digest, _ticket = _finish(ctx, seq, b"", S.TPM_RH_NULL)
    seq.backend = 0
    _backend(ctx, S.frame(TPM_CC_VERIFY_SIGNATURE, [cmd.handles[1]], S.tpm2b(digest) + signature), {2: 1})
    return Reply(params=S.null_verified_ticket(S.TPM_ST_MESSAGE_VERIFIED),
                 terms=_terms("TPM2_VerifySignature", variant), variant=variant)
