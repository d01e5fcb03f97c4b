"""Bytes on the wire of the TPM 2.0 commands a post-quantum key uses (TCG Library 1.85).

The fixed parts are swtpm's recorded frames of the classical commands
(:data:`trustlab.timing.formula_sets.tpm2.SIZES`, e.g. ``TPM2_Create`` with a P-256
template: 65 bytes in, 460 out); the P-256 public point (2+32+2+32 bytes) or the
ECDSA signature (2+2 + 2+32+2+32) is replaced by the post-quantum TPM2B of the
size FIPS 203 / FIPS 204 give (:mod:`.params`). The 1.85 commands that have no
classical twin are built from their parameter lists: ``TPM2_Encapsulate`` (key
handle in, ciphertext + shared secret out), ``TPM2_Decapsulate`` (key handle +
authorization + ciphertext in, shared secret out). i17b's handlers marshal the
exact frames; these sizes are for the study's bus and buffer checks.
"""

from __future__ import annotations

from dataclasses import dataclass

from trustlab.devices.tpm2.pqc_model.params import MLDSAParams, MLKEMParams, params
from trustlab.timing.formula_sets.tpm2 import SIZES

HEADER = 10
ECC_POINT = 2 + 32 + 2 + 32
ECDSA_SIG = 2 + 2 + 2 + 32 + 2 + 32
AUTH_AREA = 4 + 9  # authorizationSize + one password session
AUTH_RESPONSE = 5


@dataclass(frozen=True)
class Frame:
    command: str
    in_bytes: int
    out_bytes: int


def _ecc(command: str) -> tuple[int, int]:
    i, o, _, _ = SIZES[(command, "ecc256")]
    return i, o


def keygen_frames(algorithm: str) -> list[Frame]:
    """Create + Load of a key (the TPM stores the seed: Load expands it again)."""
    p = params(algorithm)
    pk = p.pk_bytes
    ci, co = _ecc("TPM2_Create")
    li, lo = _ecc("TPM2_Load")
    return [Frame("TPM2_Create", ci, co - ECC_POINT + 2 + pk), Frame("TPM2_Load", li - ECC_POINT + 2 + pk, lo)]


def use_frames(algorithm: str, operation: str) -> Frame:
    p = params(algorithm)
    if isinstance(p, MLDSAParams):
        si, so = _ecc("TPM2_Sign")
        vi, vo = _ecc("TPM2_VerifySignature")
        sig = 2 + 2 + p.sig_bytes
        if operation == "sign":  # SignDigest: + empty context (TPM2B)
            return Frame("TPM2_SignDigest", si + 2, so - ECDSA_SIG + sig)
        return Frame("TPM2_VerifyDigestSignature", vi - ECDSA_SIG + sig + 2, vo)
    assert isinstance(p, MLKEMParams)
    if operation == "encapsulate":
        return Frame("TPM2_Encapsulate", HEADER + 4, HEADER + 2 + p.ct_bytes + 2 + 32)
    return Frame("TPM2_Decapsulate", HEADER + 4 + AUTH_AREA + 2 + p.ct_bytes, HEADER + 4 + 2 + 32 + AUTH_RESPONSE)
