"""PQC key objects: TPM2_CreatePrimary, TPM2_Create, TPM2_Load (claimed for PQC templates),
ReadPublic, FlushContext, ContextSave/ContextLoad (for extension handles), and
TPM2_Startup(CLEAR), which also ends them. Binding to the instance: :mod:`.binding`.
"""

from __future__ import annotations

import struct

from trustlab.devices.tpm2 import extensions as ext
from trustlab.devices.tpm2.commands import TPM_RC_FAILURE, TPM_RC_HANDLE
from trustlab.devices.tpm2.extensions import (
    TPM_RC_BINDING,
    TPM_RC_KEY,
    TPM_RC_SIZE,
    TPM_RC_TYPE,
    TPM_RC_VALUE,
    Command,
    Context,
    Reader,
    Reply,
    TpmError,
    at_handle,
    at_param,
    is_extension_handle,
    tpm_command,
)
from trustlab.devices.tpm2.pqc import binding, classical, keys
from trustlab.devices.tpm2.pqc import structures as S
from trustlab.devices.tpm2.pqc.state import (
    backend_call,
    derive_directly,
    extension_handle,
    flushes_extension_handle,
    key_at,
    load_object,
    hierarchy_enabled,
    parameter_set,
    pqc_template,
    priced,
    read_template,
    reset_secret,
    sensitive_area,
    state_of,
    tpm_state,
)


@tpm_command(0x131, "TPM2_CreatePrimary", handles=1, claims=pqc_template)
def create_primary(cmd: Command, ctx: Context) -> Reply:
    hierarchy = cmd.handles[0]
    sensitive, pub, area, outside, pcrs = read_template(cmd)
    ps = parameter_set(pub, 2)
    if hierarchy not in S.HIERARCHIES:
        raise TpmError(at_handle(TPM_RC_VALUE, 1), "not a hierarchy")
    if not cmd.sessions:
        raise TpmError(ext.TPM_RC_AUTH_MISSING, "the hierarchy must be authorized")
    # the hierarchy's authorization is checked by swtpm: the client's area is replayed, directly on the TPM
    secret = derive_directly(ctx, lambda transact: binding.hierarchy_secret(transact, hierarchy, cmd.auth_area))
    seed = binding.primary_seed(secret, area, sensitive.data, ps.seed_size)
    obj = load_object(ctx, pub, ps, seed, sensitive.user_auth, S.u32(hierarchy), hierarchy)
    cdata = S.creation_data(S.u32(hierarchy), S.u32(hierarchy), outside, pcrs)
    params = (S.tpm2b(obj.public.marshal()) + S.creation_tail(pub.name_alg, cdata) + S.tpm2b(obj.name))
    return Reply(params=params, handles=[obj.handle], price=priced(ctx, ps, "keygen"), variant=ps.variant)


@tpm_command(0x191, "TPM2_CreateLoaded", handles=1, claims=pqc_template)
def create_loaded(cmd: Command, ctx: Context) -> Reply:
    """PQC keys through CreateLoaded are not offered (the claim test already refuses the reserved template)."""
    raise TpmError(at_param(TPM_RC_TYPE, 2), "use TPM2_Create + TPM2_Load for post-quantum keys")


def _storage_parent(ctx: Context, cmd: Command) -> tuple[bytes, bytes]:
    """(name, qualifiedName) of the backend storage parent named by handle 1 (its authorization is
    checked by swtpm when the key's K is sealed or unsealed under it: :mod:`.binding`)."""
    parent = cmd.handles[0]
    if is_extension_handle(parent):
        raise TpmError(at_handle(TPM_RC_TYPE, 1), "post-quantum keys cannot be parents here")
    rc, public, name, qn = binding.read_public(ctx.backend_transact, parent)
    if rc != 0:
        raise TpmError(rc)
    attrs = struct.unpack_from(">I", public, 4)[0] if len(public) >= 8 else 0  # type, nameAlg, objectAttributes
    if not (attrs & S.RESTRICTED and attrs & S.DECRYPT):
        raise TpmError(at_handle(TPM_RC_TYPE, 1), "parent is not a storage key")
    if not cmd.sessions:
        raise TpmError(ext.TPM_RC_AUTH_MISSING)
    return name, qn


def _hierarchy_of(ctx: Context, parent: int) -> int:
    """The hierarchy a child of swtpm's ``parent`` belongs to (what TPM2_Clear / HierarchyControl flush).

    A loaded parent's own TPMS_CONTEXT says it (TPM2_ContextSave's ``hierarchy``); a
    persistent one, which cannot be saved, by the TCG handle registry's ranges
    (0x8101xxxx endorsement, 0x818xxxxx-0x81FFFFFF platform, the rest owner).
    """
    if parent >> 24 == 0x81:
        if parent >= 0x81800000:
            return S.TPM_RH_PLATFORM
        return S.TPM_RH_ENDORSEMENT if parent >> 16 == 0x8101 else S.TPM_RH_OWNER
    response = ctx.backend_transact(S.frame(0x162, [parent], b""))  # TPM2_ContextSave
    if S.response_code(response) != 0 or len(response) < 26:
        return S.TPM_RH_OWNER
    return struct.unpack_from(">I", response, 22)[0]  # after sequence (8) and savedHandle (4)


def _backend_random(ctx: Context, n: int) -> bytes:
    """``n`` bytes of the backend TPM's RNG (TPM2_GetRandom answers at most a digest's size per call)."""
    out = b""
    while len(out) < n:
        r = backend_call(ctx, S.frame(0x17B, [], S.u16(min(32, n - len(out)))), "TPM2_GetRandom")
        chunk = r.tpm2b()
        if not chunk:
            raise TpmError(TPM_RC_FAILURE, "backend TPM2_GetRandom returned nothing")
        out += chunk
    return out[:n]


@tpm_command(0x153, "TPM2_Create", handles=1, claims=pqc_template)
def create(cmd: Command, ctx: Context) -> Reply:
    sensitive, pub, _area, outside, pcrs = read_template(cmd)
    ps = parameter_set(pub, 2)
    parent_name, parent_qn = _storage_parent(ctx, cmd)
    seed = _backend_random(ctx, ps.seed_size)
    private = keys.private_from_seed(ps, seed)
    full = pub.with_unique(keys.public_bytes(private))
    blob = binding.seal_private(ctx.backend_transact, cmd.handles[0], cmd.auth_area, parent_name, full.name(),
                                sensitive_area(full, sensitive.user_auth, seed))
    cdata = S.creation_data(parent_name, parent_qn, outside, pcrs)
    params = S.tpm2b(blob) + S.tpm2b(full.marshal()) + S.creation_tail(pub.name_alg, cdata)
    return Reply(params=params, price=priced(ctx, ps, "keygen"), variant=ps.variant)


@tpm_command(0x157, "TPM2_Load", handles=1, claims=pqc_template)
def load(cmd: Command, ctx: Context) -> Reply:
    blob = cmd.params.param(1).tpm2b(4096)
    area = cmd.params.param(2).tpm2b(4096)
    cmd.params.end()
    pr = Reader(area).param(2)
    pub = S.parse_public(pr)
    pr.end()
    S.check_template(pub, 2)
    ps = parameter_set(pub, 2)
    if len(pub.unique) != ps.public_size:
        raise TpmError(at_param(TPM_RC_SIZE, 2), "public key of the wrong size")
    parent_name, parent_qn = _storage_parent(ctx, cmd)
    sensitive = Reader(binding.unseal_private(ctx.backend_transact, cmd.handles[0], cmd.auth_area, parent_name,
                                              pub.name(), blob)).param(1)
    kind, auth, _seed_value, seed = sensitive.u16(), sensitive.tpm2b(), sensitive.tpm2b(), sensitive.tpm2b()
    if kind != pub.type or len(seed) != ps.seed_size:
        raise TpmError(at_param(TPM_RC_TYPE, 1), "private area does not match the public area")
    obj = load_object(ctx, pub, ps, seed, auth, parent_qn, _hierarchy_of(ctx, cmd.handles[0]))
    if obj.public.unique != pub.unique:
        del state_of(ctx).objects[obj.handle]
        raise TpmError(at_param(TPM_RC_BINDING, 2), "public key does not match the private seed")
    return Reply(params=S.tpm2b(obj.name), handles=[obj.handle], price=priced(ctx, ps, "load"),
                 variant=ps.variant)


@tpm_command(0x167, "TPM2_LoadExternal", handles=0, claims=pqc_template)
def load_external(cmd: Command, ctx: Context) -> Reply:
    """A post-quantum public key made outside the TPM: verify (ML-DSA) or encapsulate (ML-KEM) with it.

    As wolfTPM's fwTPM offers; the key is checked to be a valid FIPS 203/204
    public key of its parameter set (TPM_RC_KEY). Loading a private part from
    outside is not offered here (TPM_RC_SIZE on inPrivate).
    """
    if cmd.params.param(1).tpm2b(4096):
        raise TpmError(at_param(TPM_RC_SIZE, 1), "post-quantum private keys are loaded with TPM2_Load only")
    area = cmd.params.param(2).tpm2b(4096)
    hierarchy = cmd.params.param(3).u32()
    cmd.params.end()
    pr = Reader(area).param(2)
    pub = S.parse_public(pr)
    pr.end()
    ps = parameter_set(pub, 2)
    S.check_public_only(pub, 2)
    if hierarchy not in S.HIERARCHIES:
        raise TpmError(at_param(TPM_RC_VALUE, 3), "not a hierarchy")
    try:
        ps.public_cls.from_public_bytes(pub.unique)
    except ValueError:
        raise TpmError(at_param(TPM_RC_KEY, 2), "unique is not a public key of the parameter set") from None
    obj = load_object(ctx, pub, ps, b"", b"", S.u32(hierarchy), hierarchy)
    return Reply(params=S.tpm2b(obj.name), handles=[obj.handle], variant=ps.variant)


# ---- object management ---------------------------------------------------------


@tpm_command(0x173, "TPM2_ReadPublic", handles=1, claims=extension_handle)
def read_public(cmd: Command, ctx: Context) -> Reply:
    obj = key_at(ctx, cmd.handles[0])
    cmd.params.end()
    return Reply(params=S.tpm2b(obj.public.marshal()) + S.tpm2b(obj.name) + S.tpm2b(obj.qualified_name),
                 variant=obj.params.variant)


@tpm_command(0x165, "TPM2_FlushContext", handles=0, claims=flushes_extension_handle)
def flush_context(cmd: Command, ctx: Context) -> Reply:
    handle = cmd.params.param(1).u32()
    cmd.params.end()
    state = state_of(ctx)
    seq = state.sequences.pop(handle, None)
    if seq is not None:
        classical.drop(ctx, seq)  # an RSA/ECC key's sequence also ends swtpm's
    elif state.objects.pop(handle, None) is None:
        raise TpmError(at_param(TPM_RC_HANDLE, 1), "no such extension object")
    return Reply()


def _loads_extension_context(cmd: Command) -> bool:
    r = Reader(cmd.raw, cmd.params.pos)
    try:
        r.take(8)
        return r.u32() in (SAVED_HANDLE, SAVED_HANDLE_ST_CLEAR)
    except TpmError:
        return False


SAVED_HANDLE = ext.EXTENSION_HANDLE_FIRST
"""TPMS_CONTEXT.savedHandle of a saved extension object (how ContextLoad recognises ours)."""
SAVED_HANDLE_ST_CLEAR = SAVED_HANDLE + 2
"""... of an stClear one (libtpms: 0x80000002 for 0x80000000), whose context a TPM Restart also ends."""
TPM_RC_HIERARCHY = 0x085


def _context_secret(ctx: Context, hierarchy: int, attributes: int) -> bytes:
    """What a saved context is sealed under (:func:`.binding.context_secret`): the TPM's reset secret
    (new at every TPM Reset, as libtpms' ``totalResetCount``), the proof of the object's hierarchy, and
    for an stClear object the clear epoch. None of it needs an authorization or a slot of the client's."""
    proofs = tpm_state(ctx).proofs
    epoch = proofs.clear_epoch if attributes & S.ST_CLEAR else b""
    return binding.context_secret(reset_secret(ctx), proofs.of(hierarchy), epoch)


@tpm_command(0x162, "TPM2_ContextSave", handles=1, claims=extension_handle)
def context_save(cmd: Command, ctx: Context) -> Reply:
    """TPMS_CONTEXT of a PQC key: its public area, password and seed, sealed to this TPM instance."""
    obj = key_at(ctx, cmd.handles[0])
    cmd.params.end()
    state = tpm_state(ctx)
    state.contexts_saved += 1
    saved_handle = SAVED_HANDLE_ST_CLEAR if obj.public.attributes & S.ST_CLEAR else SAVED_HANDLE
    header = struct.pack(">QII", state.contexts_saved, saved_handle, obj.hierarchy)
    body = (S.tpm2b(obj.public.marshal()) + S.tpm2b(obj.auth) + S.tpm2b(obj.seed)
            + S.tpm2b(obj.qualified_name))
    blob = binding.seal_context(_context_secret(ctx, obj.hierarchy, obj.public.attributes), header, body)
    return Reply(params=header + S.tpm2b(blob), variant=obj.params.variant)


@tpm_command(0x161, "TPM2_ContextLoad", handles=0, claims=_loads_extension_context)
def context_load(cmd: Command, ctx: Context) -> Reply:
    """Integrity first (TPM_RC_INTEGRITY), then the hierarchy (TPM_RC_HIERARCHY if disabled), as libtpms."""
    r = cmd.params.param(1)
    header = r.take(16)
    hierarchy = struct.unpack_from(">I", header, 12)[0]
    blob = r.tpm2b(4096)
    r.end()
    saved_handle = struct.unpack_from(">I", header, 8)[0]
    attributes = S.ST_CLEAR if saved_handle == SAVED_HANDLE_ST_CLEAR else 0
    body = Reader(binding.unseal_context(_context_secret(ctx, hierarchy, attributes), header, blob)).param(1)
    area = Reader(body.tpm2b()).param(1)
    pub = S.parse_public(area)
    area.end()
    auth, seed, qualified = body.tpm2b(), body.tpm2b(), body.tpm2b()
    if not hierarchy_enabled(ctx, hierarchy):
        raise TpmError(at_param(TPM_RC_HIERARCHY, 1), "the context's hierarchy is disabled")
    ps = parameter_set(pub, 1)
    obj = load_object(ctx, pub, ps, seed, auth, b"", hierarchy)
    obj.qualified_name = qualified
    return Reply(handles=[obj.handle], price=priced(ctx, ps, "load"), variant=ps.variant)



@tpm_command(0x144, "TPM2_Startup", handles=0)
def startup(cmd: Command, ctx: Context) -> Reply:
    """Forwarded as is; a successful TPM2_Startup(CLEAR) also ends every extension object and sequence."""
    response = ctx.backend_transact(cmd.raw)
    r = Reader(cmd.raw, cmd.params.pos)
    if r.u16() == 0 and response[6:10] == b"\0\0\0\0":
        tpm_state(ctx).clear()  # every client's (a TPM Reset or Restart)
    return Reply(raw=response)
