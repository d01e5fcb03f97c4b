"""Firmware TPM mechanisms on eMMC RPMB: atomic storage, secure clock, dark periods.

Layers, bottom up: :mod:`.rpmb_frame` (the 512-byte wire format),
:mod:`.rpmb` (the eMMC: key, write counter, result codes), :mod:`.faults`
(power-loss points), :mod:`.normal_world` (the untrusted OS carrying frames:
refuses, delays, holds, replays), :mod:`.rpmb_client` (the TEE's checks),
:mod:`.keys` (SSK = HKDF(fuses, device key, UUID)), :mod:`.atomic_store`
(shadow blocks + bit vector, one- or two-level), :mod:`.blob` (the ``NVStore``
interface, used by the TPM 1.2 engine), :mod:`.platform` (one phone across
reboots), :mod:`.state` and :mod:`.ftpm` (secure clock with fate sharing,
dark-period lockout rules, NV and sealed data), :mod:`.crash` (exhaustive
crash-point testing), :mod:`.usability` (lockout cost over a population of
boots), :mod:`.storage_cost` (RPMB frames per TPM 2.0 command, measured on swtpm).
"""

DEFAULT_STORAGE_PROFILE = "emmc-rpmb-optee"
