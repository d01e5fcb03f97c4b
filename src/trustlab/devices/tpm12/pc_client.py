"""PCR attributes of a PC Client TPM (TCG PC Client TPM Interface Spec 1.2, 4.3; libtpms).

Part 2, 8.8 leaves the PCR attributes to the platform specification; libtpms
(swtpm) builds the PC Client values, and so does this engine:
"""

from __future__ import annotations

from trustlab.devices.tpm12 import constants as C

# PCRs 16-23 are resettable (TPM_PCR_Reset sets zeros); after TPM_Startup the debug PCR 16 and
# the application PCR 23 are zero, the dynamic-launch PCRs 17-22 all ones (so a value there
# proves a DRTM event). Extend and reset are restricted by locality (libtpms TPM_PCRAttributes_Init).
PCR_RESETTABLE = [i >= 16 for i in range(C.NUM_PCRS)]
PCR_DEFAULT = [b"\xff" * 20 if 17 <= i <= 22 else b"\x00" * 20 for i in range(C.NUM_PCRS)]
PCR_EXTEND_LOCAL = [C.TPM_LOC_ALL] * 17 + [
    C.TPM_LOC_FOUR | C.TPM_LOC_THREE | C.TPM_LOC_TWO, C.TPM_LOC_FOUR | C.TPM_LOC_THREE | C.TPM_LOC_TWO,
    C.TPM_LOC_THREE | C.TPM_LOC_TWO, C.TPM_LOC_THREE | C.TPM_LOC_TWO | C.TPM_LOC_ONE,
    C.TPM_LOC_TWO, C.TPM_LOC_TWO, C.TPM_LOC_ALL]
PCR_RESET_LOCAL = [0] * 16 + [C.TPM_LOC_ALL, C.TPM_LOC_FOUR, C.TPM_LOC_FOUR, C.TPM_LOC_FOUR,
                              C.TPM_LOC_FOUR | C.TPM_LOC_TWO, C.TPM_LOC_TWO, C.TPM_LOC_TWO, C.TPM_LOC_ALL]
