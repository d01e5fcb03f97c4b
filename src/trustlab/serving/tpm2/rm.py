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
other's objects.

Where this follows the kernel exactly:

- three object and three session slots per space; a fourth object answers
  ``TPM_RC_OBJECT_MEMORY`` (the kernel fails the write with ``-ENOMEM``),
  a fourth session ``TPM_RC_SESSION_MEMORY``; the TPM's handle is flushed;
- which handles are mapped comes from the TPM's own command attributes
  (``GetCapability(TPM_CAP_COMMANDS)``: ``cHandles`` and ``rHandle``);
- session handles are not virtualized (a session keeps its handle across
  save/load); a context that no longer loads or saves (``TPM_RC_HANDLE``,
  ``TPM_RC_REFERENCE_H0``: flushed, or a power cycle) is forgotten;
- on close only sessions are flushed (saved object contexts hold no TPM memory).

Where it differs, and why:

- virtual handles are ``0x80FEFFFF - slot`` (kernel: ``0x80FFFFFF - slot``),
  because ``0x80FF0000``-``0x80FFFFFF`` belongs to the proxy's extension
  objects, which the RM never maps, loads or saves;
- an unknown virtual handle answers ``TPM_RC_HANDLE`` for that handle
  (kernel: ``-EINVAL`` from ``write``, which a socket cannot express);
- ``TPM2_FlushContext`` of a virtual handle (a parameter, not in the handle
  area) is translated and frees the slot, as tpm2-abrmd does; the kernel
  passes it through and the TPM answers ``TPM_RC_HANDLE``.

The RM issues its ContextLoad/ContextSave/FlushContext through ``internal``,
which the proxy prices like any command: the served time then matches what a
``/dev/tpmrm0`` user sees on the modelled chip.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Callable

from trustlab.devices.tpm2 import objects, wire
from trustlab.devices.tpm2.commands import TPM_RC_HANDLE

TPM_CC_CONTEXT_LOAD = 0x161
TPM_CC_CONTEXT_SAVE = 0x162
TPM_CC_FLUSH_CONTEXT = 0x165
TPM_CC_GET_CAPABILITY = 0x17A
TPM_CAP_COMMANDS = 0x00000002
TPM_CAP_HANDLES = 0x00000001
TPM_RC_OBJECT_MEMORY = 0x902
TPM_RC_SESSION_MEMORY = 0x903

HT_TRANSIENT = 0x80
HT_HMAC_SESSION = 0x02
HT_POLICY_SESSION = 0x03
OBJECT_SLOTS = 3
"""``ARRAY_SIZE(space->context_tbl)`` in the kernel."""
SESSION_SLOTS = 3
"""``ARRAY_SIZE(space->session_tbl)`` in the kernel."""
VHANDLE_TOP = 0x80FEFFFF
EXTENSION_FIRST, EXTENSION_LAST = 0x80FF0000, 0x80FFFFFF
"""Transient handles of the proxy's extension objects: never virtualized, loaded or saved."""

Transact = Callable[[bytes], bytes]


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

    def vhandles(self) -> list[int]:
        return [VHANDLE_TOP - i for i, ctx in enumerate(self.objects) if ctx is not None]

    @property
    def empty(self) -> bool:
        return not any(self.sessions) and all(c is None for c in self.objects)


class ResourceManager:
    """Per-connection spaces in front of one TPM; see the module docstring for the rules.

    ``internal`` runs (and lets the caller price) the RM's own commands;
    ``query`` reads the command attributes once (unpriced: the kernel does it at boot);
    ``table`` is the proxy's handle -> key-variant table, kept right across
    the real handles an object gets each time it is loaded.
    """

    def __init__(self, internal: Transact, table: objects.ObjectTable | None = None,
                 query: Transact | None = None) -> None:
        self._internal = internal
        self._query = query or internal
        self.table = table if table is not None else objects.ObjectTable()
        self._attrs: dict[int, int] | None = None

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

    def execute(self, space: Space, command: bytes, run: Transact) -> bytes:
        """Run one client command in ``space``: load, map, ``run``, map back, save."""
        code = struct.unpack_from(">I", command, 6)[0]
        attrs = self._command_attrs(code)
        if attrs is None or len(command) < wire.HEADER_SIZE + 4 * attrs[0]:
            return run(command)  # the TPM answers TPM_RC_COMMAND_CODE / _SIZE itself
        n_handles, response_handle = attrs
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
        if rc == 0 and response_handle:
            response = self._map_response_handle(space, real, response)
        if rc == 0 and code == TPM_CC_GET_CAPABILITY:
            response = self._map_capability(real, response)
        self._save(space, real)
        return response

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
                    return response[:wire.HEADER_SIZE] + struct.pack(">I", VHANDLE_TOP - slot) \
                        + response[wire.HEADER_SIZE + 4:]
            self._flush(handle)
            return wire.error_response(TPM_RC_OBJECT_MEMORY)
        if kind in (HT_HMAC_SESSION, HT_POLICY_SESSION):
            if handle in space.sessions:
                return response
            for slot in range(SESSION_SLOTS):
                if not space.sessions[slot]:
                    space.sessions[slot] = handle
                    return response
            self._flush(handle)
            return wire.error_response(TPM_RC_SESSION_MEMORY)
        return response

    @staticmethod
    def _map_capability(real: list[int | None], response: bytes) -> bytes:
        """GetCapability(TPM_CAP_HANDLES): only this space's transient objects, as virtual handles."""
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
                space.objects[slot] = None  # gone (power cycle): the virtual handle dangles
                space.variants[slot] = None
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
                space.sessions[slot] = 0  # the kernel forgets a session that no longer loads
        return real

    def _save(self, space: Space, real: list[int | None]) -> None:
        """ContextSave + FlushContext every loaded object; ContextSave every session."""
        for slot, handle in enumerate(real):
            if handle is None:
                continue
            rsp = self._internal(wire.build_command(TPM_CC_CONTEXT_SAVE, struct.pack(">I", handle)))
            variant = self.table.by_handle.pop(handle, None)
            if _rc(rsp) != 0:
                space.objects[slot] = None  # flushed by the command itself
                space.variants[slot] = None
                continue
            space.objects[slot] = rsp[wire.HEADER_SIZE:]
            space.variants[slot] = variant or space.variants[slot]
            self._flush(handle)
        for slot, handle in enumerate(space.sessions):
            if not handle:
                continue
            rsp = self._internal(wire.build_command(TPM_CC_CONTEXT_SAVE, struct.pack(">I", handle)))
            if _rc(rsp) != 0:
                space.sessions[slot] = 0  # ended (continueSession clear) or flushed
                space.session_blobs[slot] = None
            else:
                space.session_blobs[slot] = rsp[wire.HEADER_SIZE:]

    def _flush(self, handle: int) -> None:
        self._internal(wire.build_command(TPM_CC_FLUSH_CONTEXT, struct.pack(">I", handle)))
        self.table.by_handle.pop(handle, None)

    def close(self, space: Space) -> None:
        """The connection is gone: flush its sessions (saved objects hold no TPM memory)."""
        for slot, handle in enumerate(space.sessions):
            if handle:
                self._flush(handle)
            space.sessions[slot] = 0
            space.session_blobs[slot] = None
        space.objects = [None] * OBJECT_SLOTS
        space.variants = [None] * OBJECT_SLOTS

    def reset(self) -> None:
        """A power cycle: forget the command attributes (a new TPM may answer differently)."""
        self._attrs = None
