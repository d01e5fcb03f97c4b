"""The TCG TPM 2.0 Library 1.85 post-quantum commands (ML-KEM, ML-DSA) as proxy extensions.

``handlers`` registers the commands on :mod:`trustlab.devices.tpm2.extensions`
(``key_commands``, ``mldsa_commands``, ``mlkem_commands``, ``discovery``, over
the shared ``state``); ``structures`` marshals the 1.85 wire structures;
``keys`` runs FIPS 203/204 through pyca/cryptography (OpenSSL); ``binding``
keeps private keys bound to the backend TPM instance; ``pricing`` asks the PQC
cost model what each operation costs on the profile's chip; ``client`` speaks
the commands over any TCTI; ``peer_check`` sends the same frames to another
1.85 TPM (wolfTPM's fwTPM) and compares the answers. See ``devices/tpm2/README.md``.
"""
