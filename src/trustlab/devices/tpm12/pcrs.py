"""PCR selections and composites (Part 2, 8.1-8.2): how every command names and digests PCRs.

TPM_Quote, TPM_Quote2, TPM_Seal/Unseal, the NV areas' PCR restrictions and
TPM_PCR_Reset all read a TPM_PCR_SELECTION and hash a TPM_PCR_COMPOSITE. The
composite carries the selection *exactly as the caller sent it*: TrouSerS
and the IBM TSS select PCRs 0-15 with sizeOfSelect 2, and a composite rebuilt
with 3 would digest other bytes (Part 2, 8.1: sizeOfSelect is the caller's).
"""

from __future__ import annotations

import functools
import struct

from trustlab.devices.tpm12.errors import TpmError
from trustlab.devices.tpm12.wire import Reader, sized

_U16 = struct.Struct(">H").pack


def pcr_selection(r: Reader) -> list[int]:
    size = r.u16()
    if size > 3:
        raise TpmError("TPM_INVALID_PCR_INFO", f"sizeOfSelect {size} (24 PCRs need at most 3)")
    return list(_selected(r.raw(size)))


@functools.lru_cache(maxsize=256)  # a TPM_PCR_SELECTION bitmap (at most 3 bytes) -> its indices; pure
def _selected(bits: bytes) -> tuple[int, ...]:
    return tuple(i for i in range(8 * len(bits)) if bits[i // 8] >> (i % 8) & 1)


@functools.lru_cache(maxsize=256)  # the inverse, with sizeOfSelect: the composite's TPM_PCR_SELECTION; pure
def _selection(indices: tuple[int, ...], size_of_select: int) -> bytes:
    bits = bytearray(size_of_select)
    for i in indices:
        bits[i // 8] |= 1 << (i % 8)
    return _U16(size_of_select) + bytes(bits)


def pcr_composite(tpm, indices: list[int], size_of_select: int = 3) -> bytes:
    pcrs = tpm.pcrs
    return _selection(tuple(indices), size_of_select) + sized(b"".join([pcrs[i] for i in indices]))
