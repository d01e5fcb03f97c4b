"""PCR attributes of a PC Client TPM (TCG PC Client TPM Interface Spec 1.2, 4.3; libtpms).

Part 2, 8.8 leaves the PCR attributes to the platform specification; libtpms
(swtpm) builds the PC Client values, and so does this engine:
"""

from __future__ import annotations

from trustlab.devices.tpm12 import constants as C

# libtpms TPM_PCRAttributes_Init: PCRs 16-23
# are resettable: all ones after TPM_Startup, zeros after TPM_PCR_Reset; extend and reset are
# restricted by locality.
PCR_RESETTABLE = [i >= 16 for i in range(C.NUM_PCRS)]
PCR_DEFAULT = [b"\xff" * 20 if i >= 16 else b"\x00" * 20 for i in range(C.NUM_PCRS)]
PCR_EXTEND_LOCAL = [C.TPM_LOC_ALL] * 17 + [
    C.TPM_LOC_FOUR | C.TPM_LOC_THREE | C.TPM_LOC_TWO, C.TPM_LOC_FOUR | C.TPM_LOC_THREE | C.TPM_LOC_TWO,
    C.TPM_LOC_THREE | C.TPM_LOC_TWO, C.TPM_LOC_THREE | C.TPM_LOC_TWO | C.TPM_LOC_ONE,
    C.TPM_LOC_TWO, C.TPM_LOC_TWO, C.TPM_LOC_ALL]
PCR_RESET_LOCAL = [0] * 16 + [C.TPM_LOC_ALL, C.TPM_LOC_FOUR, C.TPM_LOC_FOUR, C.TPM_LOC_FOUR,
                              C.TPM_LOC_FOUR | C.TPM_LOC_TWO, C.TPM_LOC_TWO, C.TPM_LOC_TWO, C.TPM_LOC_ALL]
