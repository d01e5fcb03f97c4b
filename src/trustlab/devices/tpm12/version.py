"""What the TPM says it is (Part 2, 5.3-5.4, 21.6): its TPM_VERSION and TPM_CAP_VERSION_INFO.

Used by TPM_GetCapability, TPM_GetCapabilityOwner and TPM_Quote2, none of
which should import another for it.
"""

from __future__ import annotations

from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12.wire import Writer

MANUFACTURER = b"TLAB"  # TPM_CAP_PROP_MANUFACTURER: the vendor's 4 bytes (Part 2, 21.2)
SPEC_LEVEL, ERRATA_REV = 0x0002, 0x03  # rev 116: level 2, errata 3 (as libtpms reports)
FIRMWARE = (0x01, 0x00)  # revMajor, revMinor of TPM_VERSION in TPM_CAP_VERSION_INFO


def tpm_version() -> bytes:
    """TPM_VERSION (Part 2, 5.4): 1.2 and the firmware revision (libtpms TPM_Version_Set)."""
    return bytes((1, 2, *FIRMWARE))


def version_info() -> bytes:
    """TPM_CAP_VERSION_INFO (Part 2, 21.6): tag, version 1.2.rev, specLevel, errataRev, vendor."""
    return (Writer().u16(C.TPM_TAG_CAP_VERSION_INFO).u8(1).u8(2).u8(FIRMWARE[0]).u8(FIRMWARE[1])
            .u16(SPEC_LEVEL).u8(ERRATA_REV).raw(MANUFACTURER).u16(0).bytes())
