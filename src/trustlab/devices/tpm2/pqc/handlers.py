"""The TPM 2.0 Library 1.85 post-quantum commands, answered in front of swtpm.

Key objects (ML-DSA-44/65/87, HashML-DSA, ML-KEM-768/1024) are created by
``TPM2_CreatePrimary`` / ``TPM2_Create`` and loaded by ``TPM2_Load`` when the
template names TPM_ALG_MLDSA, TPM_ALG_HASH_MLDSA or TPM_ALG_MLKEM; every other
template goes to swtpm unchanged. Loaded objects and sequences live at
0x80FF0000-0x80FFFFFF. Besides the eight 1.85 commands, TPM2_Quote,
ReadPublic, FlushContext and SequenceUpdate are answered for these handles,
TPM2_TestParms for PQC parameters, and TPM2_GetCapability lists the new
algorithms and commands.
The crypto is FIPS 203/204 through pyca/cryptography; the time is the PQC
cost model's (:mod:`.pricing`).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from trustlab.devices.tpm2 import extensions as ext
from trustlab.devices.tpm2.commands import TPM_RC_FAILURE, TPM_RC_HANDLE
from trustlab.devices.tpm2.extensions import (
    TPM_RC_ATTRIBUTES,
    TPM_RC_AUTH_UNAVAILABLE,
    TPM_RC_BINDING,
    TPM_RC_EXT_MU,
    TPM_RC_KEY,
    TPM_RC_MODE,
    TPM_RC_OBJECT_MEMORY,
    TPM_RC_PARMS,
    TPM_RC_SIGN_CONTEXT_KEY,
    TPM_RC_SIGNATURE,
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
from trustlab.devices.tpm2.pqc import binding, keys, pricing
from trustlab.devices.tpm2.pqc import structures as S

MAX_OBJECTS = 16
"""Extension objects + sequences loaded at once (TPM_RC_OBJECT_MEMORY beyond)."""
MAX_SEQUENCE_BYTES = 1 << 20


@dataclass
class PqcObject:
    handle: int
    public: S.Public
    params: keys.ParameterSet
    private: Any  # a cryptography private key
    auth: bytes
    name: bytes
    qualified_name: bytes
    conn: Any
    hierarchy: int = S.TPM_RH_OWNER
    seed: bytes = b""


@dataclass
class Sequence:
    handle: int
    key_handle: int
    sign: bool
    auth: bytes
    stream: keys.MuStream
    conn: Any
    size: int = 0


class PqcState:
    def __init__(self) -> None:
        self.objects: dict[int, PqcObject] = {}
        self.sequences: dict[int, Sequence] = {}
        self.contexts_saved = 0

    def allocate(self) -> int:
        used = set(self.objects) | set(self.sequences)
        if len(used) >= MAX_OBJECTS:
            raise TpmError(TPM_RC_OBJECT_MEMORY, "extension object slots full")
        handle = ext.EXTENSION_HANDLE_FIRST
        while handle in used:
            handle += 1
        return handle


def _state(ctx: Context) -> PqcState:
    return ctx.state.get("pqc", PqcState)


@ext.on_connection_closed
def _flush_connection(state: ext.ExtensionState, conn: Any) -> None:
    pqc = state.get("pqc", PqcState)
    pqc.objects = {h: o for h, o in pqc.objects.items() if o.conn != conn}
    pqc.sequences = {h: s for h, s in pqc.sequences.items() if s.conn != conn}


def _key(ctx: Context, handle: int, n: int = 1) -> PqcObject:
    """The extension object at handle ``n`` of the command; another handle type is a TPM error."""
    obj = _state(ctx).objects.get(handle)
    if obj is not None:
        return obj
    if handle >> 24 in (0x80, 0x81) and not is_extension_handle(handle):
        raise TpmError(at_handle(TPM_RC_KEY, n), "not a post-quantum key")  # a key of swtpm's
    raise TpmError(at_handle(TPM_RC_HANDLE, n), "no such object")


def _authorize(cmd: Command, index: int, obj: PqcObject) -> None:
    """USER-role authorization of ``obj`` by a password session."""
    if not obj.public.attributes & S.USER_WITH_AUTH:
        raise TpmError(TPM_RC_AUTH_UNAVAILABLE, "key needs a policy session (userWithAuth CLEAR)")
    cmd.require_password(index, obj.auth, no_da=bool(obj.public.attributes & S.NO_DA))


def _priced(ctx: Context, ps: keys.ParameterSet, operation: str):
    rng = ctx.state.rng

    def price(in_bytes: int, out_bytes: int) -> dict[str, float]:
        return pricing.operation_ms(ctx.profile, rng, ps.algorithm, operation, in_bytes=in_bytes,
                                    out_bytes=out_bytes)
    return price


def _parameter_set(pub: S.Public, n: int) -> keys.ParameterSet:
    ps = keys.parameter_set(pub.type, pub.parameter_set)
    if ps is None:
        raise TpmError(at_param(TPM_RC_PARMS, n), "parameter set not supported")
    return ps


def _backend(ctx: Context, command: bytes, what: str) -> Reader:
    """Run a command on swtpm; its parameter area (a failure is passed on as the client's error)."""
    response = ctx.backend_transact(command)
    rc = S.response_code(response)
    if rc != 0:
        raise TpmError(rc, f"backend {what} failed")
    return Reader(response, 10)


def _template_area(cmd: Command) -> bytes | None:
    """inPublic's TPMT_PUBLIC (parameter 2 of Create/CreatePrimary/Load/CreateLoaded), read without consuming."""
    r = Reader(cmd.raw, cmd.params.pos)
    try:
        r.tpm2b()
        return r.tpm2b()
    except TpmError:
        return None


def _pqc_template(cmd: Command) -> bool:
    """Claim test: the template is ML-DSA/HashML-DSA/ML-KEM (the reserved derivation template is refused)."""
    area = _template_area(cmd)
    if area is None:
        return False
    if binding.is_reserved_template(area):
        raise TpmError(at_param(TPM_RC_VALUE, 2), "template reserved for the proxy's key derivation")
    return S.peek_public_type(area) in S.PQC_TYPES


def _extension_handle(cmd: Command) -> bool:
    return is_extension_handle(cmd.handles[0])


def _flushes_extension_handle(cmd: Command) -> bool:
    r = Reader(cmd.raw, cmd.params.pos)
    try:
        return is_extension_handle(r.u32())
    except TpmError:
        return False


def _read_template(cmd: Command) -> tuple[S.SensitiveCreate, S.Public, bytes, bytes, list]:
    r = cmd.params
    sensitive = S.parse_sensitive_create(r.param(1))
    area = r.param(2).tpm2b(4096)
    pr = Reader(area).param(2)
    pub = S.parse_public(pr)
    pr.end()
    outside = r.param(3).tpm2b(S.MAX_DIGEST_BUFFER)
    pcrs = S.parse_pcr_selection(r.param(4))
    r.end()
    if any(any(mask) for _, mask in pcrs):
        raise TpmError(at_param(TPM_RC_VALUE, 4), "creation PCRs are not supported for PQC objects")
    if sensitive.data:
        raise TpmError(at_param(TPM_RC_SIZE, 1), "an asymmetric key takes no sensitive data")
    if pub.unique:
        pub = pub.with_unique(b"")  # unique is an entropy hint only for primaries; recomputed below
    S.check_template(pub, 2)
    return sensitive, pub, area, outside, pcrs


def _qualified(name_alg: int, parent_qn: bytes, name: bytes) -> bytes:
    return S.u16(name_alg) + S.digest(name_alg, parent_qn + name)


def _sensitive(pub: S.Public, auth: bytes, seed: bytes) -> bytes:
    """TPMT_SENSITIVE {sensitiveType, authValue, seedValue, sensitive (the FIPS seed)}."""
    return S.u16(pub.type) + S.tpm2b(auth) + S.tpm2b(b"") + S.tpm2b(seed)


def _load(ctx: Context, pub: S.Public, ps: keys.ParameterSet, seed: bytes, auth: bytes,
          qualified_parent: bytes, hierarchy: int = S.TPM_RH_OWNER) -> PqcObject:
    """Expand ``seed`` into a key object at a free extension handle (public key = ``unique``)."""
    state = _state(ctx)
    handle = state.allocate()
    private = keys.private_from_seed(ps, seed)
    full = pub.with_unique(keys.public_bytes(private))
    name = full.name()
    obj = PqcObject(handle, full, ps, private, auth, name, _qualified(full.name_alg, qualified_parent, name),
                    ctx.conn_id, hierarchy, seed)
    state.objects[handle] = obj
    return obj


# ---- object creation -----------------------------------------------------------


@tpm_command(0x131, "TPM2_CreatePrimary", handles=1, claims=_pqc_template)
def create_primary(cmd: Command, ctx: Context) -> Reply:
    hierarchy = cmd.handles[0]
    sensitive, pub, area, outside, pcrs = _read_template(cmd)
    ps = _parameter_set(pub, 2)
    if hierarchy not in S.HIERARCHIES:
        raise TpmError(at_handle(TPM_RC_VALUE, 1), "not a hierarchy")
    if not cmd.sessions:
        raise TpmError(ext.TPM_RC_AUTH_MISSING, "the hierarchy must be authorized")
    # the hierarchy's authorization is checked by swtpm: the client's area is replayed
    secret = binding.hierarchy_secret(ctx.backend_transact, hierarchy, cmd.auth_area)
    seed = binding.primary_seed(secret, area, sensitive.data, ps.seed_size)
    obj = _load(ctx, pub, ps, seed, sensitive.user_auth, S.u32(hierarchy), hierarchy)
    cdata = S.creation_data(S.u32(hierarchy), S.u32(hierarchy), outside, pcrs)
    params = (S.tpm2b(obj.public.marshal()) + S.creation_tail(pub.name_alg, cdata) + S.tpm2b(obj.name))
    return Reply(params=params, handles=[obj.handle], price=_priced(ctx, ps, "keygen"), variant=ps.variant)


@tpm_command(0x191, "TPM2_CreateLoaded", handles=1, claims=_pqc_template)
def create_loaded(cmd: Command, ctx: Context) -> Reply:
    """PQC keys through CreateLoaded are not offered (the claim test already refuses the reserved template)."""
    raise TpmError(at_param(TPM_RC_TYPE, 2), "use TPM2_Create + TPM2_Load for post-quantum keys")


def _storage_parent(ctx: Context, cmd: Command) -> tuple[bytes, bytes]:
    """(name, qualifiedName) of the backend storage parent named by handle 1, after its authorization."""
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
    rc = binding.check_parent_auth(ctx.backend_transact, parent, cmd.auth_area)
    if rc != 0:
        raise TpmError(rc)
    return name, qn


def _backend_random(ctx: Context, n: int) -> bytes:
    """``n`` bytes of the backend TPM's RNG (TPM2_GetRandom answers at most a digest's size per call)."""
    out = b""
    while len(out) < n:
        r = _backend(ctx, S.frame(0x17B, [], S.u16(min(32, n - len(out)))), "TPM2_GetRandom")
        chunk = r.tpm2b()
        if not chunk:
            raise TpmError(TPM_RC_FAILURE, "backend TPM2_GetRandom returned nothing")
        out += chunk
    return out[:n]


@tpm_command(0x153, "TPM2_Create", handles=1, claims=_pqc_template)
def create(cmd: Command, ctx: Context) -> Reply:
    sensitive, pub, _area, outside, pcrs = _read_template(cmd)
    ps = _parameter_set(pub, 2)
    parent_name, parent_qn = _storage_parent(ctx, cmd)
    seed = _backend_random(ctx, ps.seed_size)
    private = keys.private_from_seed(ps, seed)
    full = pub.with_unique(keys.public_bytes(private))
    secret = binding.storage_secret(ctx.backend_transact)
    blob = binding.seal(secret, parent_name, full.name(), _sensitive(full, sensitive.user_auth, seed))
    cdata = S.creation_data(parent_name, parent_qn, outside, pcrs)
    params = S.tpm2b(blob) + S.tpm2b(full.marshal()) + S.creation_tail(pub.name_alg, cdata)
    return Reply(params=params, price=_priced(ctx, ps, "keygen"), variant=ps.variant)


@tpm_command(0x157, "TPM2_Load", handles=1, claims=_pqc_template)
def load(cmd: Command, ctx: Context) -> Reply:
    blob = cmd.params.param(1).tpm2b(4096)
    area = cmd.params.param(2).tpm2b(4096)
    cmd.params.end()
    pr = Reader(area).param(2)
    pub = S.parse_public(pr)
    pr.end()
    S.check_template(pub, 2)
    ps = _parameter_set(pub, 2)
    if len(pub.unique) != ps.public_size:
        raise TpmError(at_param(TPM_RC_SIZE, 2), "public key of the wrong size")
    parent_name, parent_qn = _storage_parent(ctx, cmd)
    secret = binding.storage_secret(ctx.backend_transact)
    sensitive = Reader(binding.unseal(secret, parent_name, pub.name(), blob, 1)).param(1)
    kind, auth, _seed_value, seed = sensitive.u16(), sensitive.tpm2b(), sensitive.tpm2b(), sensitive.tpm2b()
    if kind != pub.type or len(seed) != ps.seed_size:
        raise TpmError(at_param(TPM_RC_TYPE, 1), "private area does not match the public area")
    obj = _load(ctx, pub, ps, seed, auth, parent_qn)
    if obj.public.unique != pub.unique:
        del _state(ctx).objects[obj.handle]
        raise TpmError(at_param(TPM_RC_BINDING, 2), "public key does not match the private seed")
    return Reply(params=S.tpm2b(obj.name), handles=[obj.handle], price=_priced(ctx, ps, "keygen"),
                 variant=ps.variant)


# ---- object management ---------------------------------------------------------


@tpm_command(0x173, "TPM2_ReadPublic", handles=1, claims=_extension_handle)
def read_public(cmd: Command, ctx: Context) -> Reply:
    obj = _key(ctx, cmd.handles[0])
    cmd.params.end()
    return Reply(params=S.tpm2b(obj.public.marshal()) + S.tpm2b(obj.name) + S.tpm2b(obj.qualified_name),
                 variant=obj.params.variant)


@tpm_command(0x165, "TPM2_FlushContext", handles=0, claims=_flushes_extension_handle)
def flush_context(cmd: Command, ctx: Context) -> Reply:
    handle = cmd.params.param(1).u32()
    cmd.params.end()
    state = _state(ctx)
    if state.objects.pop(handle, None) is None and state.sequences.pop(handle, None) is None:
        raise TpmError(at_param(TPM_RC_HANDLE, 1), "no such extension object")
    return Reply()


def _loads_extension_context(cmd: Command) -> bool:
    r = Reader(cmd.raw, cmd.params.pos)
    try:
        r.take(8)
        return r.u32() == SAVED_HANDLE
    except TpmError:
        return False


SAVED_HANDLE = ext.EXTENSION_HANDLE_FIRST
"""TPMS_CONTEXT.savedHandle of a saved extension object (how ContextLoad recognises ours)."""


@tpm_command(0x162, "TPM2_ContextSave", handles=1, claims=_extension_handle)
def context_save(cmd: Command, ctx: Context) -> Reply:
    """TPMS_CONTEXT of a PQC key: its public area, password and seed, sealed to this TPM instance."""
    obj = _key(ctx, cmd.handles[0])
    cmd.params.end()
    state = _state(ctx)
    state.contexts_saved += 1
    header = struct.pack(">QII", state.contexts_saved, SAVED_HANDLE, obj.hierarchy)
    body = (S.tpm2b(obj.public.marshal()) + S.tpm2b(obj.auth) + S.tpm2b(obj.seed)
            + S.tpm2b(obj.qualified_name))
    blob = binding.seal_context(binding.storage_secret(ctx.backend_transact), header, body)
    return Reply(params=header + S.tpm2b(blob), variant=obj.params.variant)


@tpm_command(0x161, "TPM2_ContextLoad", handles=0, claims=_loads_extension_context)
def context_load(cmd: Command, ctx: Context) -> Reply:
    r = cmd.params.param(1)
    header = r.take(16)
    hierarchy = struct.unpack_from(">I", header, 12)[0]
    blob = r.tpm2b(4096)
    r.end()
    body = Reader(binding.unseal_context(binding.storage_secret(ctx.backend_transact), header, blob)).param(1)
    area = Reader(body.tpm2b()).param(1)
    pub = S.parse_public(area)
    area.end()
    auth, seed, qualified = body.tpm2b(), body.tpm2b(), body.tpm2b()
    ps = _parameter_set(pub, 1)
    obj = _load(ctx, pub, ps, seed, auth, b"", hierarchy)
    obj.qualified_name = qualified
    return Reply(handles=[obj.handle], price=_priced(ctx, ps, "keygen"), variant=ps.variant)


# ---- ML-DSA ----------------------------------------------------------------------


def _signing_key(ctx: Context, handle: int) -> PqcObject:
    obj = _key(ctx, handle)
    if obj.public.type not in (S.TPM_ALG_MLDSA, S.TPM_ALG_HASH_MLDSA) or not obj.public.attributes & S.SIGN:
        raise TpmError(at_handle(TPM_RC_KEY, 1), "not an ML-DSA signing key")
    return obj


def _digest_mu(obj: PqcObject, context: bytes, digest: bytes) -> bytes:
    """mu for TPM2_SignDigest/VerifyDigestSignature: the external mu, or HashML-DSA's over PH(M)."""
    if obj.public.type == S.TPM_ALG_MLDSA:
        if not obj.public.allow_external_mu:
            raise TpmError(at_handle(TPM_RC_EXT_MU, 1), "key does not allow an external mu")
        if context:
            raise TpmError(at_param(TPM_RC_VALUE, 1), "an external mu already contains the context")
        if len(digest) != 64:
            raise TpmError(at_param(TPM_RC_SIZE, 2), "an external mu is 64 bytes")
        return digest
    size = len(S.digest(obj.public.hash_alg, b""))
    if len(digest) != size:
        raise TpmError(at_param(TPM_RC_SIZE, 2), "digest size differs from the key's pre-hash")
    return keys.prehash_mu(keys.tr(obj.public.unique), context, obj.public.hash_alg, digest)


@tpm_command(0x1A6, "TPM2_SignDigest", handles=1)
def sign_digest(cmd: Command, ctx: Context) -> Reply:
    obj = _signing_key(ctx, cmd.handles[0])
    r = cmd.params
    context = r.param(1).tpm2b(S.MAX_SIGNATURE_CTX)
    digest = r.param(2).tpm2b(S.MAX_DIGEST_BUFFER)
    tag, _hierarchy, _ticket = r.param(3).u16(), r.u32(), r.tpm2b(S.MAX_DIGEST_BUFFER)
    r.end()
    if tag != S.TPM_ST_HASHCHECK:
        raise TpmError(at_param(ext.TPM_RC_TAG, 3), "validation is not a TPMT_TK_HASHCHECK")
    if obj.public.attributes & S.RESTRICTED:
        raise TpmError(at_handle(TPM_RC_ATTRIBUTES, 1), "a restricted key does not sign external digests")
    _authorize(cmd, 0, obj)
    mu = _digest_mu(obj, context, digest)
    sig = keys.sign_mu(obj.private, mu)
    return Reply(params=S.signature(obj.public, sig), price=_priced(ctx, obj.params, "sign"),
                 variant=obj.params.variant)


@tpm_command(0x1A5, "TPM2_VerifyDigestSignature", handles=1)
def verify_digest_signature(cmd: Command, ctx: Context) -> Reply:
    obj = _signing_key(ctx, cmd.handles[0])
    r = cmd.params
    context = r.param(1).tpm2b(S.MAX_SIGNATURE_CTX)
    digest = r.param(2).tpm2b(S.MAX_DIGEST_BUFFER)
    sig = S.parse_signature(r.param(3), obj.public)
    r.end()
    mu = _digest_mu(obj, context, digest)
    if not keys.verify_mu(obj.private.public_key(), sig, mu):
        raise TpmError(at_param(TPM_RC_SIGNATURE, 3), "signature does not verify")
    meta = obj.public.hash_alg if obj.public.type == S.TPM_ALG_HASH_MLDSA else S.TPM_ALG_NULL
    return Reply(params=S.null_verified_ticket(S.TPM_ST_DIGEST_VERIFIED, meta),
                 price=_priced(ctx, obj.params, "verify"), variant=obj.params.variant)


def _start_sequence(cmd: Command, ctx: Context, sign: bool) -> Reply:
    obj = _signing_key(ctx, cmd.handles[0])
    r = cmd.params
    auth = r.param(1).tpm2b(S.MAX_AUTH)
    if sign:
        context = r.param(2).tpm2b(S.MAX_SIGNATURE_CTX)
    else:
        hint = r.param(2).tpm2b(S.MAX_SIGNATURE_HINT)
        context = r.param(3).tpm2b(S.MAX_SIGNATURE_CTX)
        if hint:
            raise TpmError(at_param(TPM_RC_VALUE, 2), "ML-DSA takes no signature hint")
    r.end()
    if sign and obj.public.attributes & S.RESTRICTED:
        raise TpmError(at_handle(TPM_RC_ATTRIBUTES, 1), "a restricted key signs only TPM-generated data")
    state = _state(ctx)
    handle = state.allocate()
    stream = keys.MuStream(obj.public.unique, context, obj.public.type, obj.public.hash_alg)
    state.sequences[handle] = Sequence(handle, obj.handle, sign, auth.rstrip(b"\x00"), stream, ctx.conn_id)
    return Reply(handles=[handle], variant=obj.params.variant)


@tpm_command(0x1AA, "TPM2_SignSequenceStart", handles=1)
def sign_sequence_start(cmd: Command, ctx: Context) -> Reply:
    return _start_sequence(cmd, ctx, sign=True)


@tpm_command(0x1A9, "TPM2_VerifySequenceStart", handles=1)
def verify_sequence_start(cmd: Command, ctx: Context) -> Reply:
    return _start_sequence(cmd, ctx, sign=False)


def _sequence(ctx: Context, cmd: Command, sign: bool) -> Sequence:
    seq = _state(ctx).sequences.get(cmd.handles[0])
    if seq is None:
        raise TpmError(at_handle(TPM_RC_HANDLE, 1), "no such sequence")
    if seq.sign != sign:
        raise TpmError(at_handle(TPM_RC_MODE, 1), "sequence of the other kind")
    cmd.require_password(0, seq.auth)
    return seq


@tpm_command(0x15C, "TPM2_SequenceUpdate", handles=1, claims=_extension_handle)
def sequence_update(cmd: Command, ctx: Context) -> Reply:
    seq = _state(ctx).sequences.get(cmd.handles[0])
    if seq is None:
        raise TpmError(at_handle(TPM_RC_HANDLE, 1), "no such sequence")
    cmd.require_password(0, seq.auth)
    data = cmd.params.param(1).tpm2b(S.MAX_BUFFER)
    cmd.params.end()
    _feed(seq, data)
    key = _state(ctx).objects.get(seq.key_handle)
    variant = key.params.variant if key else None
    if seq.stream.kind == S.TPM_ALG_HASH_MLDSA:  # PH is SHA-2: the chip's hashing rate
        return Reply(terms=lambda n_in, n_out: {**ext.wire_terms(n_in, n_out), "sha256_byte": float(len(data))},
                     variant=variant)
    # ML-DSA absorbs the message into SHAKE256 (mu): the PQC model's Keccak rate, plus the wire formula
    return Reply(terms=ext.wire_terms, price=lambda n_in, n_out: pricing.sequence_update_ms(ctx.profile, len(data)),
                 variant=variant)


def _feed(seq: Sequence, data: bytes) -> None:
    seq.size += len(data)
    if seq.size > MAX_SEQUENCE_BYTES:
        raise TpmError(ext.TPM_RC_MEMORY, "sequence too long for this lab")
    seq.stream.update(data)


def _complete_key(ctx: Context, cmd: Command, seq: Sequence) -> PqcObject:
    if cmd.handles[1] != seq.key_handle:
        raise TpmError(at_handle(TPM_RC_SIGN_CONTEXT_KEY, 2), "sequence was started with another key")
    obj = _state(ctx).objects.get(seq.key_handle)
    if obj is None:
        raise TpmError(at_handle(TPM_RC_HANDLE, 2), "key was flushed")
    return obj


@tpm_command(0x1A4, "TPM2_SignSequenceComplete", handles=2)
def sign_sequence_complete(cmd: Command, ctx: Context) -> Reply:
    seq = _sequence(ctx, cmd, sign=True)
    obj = _complete_key(ctx, cmd, seq)
    data = cmd.params.param(1).tpm2b(S.MAX_BUFFER)
    cmd.params.end()
    _authorize(cmd, 1, obj)
    _feed(seq, data)
    del _state(ctx).sequences[seq.handle]
    sig = keys.sign_mu(obj.private, seq.stream.mu())
    return Reply(params=S.signature(obj.public, sig), price=_priced(ctx, obj.params, "sign"),
                 variant=obj.params.variant)


@tpm_command(0x1A3, "TPM2_VerifySequenceComplete", handles=2)
def verify_sequence_complete(cmd: Command, ctx: Context) -> Reply:
    seq = _sequence(ctx, cmd, sign=False)
    obj = _complete_key(ctx, cmd, seq)
    sig = S.parse_signature(cmd.params.param(1), obj.public)
    cmd.params.end()
    del _state(ctx).sequences[seq.handle]
    if not keys.verify_mu(obj.private.public_key(), sig, seq.stream.mu()):
        raise TpmError(at_param(TPM_RC_SIGNATURE, 1), "signature does not verify")
    return Reply(params=S.null_verified_ticket(S.TPM_ST_MESSAGE_VERIFIED),
                 price=_priced(ctx, obj.params, "verify"), variant=obj.params.variant)


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
        r = _backend(ctx, S.frame(0x17E, [], sel), "TPM2_PCR_Read")
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
    _authorize(cmd, 0, obj)
    digest = S.digest(obj.public.name_alg, _pcr_values(ctx, selection))
    clock = _backend(ctx, S.frame(0x181, [], b""), "TPM2_ReadClock")
    clock.take(8)  # time
    clock_info = clock.take(17)  # clock, resetCount, restartCount, safe
    cap = S.u32(6) + S.u32(TPM_PT_FIRMWARE_VERSION_1) + S.u32(2)
    fw = _backend(ctx, S.frame(0x17A, [], cap), "TPM2_GetCapability")
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
    sig = keys.sign_mu(obj.private, stream.mu())
    return Reply(params=S.tpm2b(attest) + S.signature(obj.public, sig), price=_priced(ctx, obj.params, "sign"),
                 variant=obj.params.variant)


# ---- ML-KEM ----------------------------------------------------------------------


def _kem_key(ctx: Context, handle: int) -> PqcObject:
    obj = _key(ctx, handle)
    if obj.public.type != S.TPM_ALG_MLKEM:
        raise TpmError(at_handle(TPM_RC_KEY, 1), "not an ML-KEM key")
    if obj.public.attributes & S.RESTRICTED or not obj.public.attributes & S.DECRYPT:
        raise TpmError(at_handle(TPM_RC_ATTRIBUTES, 1), "KEM key must be an unrestricted decryption key")
    return obj


@tpm_command(0x1A7, "TPM2_Encapsulate", handles=1)
def encapsulate(cmd: Command, ctx: Context) -> Reply:
    obj = _kem_key(ctx, cmd.handles[0])
    cmd.params.end()
    shared, ciphertext = obj.private.public_key().encapsulate()
    return Reply(params=S.tpm2b(shared) + S.tpm2b(ciphertext), price=_priced(ctx, obj.params, "encapsulate"),
                 variant=obj.params.variant)


@tpm_command(0x1A8, "TPM2_Decapsulate", handles=1)
def decapsulate(cmd: Command, ctx: Context) -> Reply:
    obj = _kem_key(ctx, cmd.handles[0])
    ciphertext = cmd.params.param(1).tpm2b(S.MAX_MLKEM_CT)
    cmd.params.end()
    if len(ciphertext) != obj.params.output_size:
        raise TpmError(at_param(TPM_RC_SIZE, 1), "ciphertext size differs from the parameter set's")
    _authorize(cmd, 0, obj)
    shared = obj.private.decapsulate(ciphertext)
    return Reply(params=S.tpm2b(shared), price=_priced(ctx, obj.params, "decapsulate"), variant=obj.params.variant)


@tpm_command(0x144, "TPM2_Startup", handles=0)
def startup(cmd: Command, ctx: Context) -> Reply:
    """Forwarded as is; a successful TPM2_Startup(CLEAR) also ends every extension object and sequence."""
    response = ctx.backend_transact(cmd.raw)
    r = Reader(cmd.raw, cmd.params.pos)
    if r.u16() == 0 and response[6:10] == b"\0\0\0\0":
        state = _state(ctx)
        state.objects.clear()
        state.sequences.clear()
    return Reply(raw=response)


def _tests_pqc_parameters(cmd: Command) -> bool:
    r = Reader(cmd.raw, cmd.params.pos)
    try:
        return r.u16() in S.PQC_TYPES
    except TpmError:
        return False


@tpm_command(0x18A, "TPM2_TestParms", handles=0, claims=_tests_pqc_parameters)
def test_parms(cmd: Command, ctx: Context) -> Reply:
    """TPMT_PUBLIC_PARMS of a PQC type: success if this TPM could make such a key (TPM_RC_PARMS if not)."""
    area = cmd.params.rest()
    kind = struct.unpack_from(">H", area)[0]
    # TPMT_PUBLIC_PARMS is TPMT_PUBLIC without nameAlg, attributes, authPolicy and unique
    r = Reader(S.u16(kind) + S.u16(S.TPM_ALG_SHA256) + S.u32(0) + S.tpm2b(b"") + area[2:] + S.tpm2b(b"")).param(1)
    pub = S.parse_public(r)
    r.end()
    _parameter_set(pub, 1)
    if pub.type == S.TPM_ALG_MLKEM and pub.symmetric is not None:
        raise TpmError(at_param(ext.TPM_RC_SYMMETRIC, 1), "restricted (storage) ML-KEM keys are not supported")
    return Reply()


# ---- discovery -------------------------------------------------------------------

TPM_CAP_ALGS = 0x0
TPM_CAP_COMMANDS = 0x2
# TPMA_ALGORITHM: asymmetric (bit 0), object (3), signing (8), encrypting (9)
PQC_ALGORITHMS = {S.TPM_ALG_MLKEM: 0x0209, S.TPM_ALG_MLDSA: 0x0109, S.TPM_ALG_HASH_MLDSA: 0x0109}


def _pqc_commands() -> dict[int, int]:
    """TPMA_CC of the 1.85 commands: commandIndex, cHandles (bits 25-27), rHandle (bit 28)."""
    out = {}
    for code, reg in ext.registered().items():
        if 0x1A3 <= code <= 0x1AA:
            out[code] = code | reg.handles << 25 | (1 << 28 if code in (0x1A9, 0x1AA) else 0)
    return out


def _lists_algs_or_commands(cmd: Command) -> bool:
    r = Reader(cmd.raw, cmd.params.pos)
    try:
        return r.u32() in (TPM_CAP_ALGS, TPM_CAP_COMMANDS)
    except TpmError:
        return False


@tpm_command(0x17A, "TPM2_GetCapability", handles=0, claims=_lists_algs_or_commands)
def get_capability(cmd: Command, ctx: Context) -> Reply:
    """swtpm's algorithm / command list with the 1.85 PQC entries merged in, in order."""
    capability, first, count = cmd.params.u32(), cmd.params.u32(), cmd.params.u32()
    response = ctx.backend_transact(cmd.raw)
    if response[6:10] != b"\0\0\0\0":
        return Reply(raw=response)
    r = Reader(response, 10)
    more, _cap, n = r.u8(), r.u32(), r.u32()
    width = 6 if capability == TPM_CAP_ALGS else 4
    entries = [r.take(width) for _ in range(n)]

    def key(entry: bytes) -> int:  # TPM_ALG_ID, or commandIndex of a TPMA_CC
        return struct.unpack(">H", entry[:2])[0] if width == 6 else struct.unpack(">I", entry)[0] & 0xFFFF

    ours = ({a: S.u16(a) + S.u32(attrs) for a, attrs in PQC_ALGORITHMS.items()} if width == 6
            else {c: S.u32(v) for c, v in _pqc_commands().items()})
    last = key(entries[-1]) if entries and more else None  # the backend stopped there: ours after it come later
    merged = sorted(entries + [e for k, e in ours.items() if k >= first and (last is None or k < last)], key=key)
    if len(merged) > count:
        merged, more = merged[:count], 1
    body = bytes([more]) + S.u32(capability) + S.u32(len(merged)) + b"".join(merged)
    return Reply(raw=struct.pack(">HII", 0x8001, 10 + len(body), 0) + body)
