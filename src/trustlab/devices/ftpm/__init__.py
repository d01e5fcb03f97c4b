"""Firmware TPM mechanisms on eMMC RPMB: atomic storage, secure clock, dark periods.

Layers, bottom up: :mod:`rpmb_frame` (wire format), :mod:`rpmb` (the eMMC),
:mod:`normal_world` (the untrusted OS carrying frames, with fault injection),
:mod:`rpmb_client` (the TEE's checks), :mod:`keys` (SSK derivation),
:mod:`atomic_store` (shadow blocks + bit vector), :mod:`blob` (the NVStore
interface), :mod:`ftpm` (secure clock, lockout, NV), :mod:`crash` (exhaustive
crash-point testing), :mod:`usability` (lockout cost over a population of
boots), :mod:`storage_cost` (RPMB frames per TPM command).
"""

DEFAULT_STORAGE_PROFILE = "emmc-rpmb-optee"
