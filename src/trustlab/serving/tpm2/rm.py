"""A TPM 2.0 resource manager with the Linux kernel ``tpmrm`` rules (drivers/char/tpm/tpm2-space.c).

Every client connection gets a *space*: up to three transient objects and
three sessions of its own. Before each of its commands the space's saved
contexts are loaded (``TPM2_ContextLoad``) and the virtual handles in the
command's handle area are replaced by the real ones; after the command a
returned transient handle is virtualized, ``GetCapability(TPM_CAP_HANDLES)``
is filtered to the space's own objects, and every object is saved
(``TPM2_ContextSave``) and flushed (``TPM2_FlushContext``), every session
saved. When the connection closes, its sessions are flushed. So a client
never sees ``TPM_RC_OBJECT_MEMORY`` because another client (or an earlier
tool invocation) left objects loaded, and two clients never see each
other's objects or sessions.

Sessions belong to the space that started (or claimed) them: a space may
use, save, flush and list only its own. Another space's session handle in
the handle area answers ``TPM_RC_REFERENCE_H0 + n``, in the authorization
area ``TPM_RC_REFERENCE_S0 + n`` (what the TPM answers for a session that is
not loaded), as ``FlushContext``'s or ``ContextLoad``'s parameter
``TPM_RC_HANDLE + P1``; ``GetCapability(TPM_CAP_HANDLES)`` lists only the
space's own sessions.

A session the client saved itself (its own ``TPM2_ContextSave``: tpm2-tools
hands a session to the next process this way) is neither saved nor
forgotten by the RM. When its space closes it is *abandoned*, as tpm2-abrmd
does (session-list.c): a later client may claim it by loading its saved context (tpm2-tools'
``-S session.ctx`` in the next process; a bare handle claims nothing, and no other client sees it listed),
and at most :data:`ABANDONED_MAX` (abrmd's ``SESSION_LIST_MAX_ABANDONED_DEFAULT``, which
abrmd has no option for) are kept, the oldest flushed first; ``abandoned_max``
(serve's ``--abandoned-sessions``) sets the bound, and 0 flushes them at once:
the kernel's rule, every session of a closing space flushed. Every other
session of a closing space is flushed. So no number of clients that exit
without flushing can fill the TPM's session slots (1,000 tpm2-tools processes
leave the bound behind: 4 by default, 0 with 0).

Where this follows the kernel exactly:

- three object and three session slots per space; a fourth object answers
  ``TPM_RC_OBJECT_MEMORY`` (the kernel fails the write with ``-ENOMEM``),
  a fourth session ``TPM_RC_SESSION_MEMORY``; the TPM's handle is flushed;
- which handles are mapped comes from the TPM's own command attributes
  (``GetCapability(TPM_CAP_COMMANDS)``: ``cHandles`` and ``rHandle``);
- session handles are not virtualized (a session keeps its handle across
  save/load); a session context that no longer loads (``TPM_RC_HANDLE``,
  ``TPM_RC_REFERENCE_H0``: flushed, or a power cycle) or saves
  (``TPM_RC_REFERENCE_H0``) is forgotten - except a session the client saved
  itself (see above; the kernel forgets it, and so leaks its TPM slot). (Any
  other answer to a session's ContextLoad forgets it here too; the kernel
  fails that command instead, ``tpm2_load_space``);
- on close only sessions are flushed (saved object contexts hold no TPM memory).

Where it differs, and why:

- virtual handles are ``0x80FEFFFF - slot`` (kernel: ``0x80FFFFFF - slot``),
  because ``0x80FF0000``-``0x80FFFFFF`` belongs to the proxy's extension
  objects, which the RM never maps, loads or saves;
- an unknown virtual handle answers ``TPM_RC_HANDLE`` for that handle
  (kernel: ``-EINVAL`` from ``write``, which a socket cannot express);
- an object whose saved context the TPM no longer loads - any answer, e.g.
  ``TPM_RC_INTEGRITY`` after ChangePPS, ChangeEPS or Clear renewed its
  hierarchy's proof, ``TPM_RC_HIERARCHY`` once HierarchyControl disabled its
  hierarchy, ``TPM_RC_INTEGRITY`` for a null-hierarchy object after a TPM
  reset - or that the TPM flushed during a command of the space itself (the
  same events, a sequence's Complete) is *lost*: its slot is freed at once (the space can hold three new
  objects), the space's other objects and sessions are untouched, and a
  command naming its virtual handle answers ``TPM_RC_REFERENCE_H0 + n``, as
  the TPM itself answers for an object loaded during the same event (the TPM
  flushes it: libtpms, measured in tests/tpm2/test_rm_lost_contexts.py) and
  as tpm2-abrmd's client sees it (abrmd ignores the ContextLoad failure and
  sends the virtual handle on, src/resource-manager.c:1342, which the TPM
  answers so), until a new object takes the slot. The kernel instead keeps
  the context and fails *every* later ``write`` of that space, whatever the
  command, until the file is closed: ``tpm2_load_space`` returns any object
  load failure (``-ENOENT`` for ``TPM_RC_HANDLE``/``TPM_RC_REFERENCE_H0``,
  ``-EINVAL`` for ``TPM_RC_INTEGRITY`` since v6.10's "tpm: disable the TPM if
  NULL name changes", ``-EFAULT`` otherwise) and ``tpm2_prepare_space``
  discards the work space without committing it; only *sessions* are
  forgotten on ``-ENOENT``;
- ``TPM2_FlushContext`` of a virtual handle (a parameter, not in the handle
  area) is translated and frees the slot, as tpm2-abrmd does; the kernel
  passes it through and the TPM answers ``TPM_RC_HANDLE``;
- sessions are private to their space and client-saved ones are abandoned
  on close, not forgotten (tpm2-abrmd's rules; the kernel shows every
  session to every space).

The RM issues its ContextLoad/ContextSave/FlushContext through ``internal``,
which the proxy prices like any command: the served time then matches what a
``/dev/tpmrm0`` user sees on the modelled chip.
"""

from __future__ import annotations

import struct
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable

from trustlab.devices.tpm2 import objects, wire
from trustlab.devices.tpm2.commands import TPM_RC_HANDLE, TPM_ST_SESSIONS

TPM_CC_CONTEXT_LOAD = 0x161
TPM_CC_CONTEXT_SAVE = 0x162
TPM_CC_FLUSH_CONTEXT = 0x165
TPM_CC_GET_CAPABILITY = 0x17A
TPM_CAP_COMMANDS = 0x00000002
TPM_CAP_HANDLES = 0x00000001
TPM_RC_OBJECT_MEMORY = 0x902
TPM_RC_SESSION_MEMORY = 0x903
TPM_RC_REFERENCE_H0 = 0x910
TPM_RC_REFERENCE_S0 = 0x918
TPM_RC_P1 = 0x040 | 0x100
"""``TPM_RC_P + TPM_RC_1``: the response code names parameter 1."""
TPM_RS_PW = 0x40000009

HT_TRANSIENT = 0x80
HT_HMAC_SESSION = 0x02
HT_POLICY_SESSION = 0x03
OBJECT_SLOTS = 3
"""``ARRAY_SIZE(space->context_tbl)`` in the kernel."""
SESSION_SLOTS = 3
"""``ARRAY_SIZE(space->session_tbl)`` in the kernel."""
ABANDONED_MAX = 4
"""Client-saved sessions of closed spaces kept for a later client to claim (tpm2-abrmd's
``SESSION_LIST_MAX_ABANDONED_DEFAULT``); beyond it the oldest is flushed."""
VHANDLE_TOP = 0x80FEFFFF
EXTENSION_FIRST, EXTENSION_LAST = 0x80FF0000, 0x80FFFFFF
"""Transient handles of the proxy's extension objects: never virtualized, loaded or saved."""

Transact = Callable[[bytes], bytes]
_SPACE_COMMANDS = frozenset({0x161, 0x162, 0x165, 0x17A})
"""ContextLoad, ContextSave, FlushContext, GetCapability: they name or list a space's handles in their
parameters, so they always take the mapping path."""


def is_session(handle: int) -> bool:
    return handle >> 24 in (HT_HMAC_SESSION, HT_POLICY_SESSION)


def session_index(handle: int) -> int:
    """Which session a handle names. The TPM finds a session by this index alone: it lists saved policy
    sessions under ``0x02`` handles, and flushes index *n* whether named ``0x02..n`` or ``0x03..n``."""
    return handle & 0x00FFFFFF


def is_extension_handle(handle: int) -> bool:
    return EXTENSION_FIRST <= handle <= EXTENSION_LAST


def _rc(frame: bytes) -> int:
    return struct.unpack_from(">I", frame, 6)[0] if len(frame) >= wire.HEADER_SIZE else 0x101


@dataclass
class Space:
    """One connection's objects and sessions, between its commands."""

    conn_id: int
    objects: list[bytes | None] = field(default_factory=lambda: [None] * OBJECT_SLOTS)
    """Saved TPMS_CONTEXT per slot (None = free)."""
    variants: list[str | None] = field(default_factory=lambda: [None] * OBJECT_SLOTS)
    sessions: list[int] = field(default_factory=lambda: [0] * SESSION_SLOTS)
    session_blobs: list[bytes | None] = field(default_factory=lambda: [None] * SESSION_SLOTS)
    client_saved: list[bool] = field(default_factory=lambda: [False] * SESSION_SLOTS)
    """The client saved the session itself (no RM blob; abandoned, not flushed, on close)."""
    lost: set[int] = field(default_factory=set)
    """Free object slots whose context the TPM refused to load: their virtual handle answers
    ``TPM_RC_REFERENCE_H0`` (the object is gone) until a new object takes the slot."""

    def session_slot(self, handle: int) -> int | None:
        """The slot holding the session ``handle`` names (by its index), or None."""
        index = session_index(handle)
        for slot, held in enumerate(self.sessions):
            if held and session_index(held) == index:
                return slot
        return None

    def vhandles(self) -> list[int]:
        return [VHANDLE_TOP - i for i, ctx in enumerate(self.objects) if ctx is not None]

    @property
    def empty(self) -> bool:
        return not any(self.sessions) and self.objects.count(None) == len(self.objects)  # (no generator: per command)


class ResourceManager:
    """Per-connection spaces in front of one TPM; see the module docstring for the rules.

    ``internal`` runs (and lets the caller price) the RM's own commands;
    ``query`` reads the command attributes once (unpriced: the kernel does it at boot);
    ``table`` is the proxy's handle -> key-variant table, kept right across
    the real handles an object gets each time it is loaded.
    ``reclaim(space)``: True if the owner of ``space`` is gone (its process
    exited) and the space was closed now - called before refusing another
    space's session, since a client's exit is noticed only every so often.
    """

    def __init__(self, internal: Transact, table: objects.ObjectTable | None = None,
                 query: Transact | None = None, reclaim: Callable[[Space], bool] | None = None,
                 abandoned_max: int | None = None) -> None:
        if abandoned_max is not None and abandoned_max < 0:
            raise ValueError(f"abandoned_max must be 0 or more, not {abandoned_max}")
        self.abandoned_max = ABANDONED_MAX if abandoned_max is None else abandoned_max
        """Client-saved sessions of closed spaces kept for a later claim (0: flush every session on close)."""
        self._internal = internal
        self._query = query or internal
        self._reclaim = reclaim
        self.table = table if table is not None else objects.ObjectTable()
        self._attrs: dict[int, int] | None = None
        self._plain: dict[int, bool] = {}
        """Code -> the command has no handle in its handle area or response and lists none (from ``_attrs``)."""
        self._owner: dict[int, Space] = {}
        """Session index -> the space it belongs to."""
        self.abandoned: OrderedDict[int, int] = OrderedDict()
        """Session index -> handle: client-saved sessions of closed spaces, oldest first (module docstring)."""

    # ---- command attributes (cHandles, rHandle) from the TPM itself --------

    def _command_attrs(self, code: int) -> tuple[int, bool] | None:
        """(number of handles in the command, whether the response carries a handle)."""
        if self._attrs is None:
            self._attrs = self._read_attrs()
        attrs = self._attrs.get(code) if self._attrs is not None else None
        if attrs is None:
            if code not in objects.COMMAND_HANDLES:
                return None
            return objects.COMMAND_HANDLES[code], code in objects.RESPONSE_HANDLES
        return (attrs >> 25) & 0x7, bool((attrs >> 28) & 1)

    def _read_attrs(self) -> dict[int, int] | None:
        """TPMA_CC of every command (GetCapability(TPM_CAP_COMMANDS)); None before TPM2_Startup."""
        table: dict[int, int] = {}
        first = 0x11F
        for _ in range(8):
            rsp = self._query(wire.build_command(TPM_CC_GET_CAPABILITY,
                                                    struct.pack(">III", TPM_CAP_COMMANDS, first, 256)))
            if _rc(rsp) == 0x100:  # TPM_RC_INITIALIZE: ask again after TPM2_Startup
                return None
            if _rc(rsp) != 0 or len(rsp) < wire.HEADER_SIZE + 9:
                return table  # no attributes from this TPM: the static tables serve
            more, _cap, count = struct.unpack_from(">BII", rsp, wire.HEADER_SIZE)
            pos = wire.HEADER_SIZE + 9
            for _i in range(count):
                (attrs,) = struct.unpack_from(">I", rsp, pos)
                pos += 4
                table[attrs & 0xFFFF] = attrs
            if not more or not count:
                return table
            first = max(table) + 1
        return table

    # ---- the command path ---------------------------------------------------

    def passes(self, space: Space, command: bytes, code: int) -> bool:
        """True if ``command`` needs nothing of the RM in ``space`` - no handle to map or check, no
        session, no handle listed, nothing of the space to load or save - so ``run(command)`` is all
        :meth:`execute` would do. (Checked before every command: most commands are of that kind.)"""
        if command[1] == 0x02 or not space.empty or len(command) < wire.HEADER_SIZE:  # 0x02: TPM_ST_SESSIONS
            return False
        plain = self._plain.get(code)
        if plain is None:
            if self._attrs is None:
                return False  # not read yet (before TPM2_Startup): execute() asks the TPM
            attrs = self._command_attrs(code)
            plain = self._plain[code] = attrs is None or (
                not attrs[0] and not attrs[1] and code not in _SPACE_COMMANDS)
        if plain:
            return True
        # GetCapability lists a space's handles only for TPM_CAP_HANDLES; an empty space has none to map
        return code == TPM_CC_GET_CAPABILITY and command[10:14] != b"\x00\x00\x00\x01" and len(command) >= 14

    def execute(self, space: Space, command: bytes, run: Transact) -> bytes:
        """Run one client command in ``space``: load, map, ``run``, map back, save."""
        code = struct.unpack_from(">I", command, 6)[0]
        attrs = self._command_attrs(code)
        if attrs is None or len(command) < wire.HEADER_SIZE + 4 * attrs[0]:
            return run(command)  # the TPM answers TPM_RC_COMMAND_CODE / _SIZE itself
        n_handles, response_handle = attrs
        if not n_handles and not response_handle and command[1] != 0x02 and code not in _SPACE_COMMANDS \
                and space.empty:  # 0x02: TPM_ST_SESSIONS; no handle, no session, nothing of this space to map
            return run(command)
        refused = self._foreign_sessions(space, command, code, n_handles)
        if refused:
            return wire.error_response(refused)
        real = self._load(space)
        mapped = bytearray(command)
        flushed_slot = None
        for i in range(n_handles):
            pos = wire.HEADER_SIZE + 4 * i
            (handle,) = struct.unpack_from(">I", mapped, pos)
            if handle >> 24 != HT_TRANSIENT or is_extension_handle(handle):
                continue
            slot = VHANDLE_TOP - handle
            if not 0 <= slot < OBJECT_SLOTS or real[slot] is None:
                self._save(space, real)
                if slot in space.lost:
                    return wire.error_response(TPM_RC_REFERENCE_H0 + i)  # what the TPM answers: it flushed it
                return wire.error_response(TPM_RC_HANDLE | ((i + 1) << 8))
            struct.pack_into(">I", mapped, pos, real[slot])
        if code == TPM_CC_FLUSH_CONTEXT:
            flushed_slot = self._map_flush(mapped, real)
            if flushed_slot == -1:
                self._save(space, real)
                return wire.error_response(TPM_RC_HANDLE | 0x40 | 0x100)  # TPM_RC_P + TPM_RC_1
        response = run(bytes(mapped))
        rc = _rc(response)
        if rc == 0 and flushed_slot is not None:
            real[flushed_slot] = None
            space.objects[flushed_slot] = None
            space.variants[flushed_slot] = None
        if rc == 0 and code in (TPM_CC_CONTEXT_SAVE, TPM_CC_FLUSH_CONTEXT):
            self._client_saved_or_flushed(space, code, command)
        if rc == 0 and response_handle:
            response = self._map_response_handle(space, real, response)
        if rc == 0 and code == TPM_CC_GET_CAPABILITY:
            response = self._map_capability(space, real, response)
        self._save(space, real)
        return response

    # ---- sessions: whose they are --------------------------------------------

    def _foreign_sessions(self, space: Space, command: bytes, code: int, n_handles: int) -> int:
        """The response code refusing a command that names a session not ``space``'s, else 0.

        An abandoned session (or one whose owner has exited) is claimed only by a
        ``ContextLoad`` of its saved context - the blob its client wrote, which
        only whoever may read that file holds; a handle is guessable (the first
        session is always ``0x02000000``), so ``FlushContext`` of a session not
        the space's own is refused, and in any other place an abandoned session
        is as foreign as a live space's.
        """
        end = wire.HEADER_SIZE + 4 * n_handles
        for i, (handle,) in enumerate(struct.iter_unpack(">I", command[wire.HEADER_SIZE:end])):
            if is_session(handle) and space.session_slot(handle) is None:
                return TPM_RC_REFERENCE_H0 + i
        if code in (TPM_CC_FLUSH_CONTEXT, TPM_CC_CONTEXT_LOAD):
            handle = self._named_session(command, code)
            if handle and space.session_slot(handle) is None and (
                    code == TPM_CC_FLUSH_CONTEXT or not self._claim(space, handle, code)):
                return TPM_RC_HANDLE | TPM_RC_P1  # a handle alone claims nothing: only the saved context does
        if len(command) >= wire.HEADER_SIZE and struct.unpack_from(">H", command)[0] == TPM_ST_SESSIONS:
            for i, handle in enumerate(_auth_sessions(command, end)):
                if is_session(handle) and space.session_slot(handle) is None:
                    return TPM_RC_REFERENCE_S0 + i
        return 0

    @staticmethod
    def _named_session(command: bytes, code: int) -> int:
        """The session FlushContext's parameter or ContextLoad's TPMS_CONTEXT.savedHandle names (0: none)."""
        pos = wire.HEADER_SIZE + (8 if code == TPM_CC_CONTEXT_LOAD else 0)  # TPMS_CONTEXT: sequence (8) first
        if len(command) < pos + 4:
            return 0
        (handle,) = struct.unpack_from(">I", command, pos)
        return handle if is_session(handle) else 0

    def _claim(self, space: Space, handle: int, code: int) -> bool:
        """Move an abandoned session (or one whose owner has exited) into ``space``; False if it is another
        live space's. A session nobody holds (a context from before a restart) is the TPM's to judge."""
        index = session_index(handle)
        owner = self._owner.get(index)
        if owner is not None and owner is not space and (self._reclaim is None or not self._reclaim(owner)):
            return False
        if index in self.abandoned:
            del self.abandoned[index]
        elif index in self._owner:
            return False  # still held by its (live) space after all
        else:
            return True
        for slot in range(SESSION_SLOTS):
            if not space.sessions[slot]:
                space.sessions[slot] = handle
                space.client_saved[slot] = True  # not loaded: its context is the client's
                self._owner[index] = space
                return True
        self._abandon(handle)  # no slot free: the TPM answers, the session stays claimable
        return code == TPM_CC_FLUSH_CONTEXT

    def _client_saved_or_flushed(self, space: Space, code: int, command: bytes) -> None:
        """After the client's own ContextSave of a session (its context is now the client's) or
        FlushContext of one (gone)."""
        if len(command) < wire.HEADER_SIZE + 4:
            return
        (handle,) = struct.unpack_from(">I", command, wire.HEADER_SIZE)
        slot = space.session_slot(handle) if is_session(handle) else None
        if slot is None:
            return
        if code == TPM_CC_CONTEXT_SAVE:
            space.client_saved[slot] = True
            space.session_blobs[slot] = None
        else:
            self._drop_session(space, slot)

    def _drop_session(self, space: Space, slot: int) -> None:
        index = session_index(space.sessions[slot])
        if self._owner.get(index) is space:
            del self._owner[index]
        space.sessions[slot] = 0
        space.session_blobs[slot] = None
        space.client_saved[slot] = False

    def _abandon(self, handle: int) -> None:
        """Keep a client-saved session of a closed space for a later claim; flush the oldest beyond the bound."""
        self._owner.pop(session_index(handle), None)
        self.abandoned[session_index(handle)] = handle
        while len(self.abandoned) > self.abandoned_max:
            self._flush(self.abandoned.popitem(last=False)[1])

    def sessions_held(self) -> int:
        """Sessions the TPM holds for clients: in live spaces, and abandoned."""
        return len(self._owner) + len(self.abandoned)

    def _map_flush(self, mapped: bytearray, real: list[int | None]) -> int | None:
        """FlushContext's handle is a parameter: translate a virtual one (tpm2-abrmd's rule)."""
        if len(mapped) < wire.HEADER_SIZE + 4:
            return None
        (handle,) = struct.unpack_from(">I", mapped, wire.HEADER_SIZE)
        if handle >> 24 != HT_TRANSIENT or is_extension_handle(handle):
            return None
        slot = VHANDLE_TOP - handle
        if not 0 <= slot < OBJECT_SLOTS or real[slot] is None:
            return -1
        struct.pack_into(">I", mapped, wire.HEADER_SIZE, real[slot])
        return slot

    def _map_response_handle(self, space: Space, real: list[int | None], response: bytes) -> bytes:
        if len(response) < wire.HEADER_SIZE + 4:
            return response
        (handle,) = struct.unpack_from(">I", response, wire.HEADER_SIZE)
        kind = handle >> 24
        if kind == HT_TRANSIENT and not is_extension_handle(handle):
            for slot in range(OBJECT_SLOTS):
                if real[slot] is None and space.objects[slot] is None:
                    real[slot] = handle
                    space.objects[slot] = b""  # taken; the context is saved below
                    space.lost.discard(slot)
                    return response[:wire.HEADER_SIZE] + struct.pack(">I", VHANDLE_TOP - slot) \
                        + response[wire.HEADER_SIZE + 4:]
            self._flush(handle)
            return wire.error_response(TPM_RC_OBJECT_MEMORY)
        if kind in (HT_HMAC_SESSION, HT_POLICY_SESSION):
            held = space.session_slot(handle)
            if held is not None:
                space.sessions[held] = handle
                space.client_saved[held] = False  # the client loaded it back
                return response
            index = session_index(handle)
            for slot in range(SESSION_SLOTS):
                if not space.sessions[slot]:
                    stale = self._owner.get(index)
                    if stale is not None and stale is not space and stale.session_slot(handle) is not None:
                        self._drop_session(stale, stale.session_slot(handle))  # the TPM reused a gone index
                    self.abandoned.pop(index, None)
                    space.sessions[slot] = handle
                    space.client_saved[slot] = False
                    self._owner[index] = space
                    return response
            self._flush(handle)
            return wire.error_response(TPM_RC_SESSION_MEMORY)
        return response

    def _map_capability(self, space: Space, real: list[int | None], response: bytes) -> bytes:
        """GetCapability(TPM_CAP_HANDLES): only this space's transient objects, as virtual handles, and its own
        sessions (not the abandoned ones: they are their exited client's, claimable only with its saved context)."""
        if len(response) < wire.HEADER_SIZE + 9:
            return response
        more, cap, count = struct.unpack_from(">BII", response, wire.HEADER_SIZE)
        if cap != TPM_CAP_HANDLES or len(response) != wire.HEADER_SIZE + 9 + 4 * count:
            return response
        handles = struct.unpack_from(f">{count}I", response, wire.HEADER_SIZE + 9)
        out = []
        for h in handles:
            if h >> 24 == HT_TRANSIENT and not is_extension_handle(h):
                if h in real:
                    out.append(VHANDLE_TOP - real.index(h))
            elif is_session(h):
                if space.session_slot(h) is not None:
                    out.append(h)
            else:
                out.append(h)
        body = struct.pack(">BII", more, cap, len(out)) + struct.pack(f">{len(out)}I", *out)
        tag = struct.unpack_from(">H", response, 0)[0]
        return struct.pack(">HII", tag, wire.HEADER_SIZE + len(body), 0) + body

    # ---- load / save ----------------------------------------------------------

    def _load(self, space: Space) -> list[int | None]:
        """ContextLoad every saved object and session; the real handle per object slot."""
        real: list[int | None] = [None] * OBJECT_SLOTS
        for slot, blob in enumerate(space.objects):
            if not blob:
                continue
            rsp = self._internal(wire.build_command(TPM_CC_CONTEXT_LOAD, blob))
            if _rc(rsp) != 0 or len(rsp) < wire.HEADER_SIZE + 4:
                space.objects[slot] = None  # lost (hierarchy event, TPM reset): the slot is free again
                space.variants[slot] = None
                space.lost.add(slot)
                continue
            (real[slot],) = struct.unpack_from(">I", rsp, wire.HEADER_SIZE)
            if space.variants[slot]:
                self.table.by_handle[real[slot]] = space.variants[slot]
        for slot, blob in enumerate(space.session_blobs):
            if not space.sessions[slot] or not blob:
                continue
            rsp = self._internal(wire.build_command(TPM_CC_CONTEXT_LOAD, blob))
            space.session_blobs[slot] = None
            if _rc(rsp) != 0:
                self._drop_session(space, slot)  # the kernel forgets a session that no longer loads
        return real

    def _save(self, space: Space, real: list[int | None]) -> None:
        """ContextSave + FlushContext every loaded object; ContextSave every session."""
        for slot, handle in enumerate(real):
            if handle is None:
                continue
            rsp = self._internal(wire.build_command(TPM_CC_CONTEXT_SAVE, struct.pack(">I", handle)))
            variant = self.table.by_handle.pop(handle, None)
            if _rc(rsp) != 0:
                space.objects[slot] = None  # flushed by the command itself (a sequence's Complete, ChangePPS...)
                space.variants[slot] = None
                space.lost.add(slot)
                continue
            space.objects[slot] = rsp[wire.HEADER_SIZE:]
            space.variants[slot] = variant or space.variants[slot]
            self._flush(handle)
        for slot, handle in enumerate(space.sessions):
            if not handle or space.client_saved[slot]:
                continue
            rsp = self._internal(wire.build_command(TPM_CC_CONTEXT_SAVE, struct.pack(">I", handle)))
            if _rc(rsp) != 0:
                self._drop_session(space, slot)  # ended (continueSession clear) or flushed
            else:
                space.session_blobs[slot] = rsp[wire.HEADER_SIZE:]

    def _flush(self, handle: int) -> None:
        self._internal(wire.build_command(TPM_CC_FLUSH_CONTEXT, struct.pack(">I", handle)))
        self.table.by_handle.pop(handle, None)

    def close(self, space: Space) -> None:
        """The client is gone: flush its sessions, abandon the ones it saved itself (saved objects hold no
        TPM memory)."""
        for slot, handle in enumerate(space.sessions):
            if handle:
                client_saved = space.client_saved[slot]
                self._drop_session(space, slot)
                if client_saved:
                    self._abandon(handle)
                else:
                    self._flush(handle)
        space.objects = [None] * OBJECT_SLOTS
        space.variants = [None] * OBJECT_SLOTS
        space.lost.clear()

    def reset(self) -> None:
        """A power cycle: every session is gone; forget the command attributes (a new TPM may answer
        differently)."""
        self._attrs = None
        self._plain.clear()
        self._owner.clear()
        self.abandoned.clear()


def _auth_sessions(command: bytes, start: int) -> list[int]:
    """The session handles of a command's authorization area (Part 1, 18.7), starting at ``start``
    (after the handles); [] if the area does not parse (the TPM answers that itself)."""
    out: list[int] = []
    try:
        (size,) = struct.unpack_from(">I", command, start)
        pos, end = start + 4, start + 4 + size
        if end > len(command):
            return []
        while pos < end:
            (handle, nonce) = struct.unpack_from(">IH", command, pos)
            pos += 6 + nonce + 1  # handle, nonce, sessionAttributes
            (hmac,) = struct.unpack_from(">H", command, pos)
            pos += 2 + hmac
            out.append(handle)
    except struct.error:
        return []
    return out
