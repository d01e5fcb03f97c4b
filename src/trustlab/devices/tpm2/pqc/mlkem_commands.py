"""ML-KEM: TPM2_Encapsulate and TPM2_Decapsulate (1.85 Part 3, 14.10-14.11)."""

from __future__ import annotations

from trustlab.devices.tpm2.extensions import (
    TPM_RC_ATTRIBUTES,
    TPM_RC_KEY,
    TPM_RC_SIZE,
    Command,
    Context,
    Reply,
    TpmError,
    at_handle,
    at_param,
    tpm_command,
)
from trustlab.devices.tpm2.pqc import structures as S
from trustlab.devices.tpm2.pqc.state import (
    PqcObject,
    authorize,
    key_at,
    priced,
)


def _kem_key(ctx: Context, handle: int) -> PqcObject:
    obj = key_at(ctx, handle)
    if obj.public.type != S.TPM_ALG_MLKEM:
        raise TpmError(at_handle(TPM_RC_KEY, 1), "not an ML-KEM key")
    if obj.public.attributes & S.RESTRICTED or not obj.public.attributes & S.DECRYPT:
        raise TpmError(at_handle(TPM_RC_ATTRIBUTES, 1), "KEM key must be an unrestricted decryption key")
    return obj


@tpm_command(0x1A7, "TPM2_Encapsulate", handles=1)
def encapsulate(cmd: Command, ctx: Context) -> Reply:
    obj = _kem_key(ctx, cmd.handles[0])
    cmd.params.end()
    shared, ciphertext = obj.public_key().encapsulate()
    return Reply(params=S.tpm2b(shared) + S.tpm2b(ciphertext), price=priced(ctx, obj.params, "encapsulate"),
                 variant=obj.params.variant)


@tpm_command(0x1A8, "TPM2_Decapsulate", handles=1)
def decapsulate(cmd: Command, ctx: Context) -> Reply:
    obj = _kem_key(ctx, cmd.handles[0])
    authorize(cmd, 0, obj, ctx)  # sessions before parameters (Part 3, 5.6 / 5.8), as wolfTPM
    private = obj.private_key()
    ciphertext = cmd.params.param(1).tpm2b(S.MAX_MLKEM_CT)
    cmd.params.end()
    if len(ciphertext) != obj.params.output_size:
        raise TpmError(at_param(TPM_RC_SIZE, 1), "ciphertext size differs from the parameter set's")
    shared = private.decapsulate(ciphertext)
    return Reply(params=S.tpm2b(shared), price=priced(ctx, obj.params, "decapsulate"), variant=obj.params.variant)
