"""Key derivation in the secure world: SSK := KDF(HF, DK, UUID).

The paper derives a per-device secure storage key from the hardware fuses (HF,
readable only by TrustZone), a device key (DK, shared with the normal world)
and the device UUID. We use HKDF-SHA256 (RFC 5869, via ``cryptography``):
HF || DK is the input keying material, the UUID is the salt, so the SSK is
secret as long as the fuses are, and unique per device.

From the SSK two independent keys are expanded with distinct ``info`` labels:
the RPMB authentication key programmed into the eMMC (which the eMMC also
holds) and the AEAD key that encrypts state blocks (which never leaves the
TEE). Separating them means that a leaked RPMB key -- e.g. read out of the
eMMC -- lets an attacker forge frames but not read fTPM secrets.
"""

from __future__ import annotations

import uuid as uuidlib
from dataclasses import dataclass

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF, HKDFExpand


def _hkdf(ikm: bytes, salt: bytes, info: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=salt, info=info).derive(ikm)


def _expand(key: bytes, info: bytes) -> bytes:
    return HKDFExpand(algorithm=hashes.SHA256(), length=32, info=info).derive(key)


@dataclass(frozen=True)
class DeviceSecrets:
    """What the SoC provides: fuses (TEE only), a device key, a UUID."""

    hardware_fuses: bytes
    device_key: bytes
    uuid: uuidlib.UUID

    @classmethod
    def for_seed(cls, seed: int) -> "DeviceSecrets":
        """Deterministic per-seed secrets, so simulated devices are reproducible."""
        base = _hkdf(seed.to_bytes(8, "big"), b"trustlab-ftpm-simulated-device", b"fuses")
        return cls(hardware_fuses=base, device_key=_expand(base, b"device key"),
                   uuid=uuidlib.UUID(bytes=_expand(base, b"uuid")[:16]))


@dataclass(frozen=True)
class StorageKeys:
    ssk: bytes
    rpmb_key: bytes
    aead_key: bytes


def derive_keys(secrets: DeviceSecrets) -> StorageKeys:
    """SSK = HKDF(IKM = HF || DK, salt = UUID, info = label); then the two working keys."""
    ssk = _hkdf(secrets.hardware_fuses + secrets.device_key, secrets.uuid.bytes,
                b"trustlab fTPM secure storage key v1")
    return StorageKeys(ssk=ssk, rpmb_key=_expand(ssk, b"RPMB authentication key"),
                       aead_key=_expand(ssk, b"state block AEAD key"))
