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
from dataclasses import dataclass

from trustlab.devices.tpm12 import constants as C
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


def selection_digest(tpm, selection: bytes) -> bytes:
    """SHA-1 of the TPM_PCR_COMPOSITE for a TPM_PCR_SELECTION given as its bytes (sizeOfSelect included),
    with the selection exactly as given (libtpms TPM_PCRSelection_GenerateDigest)."""
    indices = _selected(selection[2:])
    pcrs = tpm.pcrs
    return tpm.crypto.sha1(selection, sized(b"".join([pcrs[i] for i in indices])))


def selects_any(selection: bytes) -> bool:
    """Whether a TPM_PCR_SELECTION names any PCR (libtpms TPM_PCRInfo_GetPCRUsage)."""
    return any(selection[2:])


@dataclass(frozen=True)
class PcrInfo:
    """A TPM_PCR_INFO (Part 2, 8.3) or TPM_PCR_INFO_LONG (8.4), the selections as sent."""

    long: bool
    creation_selection: bytes  # (for TPM_PCR_INFO, its one pcrSelection)
    release_selection: bytes
    locality_at_release: int  # (TPM_PCR_INFO: every locality, 0x1f)
    digest_at_release: bytes

    @classmethod
    def parse(cls, blob: bytes, code: str = "TPM_BADINDEX") -> "PcrInfo":
        """Parse a caller's PCR info; anything malformed answers ``code`` (TPM_Seal: TPM_BADINDEX)."""
        r = Reader(blob, "TPM_PCR_INFO")
        try:
            if blob[:2] == _U16(C.TPM_TAG_PCR_INFO_LONG):
                r.u16()
                _locality_selection(r.u8())  # localityAtCreation: the TPM's, not the caller's
                locality = _locality_selection(r.u8())
                creation, release = raw_selection(r), raw_selection(r)
                r.raw(20)
                at_release = r.raw(20)
                r.end()
                return cls(True, creation, release, locality, at_release)
            selection = raw_selection(r)
            at_release = r.raw(20)
            r.raw(20)
            r.end()
            return cls(False, selection, selection, 0x1F, at_release)
        except TpmError as e:
            raise TpmError(code, f"PCR info: {e}") from None

    def with_creation(self, tpm, locality: int) -> bytes:
        """The sealInfo the TPM stores: digestAtCreation of the creation selection now (and, for
        TPM_PCR_INFO_LONG, the current locality as localityAtCreation)."""
        at_creation = selection_digest(tpm, self.creation_selection) if selects_any(self.creation_selection) \
            else bytes(20)
        if self.long:
            return (_U16(C.TPM_TAG_PCR_INFO_LONG) + bytes((1 << locality, self.locality_at_release))
                    + self.creation_selection + self.release_selection + at_creation + self.digest_at_release)
        return self.creation_selection + self.digest_at_release + at_creation

    def check_release(self, tpm, locality: int) -> None:
        """Part 3, 10.2 step 7: the selected PCRs must hold digestAtRelease (TPM_WRONGPCRVAL), and for
        TPM_PCR_INFO_LONG the locality must be in localityAtRelease (TPM_BAD_LOCALITY)."""
        if selects_any(self.release_selection) and \
                selection_digest(tpm, self.release_selection) != self.digest_at_release:
            raise TpmError("TPM_WRONGPCRVAL", "the platform is not in the sealed state")
        if self.locality_at_release != 0x1F and not self.locality_at_release & (1 << locality):
            raise TpmError("TPM_BAD_LOCALITY", f"locality {locality} is not in localityAtRelease")


def _locality_selection(bits: int) -> int:
    """A TPM_LOCALITY_SELECTION names some of localities 0-4 (libtpms TPM_LocalitySelection_CheckLegal)."""
    if bits == 0 or bits & ~0x1F:
        raise TpmError("TPM_INVALID_STRUCTURE", f"locality selection {bits:#04x}")
    return bits


def raw_selection(r: Reader) -> bytes:
    """A TPM_PCR_SELECTION as its bytes (sizeOfSelect at most 3, else TPM_INVALID_PCR_INFO)."""
    start = r.pos
    size = r.u16()
    if size > 3:
        raise TpmError("TPM_INVALID_PCR_INFO", f"sizeOfSelect {size} (24 PCRs need at most 3)")
    r.raw(size)
    return r._data[start:r.pos]
