"""Reference source: Raj et al. 2016, fTPM (excerpt): the RPMB capacity arithmetic, Sec. 9.1.

The paper writes "up to 512MB (256*8*256*8 = 1,048,576 blocks)": the product
is 4,194,304, and 512 MB of 256-byte blocks is 2,097,152. Three readings of
one sentence; all are shown, none is picked.
"""

from __future__ import annotations

from trustlab.validation.core import Check, Inconsistency

PAPER = "Raj et al. 2016 (fTPM), Sec. 9.1"
PROFILES = ("emmc-rpmb-optee", "emmc-rpmb-optee-postsleep")


def checks() -> list[Check]:
    return []  # the excerpt's performance figures are plots (Fig. 7+), not printed numbers


def inconsistencies() -> list[Inconsistency]:
    from trustlab.devices.ftpm.atomic_store import capacity

    two = capacity(2)
    return [Inconsistency(
        PAPER, "blocks addressable with one extra level of indirection",
        {"stated result 1,048,576": 1_048_576.0, "the stated product 256*8*256*8": 256.0 * 8 * 256 * 8,
         "512 MB / 256-byte blocks": 512 * 2 ** 20 / 256},
        ours=float(two.logical_blocks), unit="blocks",
        note=f"our two-level store: {two.logical_blocks} logical blocks by the bit-vector arithmetic (header bits "
             f"excluded), {two.address_limited_blocks} within the 16-bit RPMB address field",
        profiles=PROFILES)]
