"""What ends PQC objects besides TPM2_FlushContext: the hierarchy commands that flush loaded objects.

libtpms (TPM 2.0 Part 3) flushes every loaded transient object of a
hierarchy - ``ObjectFlushHierarchy`` - in TPM2_Clear (storage and
endorsement), TPM2_ChangeEPS (endorsement), TPM2_ChangePPS (platform) and
TPM2_HierarchyControl disabling a hierarchy (that one; not for
TPM_RH_PLATFORM_NV). Each command here goes to swtpm unchanged, with its own
sessions; when swtpm answers success the extension flushes its objects of
those hierarchies in every client's space, as the TPM does (the resource
manager's saved contexts of swtpm's objects then no longer load: new proofs,
or a disabled hierarchy). A TPM Reset is :func:`.state.flush_all`.

On the same success the extension renews the hierarchy proofs its saved
contexts are sealed under exactly as libtpms regenerates phProof, shProof and
ehProof (:data:`.state.PROOF_RENEWED`): a PQC context saved before then fails
TPM2_ContextLoad with TPM_RC_INTEGRITY, as a classical one does. A disabled
hierarchy's contexts are refused at TPM2_ContextLoad (TPM_RC_HIERARCHY).
"""

from __future__ import annotations

from trustlab.devices.tpm2 import cost, objects
from trustlab.devices.tpm2.commands import command_name
from trustlab.devices.tpm2.extensions import Command, Context, Reader, Reply, TpmError, tpm_command
from trustlab.devices.tpm2.pqc.state import PROOF_RENEWED, tpm_state

TPM_RH_PLATFORM_NV = 0x4000000D


def _forwarded(cmd: Command, ctx: Context, flushed: frozenset[int]) -> Reply:
    """swtpm's answer to ``cmd``, priced as swtpm's own command would be; on success ``flushed`` goes."""
    response = ctx.backend_transact(cmd.raw)
    if response[6:10] == b"\0\0\0\0":
        state = tpm_state(ctx)
        state.proofs.renew(PROOF_RENEWED.get(cmd.code, ()))
        if flushed:
            state.flush_hierarchies(flushed)
    assessed = cost.assess(cmd.raw, response, objects.ObjectTable(), ctx.profile)
    return Reply(raw=response, terms=assessed.terms)


def _renewing(cmd: Command, ctx: Context) -> Reply:
    """TPM2_Clear, ChangeEPS, ChangePPS: libtpms flushes the loaded objects of exactly the hierarchies whose
    proofs it renews (:data:`.state.PROOF_RENEWED`), so one table says both."""
    return _forwarded(cmd, ctx, frozenset(PROOF_RENEWED[cmd.code]))


for _code in PROOF_RENEWED:
    tpm_command(_code, command_name(_code), handles=1, forwards=True)(_renewing)


@tpm_command(0x121, "TPM2_HierarchyControl", handles=1, forwards=True)
def hierarchy_control(cmd: Command, ctx: Context) -> Reply:
    """Disabling a hierarchy (state NO) flushes its objects; TPM_RH_PLATFORM_NV flushes none."""
    flushed: frozenset[int] = frozenset()
    r = Reader(cmd.raw, cmd.params.pos)
    try:
        enable, state = r.u32(), r.u8()
    except TpmError:
        enable, state = 0, 1  # malformed: swtpm answers it
    if state == 0 and enable != TPM_RH_PLATFORM_NV:
        flushed = frozenset({enable})
    return _forwarded(cmd, ctx, flushed)
