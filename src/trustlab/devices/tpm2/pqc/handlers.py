"""The TCG TPM 2.0 Library 1.85 post-quantum commands, registered on the proxy's extension point.

Importing this module registers every handler (``extensions._PLUGINS`` names
it): key objects (:mod:`.key_commands`), ML-DSA (:mod:`.mldsa_commands`),
ML-KEM (:mod:`.mlkem_commands`) and discovery (:mod:`.discovery`). Key
objects (ML-DSA-44/65/87, HashML-DSA, ML-KEM-768/1024) are created by
TPM2_CreatePrimary / TPM2_Create and loaded by TPM2_Load (public keys alone by
TPM2_LoadExternal) when the template names TPM_ALG_MLDSA, TPM_ALG_HASH_MLDSA or
TPM_ALG_MLKEM; every other template goes to swtpm unchanged. TPM2_SignDigest /
TPM2_VerifyDigestSignature also take swtpm's own RSA/ECC/HMAC keys
(:mod:`.classical`); restricted keys need hash-check tickets (:mod:`.tickets`).
Under the resource manager each client has objects of its own (:mod:`.state`);
TPM2_Clear, ChangeEPS/PPS and HierarchyControl flush them as libtpms flushes its
own (:mod:`.lifecycle`); key passwords are under the TPM's dictionary-attack
protection (:mod:`.lockout`).
The crypto is FIPS 203/204 through pyca/cryptography;
the time is the PQC cost model's (:mod:`.pricing`).
"""

from trustlab.devices.tpm2.pqc import discovery, key_commands, lifecycle, mldsa_commands, mlkem_commands  # noqa: F401

REGISTERING_MODULES = (key_commands, mldsa_commands, mlkem_commands, discovery, lifecycle)
