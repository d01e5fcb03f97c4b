"""Which client of a served TPM 1.2 holds which session and key handle, so an exited client's are flushed.

A TPM 1.2 has no resource manager in the kernel (tcsd is meant to be the
only client), but a served TPM is shared: a raw client, or a tcsd that is
restarted, that exits with authorization sessions or keys loaded leaves
them in the TPM, and after 64 such sessions every ``TPM_OIAP`` answers
``TPM_RESOURCES`` for everyone. So serve remembers, per client process, the
handles the TPM handed it (``TPM_OIAP``, ``TPM_OSAP``, ``TPM_DSAP``,
``TPM_LoadKey(2)``, ``TPM_EstablishTransport``, ``TPM_LoadContext``) and,
when that process is gone, sends ``TPM_FlushSpecific`` for each, as closing
``/dev/tpmrm0`` flushes a TPM 2.0 space's sessions. A handle the TPM hands
to another client later (the first one ended or flushed it) belongs to that
client from then on, so one client's exit never flushes another's handle.
"""

from __future__ import annotations

import struct

TPM_TAG_RQU_COMMAND = 0x00C1
TPM_ORD_FLUSH_SPECIFIC = 0xBA
TPM_RT_KEY, TPM_RT_AUTH, TPM_RT_TRANS = 0x1, 0x2, 0x4
HEADER = 10
HANDLE_ORDINALS = {
    0x0A: TPM_RT_AUTH,   # TPM_OIAP
    0x0B: TPM_RT_AUTH,   # TPM_OSAP
    0x11: TPM_RT_AUTH,   # TPM_DSAP
    0x20: TPM_RT_KEY,    # TPM_LoadKey
    0x41: TPM_RT_KEY,    # TPM_LoadKey2
    0xE6: TPM_RT_TRANS,  # TPM_EstablishTransport
}
"""Ordinal -> the resource type of the handle at the start of its response's parameters."""
TPM_ORD_LOAD_CONTEXT = 0xB9
_LOAD_CONTEXT_RT = HEADER + 4 + 1 + 4 + 2
"""TPM_LoadContext: entityHandle, keepHandle, contextSize, then TPM_CONTEXT_BLOB (tag, resourceType, ...)."""


def flush_specific(handle: int, resource_type: int) -> bytes:
    return struct.pack(">HIIII", TPM_TAG_RQU_COMMAND, 18, TPM_ORD_FLUSH_SPECIFIC, handle, resource_type)


class HandleOwners:
    """Handle -> (client, resource type) for the handles clients were given; see the module docstring."""

    def __init__(self) -> None:
        self._owner: dict[int, tuple[int, int]] = {}

    def observe(self, client: int, command: bytes, response: bytes) -> None:
        """After one command of ``client``: note a handle the TPM handed it."""
        if len(command) < HEADER or len(response) < HEADER + 4 or response[6:10] != b"\0\0\0\0":
            return
        ordinal = struct.unpack_from(">I", command, 6)[0]
        resource_type = HANDLE_ORDINALS.get(ordinal)
        if resource_type is None and ordinal == TPM_ORD_LOAD_CONTEXT and len(command) >= _LOAD_CONTEXT_RT + 4:
            resource_type = struct.unpack_from(">I", command, _LOAD_CONTEXT_RT)[0]
        if resource_type is not None:
            self._owner[struct.unpack_from(">I", response, HEADER)[0]] = (client, resource_type)

    def release(self, client: int) -> list[bytes]:
        """``client`` is gone: forget its handles; the TPM_FlushSpecific frames that free them."""
        mine = [(h, rt) for h, (owner, rt) in self._owner.items() if owner == client]
        for handle, _rt in mine:
            del self._owner[handle]
        return [flush_specific(handle, rt) for handle, rt in mine]

    def reset(self) -> None:
        """A power cycle: every handle is gone."""
        self._owner.clear()

    def __len__(self) -> int:
        return len(self._owner)
