"""ML-DSA and HashML-DSA: TPM2_SignDigest, TPM2_VerifyDigestSignature, the sign/verify
sequences (with TPM2_SequenceUpdate on extension handles) and TPM2_Quote with an
ML-DSA key. Every signature goes through mu (:mod:`.keys`).
"""

from __future__ import annotations

from trustlab.devices.tpm2 import extensions as ext
from trustlab.devices.tpm2.commands import TPM_RC_FAILURE, TPM_RC_HANDLE
from trustlab.devices.tpm2.extensions import (
    TPM_RC_ATTRIBUTES,
    TPM_RC_KEY,
    TPM_RC_MODE,
    TPM_RC_SIGN_CONTEXT_KEY,
    TPM_RC_SIGNATURE,
    TPM_RC_SIZE,
    TPM_RC_VALUE,
    Command,
    Context,
    Reply,
    TpmError,
    at_handle,
    at_param,
    is_extension_handle,
    tpm_command,
)
from trustlab.devices.tpm2.pqc import classical, keys, pricing, tickets
from trustlab.devices.tpm2.pqc import structures as S
from trustlab.devices.tpm2.pqc.state import (
    MAX_SEQUENCE_BYTES,
    PqcObject,
    Sequence,
    authorize,
    backend_call,
    extension_handle,
    key_at,
    priced,
    state_of,
)


def _signing_key(ctx: Context, handle: int) -> PqcObject:
    obj = key_at(ctx, handle)
    if obj.public.type not in (S.TPM_ALG_MLDSA, S.TPM_ALG_HASH_MLDSA) or not obj.public.attributes & S.SIGN:
        raise TpmError(at_handle(TPM_RC_KEY, 1), "not an ML-DSA signing key")
    return obj


def _digest_mu(obj: PqcObject, context: bytes, digest: bytes) -> bytes:
    """mu for TPM2_SignDigest/VerifyDigestSignature: the external mu, or HashML-DSA's over PH(M).

    A pure ML-DSA key with allowExternalMu CLEAR is TPM_RC_ATTRIBUTES (the key's
    parameters forbid the use), as wolfTPM answers: 1.85 gives TPM_RC_EXT_MU to
    a TPM that does not support external mu at all (object creation, TestParms).
    """
    if obj.public.type == S.TPM_ALG_MLDSA:
        if not obj.public.allow_external_mu:
            raise TpmError(at_handle(TPM_RC_ATTRIBUTES, 1), "key does not allow an external mu")
        if context:
            raise TpmError(at_param(TPM_RC_VALUE, 1), "an external mu already contains the context")
        if len(digest) != 64:
            raise TpmError(at_param(TPM_RC_SIZE, 2), "an external mu is 64 bytes")
        return digest
    size = len(S.digest(obj.public.hash_alg, b""))
    if len(digest) != size:
        raise TpmError(at_param(TPM_RC_SIZE, 2), "digest size differs from the key's pre-hash")
    return keys.prehash_mu(keys.tr(obj.public.unique), context, obj.public.hash_alg, digest)


def _digest_command(cmd: Command, ctx: Context) -> tuple[PqcObject, bytes, bytes]:
    """The key and parameters 1-2 (context, digest) of TPM2_SignDigest / TPM2_VerifyDigestSignature."""
    obj = _signing_key(ctx, cmd.handles[0])
    return obj, cmd.params.param(1).tpm2b(S.MAX_SIGNATURE_CTX), cmd.params.param(2).tpm2b(S.MAX_DIGEST_BUFFER)


def _not_x509sign(obj: PqcObject) -> None:
    """1.85 Part 3 20.6.1/20.7.1 (as wolfTPM quotes them): an x509sign key signs certificates only."""
    if obj.public.attributes & S.X509SIGN:
        raise TpmError(at_handle(TPM_RC_ATTRIBUTES, 1), "an x509sign key signs only through TPM2_CertifyX509")


@tpm_command(0x1A6, "TPM2_SignDigest", handles=1)
def sign_digest(cmd: Command, ctx: Context) -> Reply:
    """(@keyHandle; context, digest, validation): the 1.85 RC4 layout, as wolfTPM marshals it.

    A restricted key signs only with a valid TPMT_TK_HASHCHECK (:mod:`.tickets`);
    an RSA/ECC/HMAC key of swtpm's signs through :mod:`.classical`.
    """
    if classical.is_backend_key(cmd.handles[0]):
        return classical.sign_digest(cmd, ctx)
    authorize(cmd, 0, _signing_key(ctx, cmd.handles[0]), ctx)  # sessions before parameters (Part 3, 5.6 / 5.8)
    obj, context, digest = _digest_command(cmd, ctx)
    r = cmd.params
    tag, hierarchy, ticket = r.param(3).u16(), r.u32(), r.tpm2b(S.MAX_DIGEST_BUFFER)
    r.end()
    if tag != S.TPM_ST_HASHCHECK:
        raise TpmError(at_param(ext.TPM_RC_TAG, 3), "validation is not a TPMT_TK_HASHCHECK")
    _not_x509sign(obj)
    prehashed = obj.public.type == S.TPM_ALG_HASH_MLDSA
    mu = _digest_mu(obj, context, digest) if prehashed else None  # digest size first, as wolfTPM
    if obj.public.attributes & S.RESTRICTED:
        tickets.require_hashcheck(ctx.backend_transact, obj.public.hash_alg if prehashed else None, digest,
                                  hierarchy, ticket)
    if mu is None:
        mu = _digest_mu(obj, context, digest)
    sig = keys.sign_mu(obj.private_key(), mu)
    return Reply(params=S.signature(obj.public, sig), price=priced(ctx, obj.params, "sign"),
                 variant=obj.params.variant)


@tpm_command(0x1A5, "TPM2_VerifyDigestSignature", handles=1)
def verify_digest_signature(cmd: Command, ctx: Context) -> Reply:
    if classical.is_backend_key(cmd.handles[0]):
        return classical.verify_digest_signature(cmd, ctx)
    obj, context, digest = _digest_command(cmd, ctx)
    sig = S.parse_signature(cmd.params.param(3), obj.public)
    cmd.params.end()
    mu = _digest_mu(obj, context, digest)
    if not keys.verify_mu(obj.public_key(), sig, mu):
        raise TpmError(at_param(TPM_RC_SIGNATURE, 3), "signature does not verify")
    meta = obj.public.hash_alg if obj.public.type == S.TPM_ALG_HASH_MLDSA else S.TPM_ALG_NULL
    return Reply(params=S.null_verified_ticket(S.TPM_ST_DIGEST_VERIFIED, meta),
                 price=priced(ctx, obj.params, "verify"), variant=obj.params.variant)


def _start_sequence(cmd: Command, ctx: Context, sign: bool) -> Reply:
    if classical.is_backend_key(cmd.handles[0]):
        return classical.start_sequence(cmd, ctx, sign)
    obj = _signing_key(ctx, cmd.handles[0])
    r = cmd.params
    auth = r.param(1).tpm2b(S.MAX_AUTH)
    if len(auth.rstrip(b"\x00")) > len(S.digest(obj.public.name_alg, b"")):
        raise TpmError(at_param(TPM_RC_SIZE, 1), "auth is longer than the key's nameAlg digest")
    if sign:
        context = r.param(2).tpm2b(S.MAX_SIGNATURE_CTX)
    else:
        hint = r.param(2).tpm2b(S.MAX_SIGNATURE_HINT)
        context = r.param(3).tpm2b(S.MAX_SIGNATURE_CTX)
        if hint:
            raise TpmError(at_param(TPM_RC_VALUE, 2), "ML-DSA takes no signature hint")
    r.end()
    state = state_of(ctx)
    handle = state.allocate()
    stream = keys.MuStream(obj.public.unique, context, obj.public.type, obj.public.hash_alg)
    state.sequences[handle] = Sequence(handle, obj.handle, sign, auth.rstrip(b"\x00"), stream, key_name=obj.name)
    return Reply(handles=[handle], variant=obj.params.variant)


@tpm_command(0x1AA, "TPM2_SignSequenceStart", handles=1)
def sign_sequence_start(cmd: Command, ctx: Context) -> Reply:
    return _start_sequence(cmd, ctx, sign=True)


@tpm_command(0x1A9, "TPM2_VerifySequenceStart", handles=1)
def verify_sequence_start(cmd: Command, ctx: Context) -> Reply:
    return _start_sequence(cmd, ctx, sign=False)


def _sequence(ctx: Context, cmd: Command, sign: bool) -> Sequence:
    seq = state_of(ctx).sequences.get(cmd.handles[0])
    if seq is None:
        raise TpmError(at_handle(TPM_RC_HANDLE, 1), "no such sequence")
    if seq.sign != sign:
        raise TpmError(at_handle(TPM_RC_MODE, 1), "sequence of the other kind")
    cmd.require_password(0, seq.auth, no_da=True)  # a sequence is DA-exempt (libtpms)
    return seq


@tpm_command(0x15C, "TPM2_SequenceUpdate", handles=1, claims=extension_handle)
def sequence_update(cmd: Command, ctx: Context) -> Reply:
    seq = state_of(ctx).sequences.get(cmd.handles[0])
    if seq is None:
        raise TpmError(at_handle(TPM_RC_HANDLE, 1), "no such sequence")
    cmd.require_password(0, seq.auth, no_da=True)  # a sequence is DA-exempt (libtpms)
    data = cmd.params.param(1).tpm2b(S.MAX_BUFFER)
    cmd.params.end()
    if seq.stream is None:
        classical.update(ctx, seq, data)
    else:
        _feed(seq, data)
    key = state_of(ctx).objects.get(seq.key_handle)
    variant = key.params.variant if key else None
    if seq.stream is None or seq.stream.kind == S.TPM_ALG_HASH_MLDSA:  # SHA-2: the chip's hashing rate
        return Reply(terms=lambda n_in, n_out: {**ext.wire_terms(n_in, n_out), "sha256_byte": float(len(data))},
                     variant=variant)
    # ML-DSA absorbs the message into SHAKE256 (mu): the PQC model's Keccak rate, plus the wire formula
    return Reply(terms=ext.wire_terms, price=pricing.AbsorbPrice(ctx.profile, key.params.algorithm if key else None,
                                                                 len(data)), variant=variant)


def _feed(seq: Sequence, data: bytes) -> None:
    seq.prefix = (seq.prefix + data[:4])[:4]
    seq.size += len(data)
    if seq.size > MAX_SEQUENCE_BYTES:
        raise TpmError(ext.TPM_RC_MEMORY, "sequence too long for this lab")
    seq.stream.update(data)


def _complete_key(ctx: Context, cmd: Command, seq: Sequence) -> PqcObject:
    """The sequence's key: the same handle *and* the same Name as at SequenceStart. Another key loaded at
    the flushed key's handle is TPM_RC_SIGN_CONTEXT_KEY, as wolfTPM's fwTPM answers (it compares Names:
    "transient-slot recycling")."""
    if cmd.handles[1] != seq.key_handle:
        raise TpmError(at_handle(TPM_RC_SIGN_CONTEXT_KEY, 2), "sequence was started with another key")
    obj = state_of(ctx).objects.get(seq.key_handle)
    if obj is None:
        raise TpmError(at_handle(TPM_RC_HANDLE, 2), "key was flushed")
    if obj.name != seq.key_name:
        raise TpmError(at_handle(TPM_RC_SIGN_CONTEXT_KEY, 2), "another key is loaded at the sequence key's handle")
    return obj


def _complete_on_backend(cmd: Command, ctx: Context, seq: Sequence, complete) -> Reply:
    """An RSA/ECC key's sequence (:mod:`.classical`): ended here whatever swtpm answers."""
    if cmd.handles[1] != seq.key_handle:
        raise TpmError(at_handle(TPM_RC_SIGN_CONTEXT_KEY, 2), "sequence was started with another key")
    del state_of(ctx).sequences[seq.handle]
    try:
        return complete(cmd, ctx, seq)
    finally:
        classical.drop(ctx, seq)


@tpm_command(0x1A4, "TPM2_SignSequenceComplete", handles=2)
def sign_sequence_complete(cmd: Command, ctx: Context) -> Reply:
    """A restricted key signs any message but one that starts with TPM_GENERATED_VALUE (TPM_RC_VALUE)."""
    seq = _sequence(ctx, cmd, sign=True)
    if seq.stream is None:
        return _complete_on_backend(cmd, ctx, seq, classical.complete_sign)
    obj = _complete_key(ctx, cmd, seq)
    authorize(cmd, 1, obj, ctx)
    data = cmd.params.param(1).tpm2b(S.MAX_BUFFER)
    cmd.params.end()
    _feed(seq, data)
    del state_of(ctx).sequences[seq.handle]
    _not_x509sign(obj)
    if obj.public.attributes & S.RESTRICTED and seq.prefix == S.u32(TPM_GENERATED_VALUE):
        # 1.85 Part 3 20.6.1 (as wolfTPM quotes and enforces it): no forged attestation structures
        raise TpmError(at_param(TPM_RC_VALUE, 1), "a restricted key does not sign a TPM_GENERATED_VALUE message")
    sig = keys.sign_mu(obj.private_key(2), seq.stream.mu())
    return Reply(params=S.signature(obj.public, sig), price=priced(ctx, obj.params, "sign"),
                 variant=obj.params.variant)


@tpm_command(0x1A3, "TPM2_VerifySequenceComplete", handles=2)
def verify_sequence_complete(cmd: Command, ctx: Context) -> Reply:
    seq = _sequence(ctx, cmd, sign=False)
    if seq.stream is None:
        return _complete_on_backend(cmd, ctx, seq, classical.complete_verify)
    obj = _complete_key(ctx, cmd, seq)
    sig = S.parse_signature(cmd.params.param(1), obj.public)
    cmd.params.end()
    del state_of(ctx).sequences[seq.handle]
    if not keys.verify_mu(obj.public_key(), sig, seq.stream.mu()):
        raise TpmError(at_param(TPM_RC_SIGNATURE, 1), "signature does not verify")
    return Reply(params=S.null_verified_ticket(S.TPM_ST_MESSAGE_VERIFIED),
                 price=priced(ctx, obj.params, "verify"), variant=obj.params.variant)


# ---- attestation -------------------------------------------------------------------

TPM_GENERATED_VALUE = 0xFF544347
TPM_ST_ATTEST_QUOTE = 0x8018
TPM_PT_FIRMWARE_VERSION_1 = 0x10B


def _quotes_with_pqc_key(cmd: Command) -> bool:
    return is_extension_handle(cmd.handles[0])


def _pcr_values(ctx: Context, selection: list[tuple[int, bytes]]) -> bytes:
    """The selected PCRs' values, in selection order, read from swtpm (TPM2_PCR_Read returns 8 at most)."""
    remaining = [(alg, bytearray(mask)) for alg, mask in selection]
    values = b""
    while any(any(m) for _, m in remaining):
        sel = S.u32(len(remaining)) + b"".join(S.u16(a) + bytes([len(m)]) + bytes(m) for a, m in remaining)
        r = backend_call(ctx, S.frame(0x17E, [], sel), "TPM2_PCR_Read")
        r.u32()  # pcrUpdateCounter
        got = S.parse_pcr_selection(r)
        n = r.u32()
        digests = [r.tpm2b() for _ in range(n)]
        if not digests:
            raise TpmError(at_param(TPM_RC_VALUE, 3), "PCR selection names PCRs this TPM does not have")
        values += b"".join(digests)
        before = [bytes(m) for _, m in remaining]
        for (_alg, mask), (_galg, gmask) in zip(remaining, got):
            for i, byte in enumerate(gmask[:len(mask)]):
                mask[i] &= ~byte
        if before == [bytes(m) for _, m in remaining]:
            raise TpmError(TPM_RC_FAILURE, "backend TPM2_PCR_Read made no progress")
    return values


@tpm_command(0x158, "TPM2_Quote", handles=1, claims=_quotes_with_pqc_key)
def quote(cmd: Command, ctx: Context) -> Reply:
    """TPMS_ATTEST of type QUOTE over swtpm's PCRs, signed with an ML-DSA key (message = the attest bytes).

    pcrDigest uses the key's nameAlg (ML-DSA has no scheme hash); clockInfo and
    firmwareVersion are swtpm's, not obfuscated for non-privacy-sensitive hierarchies.
    """
    obj = _signing_key(ctx, cmd.handles[0])
    r = cmd.params
    qualifying = r.param(1).tpm2b(S.MAX_DIGEST_BUFFER)
    scheme = r.param(2).u16()
    if scheme == S.TPM_ALG_HASH_MLDSA:
        r.u16()
    if scheme not in (S.TPM_ALG_NULL, obj.public.type):
        raise TpmError(at_param(ext.TPM_RC_SCHEME, 2), "scheme differs from the key's")
    selection = S.parse_pcr_selection(r.param(3))
    r.end()
    authorize(cmd, 0, obj, ctx)
    digest = S.digest(obj.public.name_alg, _pcr_values(ctx, selection))
    clock = backend_call(ctx, S.frame(0x181, [], b""), "TPM2_ReadClock")
    clock.take(8)  # time
    clock_info = clock.take(17)  # clock, resetCount, restartCount, safe
    cap = S.u32(6) + S.u32(TPM_PT_FIRMWARE_VERSION_1) + S.u32(2)
    fw = backend_call(ctx, S.frame(0x17A, [], cap), "TPM2_GetCapability")
    fw.u8(), fw.u32(), fw.u32()
    fw.u32()
    v1 = fw.u32()
    fw.u32()
    v2 = fw.u32()
    sel = S.u32(len(selection)) + b"".join(S.u16(a) + bytes([len(m)]) + m for a, m in selection)
    attest = (S.u32(TPM_GENERATED_VALUE) + S.u16(TPM_ST_ATTEST_QUOTE) + S.tpm2b(obj.qualified_name)
              + S.tpm2b(qualifying) + clock_info + S.u32(v1) + S.u32(v2) + sel + S.tpm2b(digest))
    stream = keys.MuStream(obj.public.unique, b"", obj.public.type, obj.public.hash_alg)
    stream.update(attest)
    sig = keys.sign_mu(obj.private_key(), stream.mu())
    return Reply(params=S.tpm2b(attest) + S.signature(obj.public, sig), price=priced(ctx, obj.params, "sign"),
                 variant=obj.params.variant)
