"""Per-TPM-instance state of the PQC commands and the helpers every command module shares.

Key objects and sequences (at 0x80FF0000-0x80FFFFFF) are per client under the
resource manager, as it keeps swtpm's objects: another client's handle is
TPM_RC_HANDLE, what the RM answers for a classical object that is not the
client's. They end when the client does, at a TPM Reset, and as
:mod:`.lifecycle` says. Here: how a command finds and authorizes them, asks
swtpm for something, reads a key template, prices an operation (through
:mod:`.pricing`) and loads a key from its seed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable

from trustlab.devices.tpm2 import extensions as ext
from trustlab.devices.tpm2.commands import TPM_RC_FAILURE, TPM_RC_HANDLE
from trustlab.devices.tpm2.extensions import (
    TPM_RC_AUTH_UNAVAILABLE,
    TPM_RC_KEY,
    TPM_RC_OBJECT_MEMORY,
    TPM_RC_PARMS,
    TPM_RC_SIZE,
    TPM_RC_VALUE,
    Command,
    Context,
    Reader,
    TpmError,
    at_handle,
    at_param,
    is_extension_handle,
)
from trustlab.devices.tpm2.pqc import binding, keys, lockout, pricing
from trustlab.devices.tpm2.pqc import structures as S

MAX_OBJECTS = 16
"""Extension objects + sequences one client may hold at once (TPM_RC_OBJECT_MEMORY beyond): per client
under the resource manager, as it virtualizes the TPM's object memory per space; one pool without it."""
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
    hierarchy: int = S.TPM_RH_OWNER
    seed: bytes = b""  # empty: a public key only (TPM2_LoadExternal)

    def public_key(self) -> Any:
        """The cryptography public key (for verify and encapsulate; a public-only object has just this)."""
        return self.params.public_cls.from_public_bytes(self.public.unique)

    def private_key(self, n: int = 1) -> Any:
        """The private key; a public-only object is TPM_RC_KEY on handle ``n``."""
        if self.private is None:
            raise TpmError(at_handle(TPM_RC_KEY, n), "the object is a public key only")
        return self.private


@dataclass
class Sequence:
    handle: int
    key_handle: int
    sign: bool
    auth: bytes
    stream: keys.MuStream | None  # None: an RSA/ECC key's sequence, hashed by swtpm (``backend``)
    size: int = 0
    key_name: bytes = b""  # the key's Name at SequenceStart: the sequence is bound to the key, not its handle
    prefix: bytes = b""  # the message's first 4 bytes (the TPM_GENERATED_VALUE check)
    backend: int = 0  # swtpm's hash sequence (in the client's resource-manager space) for an RSA/ECC key


class PqcSpace:
    """One client's extension objects and sequences (without a resource manager: the TPM's, shared).

    Handles are per space, as the resource manager's virtual handles are: another
    client's handle names nothing here (TPM_RC_HANDLE), whoever it belonged to.
    """

    def __init__(self) -> None:
        self.objects: dict[int, PqcObject] = {}
        self.sequences: dict[int, Sequence] = {}

    def allocate(self) -> int:
        used = self.objects.keys() | self.sequences.keys()
        if len(used) >= MAX_OBJECTS:
            raise TpmError(TPM_RC_OBJECT_MEMORY, "extension object slots full")
        handle = ext.EXTENSION_HANDLE_FIRST
        while handle in used:
            handle += 1
        return handle

    def flush_hierarchies(self, hierarchies: frozenset[int]) -> None:
        """Flush the objects of ``hierarchies`` and the sequences of their keys (libtpms' ObjectFlushHierarchy)."""
        self.objects = {h: o for h, o in self.objects.items() if o.hierarchy not in hierarchies}
        self.sequences = {h: s for h, s in self.sequences.items()
                          if s.key_handle in self.objects or not is_extension_handle(s.key_handle)}


SHARED = None
"""The key of the one space every client shares when there is no resource manager (``--no-rm``)."""


PROOF_RENEWED = {
    0x126: (S.TPM_RH_OWNER, S.TPM_RH_ENDORSEMENT),  # TPM2_Clear: shProof, ehProof
    0x124: (S.TPM_RH_ENDORSEMENT,),                 # TPM2_ChangeEPS: ehProof
    0x125: (S.TPM_RH_PLATFORM,),                    # TPM2_ChangePPS: phProof
}
"""Command code -> the hierarchies whose proof libtpms regenerates when it succeeds (HierarchyCommands.c)."""


def _fresh() -> bytes:
    return os.urandom(32)


@dataclass
class Proofs:
    """The extension's hierarchy proofs (libtpms' phProof, shProof, ehProof, nullProof) and clear epoch.

    They live in serve's memory only: a serve restart makes new ones, so every context saved before no
    longer loads (TPM_RC_INTEGRITY) - it fails closed where libtpms' proofs survive in its NV state."""

    by_hierarchy: dict[int, bytes] = field(default_factory=lambda: {h: _fresh() for h in S.HIERARCHIES})
    clear_epoch: bytes = field(default_factory=_fresh)
    """Renewed at every TPM2_Startup(CLEAR) (TPM Reset or Restart), as libtpms' clearCount increments."""

    def of(self, hierarchy: int) -> bytes:
        """The proof of ``hierarchy`` (libtpms' HierarchyGetProof: nullProof for anything else)."""
        return self.by_hierarchy.get(hierarchy, self.by_hierarchy[S.TPM_RH_NULL])

    def renew(self, hierarchies) -> None:
        for h in hierarchies:
            self.by_hierarchy[h] = _fresh()


class PqcState:
    """The extension objects of one TPM instance: a :class:`PqcSpace` per client under the resource
    manager (``ExtensionState.per_client``), else one shared by all; the hierarchy proofs."""

    def __init__(self) -> None:
        self.spaces: dict[Any, PqcSpace] = {}
        self.contexts_saved = 0
        self.proofs = Proofs()

    def space(self, owner: Any) -> PqcSpace:
        space = self.spaces.get(owner)
        if space is None:
            space = self.spaces[owner] = PqcSpace()
        return space

    def clear(self) -> None:
        """TPM2_Startup(CLEAR) (a TPM Reset or Restart) or a power cycle: every transient object and sequence
        is gone, and the clear epoch is renewed as libtpms' clearCount increments (stClear contexts)."""
        self.spaces.clear()
        self.proofs.clear_epoch = _fresh()

    def flush_hierarchies(self, hierarchies: frozenset[int]) -> None:
        for space in self.spaces.values():
            space.flush_hierarchies(hierarchies)


def tpm_state(ctx: Context) -> PqcState:
    """The extension's state of the whole TPM instance (every client's objects)."""
    return ctx.state.get("pqc", PqcState)


def state_of(ctx: Context) -> PqcSpace:
    """The objects and sequences the command's client may see, use and flush."""
    return tpm_state(ctx).space(ctx.conn_id if ctx.state.per_client else SHARED)


def own_space(ctx: Context) -> PqcSpace | None:
    """:func:`state_of` without making a space for a client that has none (for read-only questions)."""
    return tpm_state(ctx).spaces.get(ctx.conn_id if ctx.state.per_client else SHARED)


@ext.on_connection_closed
def flush_connection(state: ext.ExtensionState, conn: Any) -> None:
    state.get("pqc", PqcState).spaces.pop(conn, None)


@ext.on_tpm_reset
def flush_all(state: ext.ExtensionState) -> None:
    """A power cycle: every object goes. nullProof is left: the TPM's nullSeed (in :func:`reset_secret`)
    changes exactly when libtpms' nullProof does, at a TPM Reset and not at a Restart or Resume. The
    clear epoch is renewed (serve cannot tell a Resume from a Restart here: stClear contexts fail closed)."""
    state.get("pqc", PqcState).clear()


def derive_directly(ctx: Context, derive: Callable[[Callable[[bytes], bytes]], bytes]) -> bytes:
    """``derive(transact)`` (a :mod:`.binding` derivation and its temporary primary) directly on the TPM,
    past the resource manager: it takes no slot of the client's space. Without a resource manager, when
    the clients' objects fill the TPM, one is saved and loaded back around it, as :mod:`.lockout`'s
    canary does."""
    transact = lockout.direct(ctx)
    try:
        return derive(transact)
    except TpmError as refused:
        if refused.rc != TPM_RC_OBJECT_MEMORY:
            raise
    evicted = lockout.evict_one(transact)
    if evicted is None:
        raise TpmError(TPM_RC_OBJECT_MEMORY, "no TPM object slot for the key derivation")
    try:
        return derive(transact)
    finally:
        lockout.restore(transact, evicted)


def reset_secret(ctx: Context) -> bytes:
    """:func:`.binding.reset_secret`: no authorization, no slot of the client's (:func:`derive_directly`)."""
    return derive_directly(ctx, binding.reset_secret)


TPM_PT_STARTUP_CLEAR = 0x201
ENABLE_BITS = {S.TPM_RH_PLATFORM: 1 << 0, S.TPM_RH_OWNER: 1 << 1, S.TPM_RH_ENDORSEMENT: 1 << 2}
"""TPMA_STARTUP_CLEAR: phEnable, shEnable, ehEnable (TPM_RH_NULL is always enabled)."""


def hierarchy_enabled(ctx: Context, hierarchy: int) -> bool:
    """libtpms' HierarchyIsEnabled, read from the TPM (TPM_PT_STARTUP_CLEAR) directly past the RM."""
    bit = ENABLE_BITS.get(hierarchy)
    if bit is None:
        return True
    response = lockout.direct(ctx)(S.frame(S.TPM_CC_GET_CAPABILITY, [], S.u32(S.TPM_CAP_TPM_PROPERTIES)
                                           + S.u32(TPM_PT_STARTUP_CLEAR) + S.u32(1)))
    startup_clear = S.tpm_properties(response).get(TPM_PT_STARTUP_CLEAR)
    if startup_clear is None:
        raise TpmError(S.response_code(response) or 0x101, "the TPM's hierarchy state is unreadable")
    return bool(startup_clear & bit)


def key_at(ctx: Context, handle: int, n: int = 1) -> PqcObject:
    """The extension object at handle ``n`` of the command; another handle type is a TPM error."""
    obj = state_of(ctx).objects.get(handle)
    if obj is not None:
        return obj
    if handle >> 24 in (0x80, 0x81) and not is_extension_handle(handle):
        raise TpmError(at_handle(TPM_RC_KEY, n), "not a post-quantum key")  # a key of swtpm's
    raise TpmError(at_handle(TPM_RC_HANDLE, n), "no such object")


def authorize(cmd: Command, index: int, obj: PqcObject, ctx: Context) -> None:
    """USER-role authorization of ``obj`` by a password session, under the TPM's dictionary-attack
    protection unless the key is noDA (:mod:`.lockout`)."""
    if not obj.public.attributes & S.USER_WITH_AUTH:
        raise TpmError(TPM_RC_AUTH_UNAVAILABLE, "key needs a policy session (userWithAuth CLEAR)")
    no_da = bool(obj.public.attributes & S.NO_DA)
    if no_da:
        cmd.require_password(index, obj.auth, no_da=True)
        return
    cmd.require_password(index, None)  # the session's form first: no lockout test for a malformed one
    lockout.check(ctx)
    try:
        cmd.require_password(index, obj.auth)
    except TpmError as refused:
        rc = lockout.record_failure(ctx)
        if rc == lockout.TPM_RC_LOCKOUT:
            raise TpmError(rc, "the TPM entered dictionary-attack lockout") from None
        if rc != lockout.COUNTED:  # not counted (a warning such as TPM_RC_NV_RATE, or a fault): fail closed,
            # never 'wrong password' for a guess the TPM did not count
            raise TpmError(rc or TPM_RC_FAILURE, "the TPM did not count the failed authorization") from None
        raise refused


def priced(ctx: Context, ps: keys.ParameterSet, operation: str) -> pricing.OperationPrice:
    return pricing.OperationPrice(ctx.profile, ctx.state.rng, ps.algorithm, operation)


def parameter_set(pub: S.Public, n: int) -> keys.ParameterSet:
    ps = keys.parameter_set(pub.type, pub.parameter_set)
    if ps is None:
        raise TpmError(at_param(TPM_RC_PARMS, n), "parameter set not supported")
    return ps


def backend_call(ctx: Context, command: bytes, what: str) -> Reader:
    """Run a command on swtpm; its parameter area (a failure is passed on as the client's error)."""
    response = ctx.backend_transact(command)
    rc = S.response_code(response)
    if rc != 0:
        raise TpmError(rc, f"backend {what} failed")
    return Reader(response, 10)


def template_area(cmd: Command) -> bytes | None:
    """inPublic's TPMT_PUBLIC (parameter 2 of Create/CreatePrimary/Load/CreateLoaded), read without consuming."""
    r = Reader(cmd.raw, cmd.params.pos)
    try:
        r.tpm2b()
        return r.tpm2b()
    except TpmError:
        return None


def pqc_template(cmd: Command) -> bool:
    """Claim test: the template is ML-DSA/HashML-DSA/ML-KEM (the reserved derivation template is refused)."""
    area = template_area(cmd)
    if area is None:
        return False
    if binding.is_reserved_template(area):
        raise TpmError(at_param(TPM_RC_VALUE, 2), "template reserved for the proxy's key derivation")
    return S.peek_public_type(area) in S.PQC_TYPES


def extension_handle(cmd: Command) -> bool:
    return is_extension_handle(cmd.handles[0])


def flushes_extension_handle(cmd: Command) -> bool:
    r = Reader(cmd.raw, cmd.params.pos)
    try:
        return is_extension_handle(r.u32())
    except TpmError:
        return False


def read_template(cmd: Command) -> tuple[S.SensitiveCreate, S.Public, bytes, bytes, list]:
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
    if len(sensitive.user_auth) > len(S.digest(pub.name_alg, b"")):
        raise TpmError(at_param(TPM_RC_SIZE, 1), "userAuth is longer than the nameAlg digest")
    if pub.unique:
        pub = pub.with_unique(b"")  # unique is an entropy hint only for primaries; recomputed below
    S.check_template(pub, 2)
    return sensitive, pub, area, outside, pcrs


def qualify(name_alg: int, parent_qn: bytes, name: bytes) -> bytes:
    return S.u16(name_alg) + S.digest(name_alg, parent_qn + name)


def sensitive_area(pub: S.Public, auth: bytes, seed: bytes) -> bytes:
    """TPMT_SENSITIVE {sensitiveType, authValue, seedValue, sensitive (the FIPS seed)}."""
    return S.u16(pub.type) + S.tpm2b(auth) + S.tpm2b(b"") + S.tpm2b(seed)


def load_object(ctx: Context, pub: S.Public, ps: keys.ParameterSet, seed: bytes, auth: bytes,
          qualified_parent: bytes, hierarchy: int = S.TPM_RH_OWNER) -> PqcObject:
    """Expand ``seed`` into a key object at a free extension handle (public key = ``unique``).

    An empty ``seed`` loads ``pub`` as a public key only (its ``unique`` must be a valid key).
    """
    state = state_of(ctx)
    handle = state.allocate()
    if seed:
        private = keys.private_from_seed(ps, seed)
        full = pub.with_unique(keys.public_bytes(private))
    else:
        private, full = None, pub
    name = full.name()
    obj = PqcObject(handle, full, ps, private, auth, name, qualify(full.name_alg, qualified_parent, name),
                    hierarchy, seed)
    state.objects[handle] = obj
    return obj
