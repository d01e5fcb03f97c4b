"""Which post-quantum operation each TPM 2.0 Library 1.85 command performs, and its price as serve charges it.

One table for the two readers that must agree with the handlers (``key_commands``,
``mldsa_commands``, ``mlkem_commands``: each names its operation to :mod:`.pricing`):
``trustlab estimate`` (a command on a profile, without running it) and ``trustlab replay``
(a trace recorded before serve wrote the operation into each line). The price is
:func:`.pricing.operation_ms` itself, at the model's means, on the model's standard frame of the
operation (:mod:`trustlab.devices.tpm2.pqc_model.frames`) unless the caller gives the sizes.
"""

from __future__ import annotations

from dataclasses import dataclass

from trustlab.errors import TrustlabError

OPERATIONS = {"TPM2_CreatePrimary": "keygen", "TPM2_Create": "keygen", "TPM2_Load": "load",
              "TPM2_ContextLoad": "load", "TPM2_SignDigest": "sign", "TPM2_SignSequenceComplete": "sign",
              "TPM2_Quote": "sign", "TPM2_VerifyDigestSignature": "verify",
              "TPM2_VerifySequenceComplete": "verify", "TPM2_Encapsulate": "encapsulate",
              "TPM2_Decapsulate": "decapsulate"}
"""Command -> the operation its handler prices for a post-quantum key."""
NEW_IN_185 = ("TPM2_SignDigest", "TPM2_VerifyDigestSignature", "TPM2_SignSequenceComplete",
              "TPM2_VerifySequenceComplete", "TPM2_Encapsulate", "TPM2_Decapsulate")
"""The priced commands 1.85 adds (the others take a post-quantum key besides their 1.83 ones)."""
CLASSICAL_AS = {"TPM2_SignDigest": "TPM2_Sign", "TPM2_SignSequenceComplete": "TPM2_Sign",
                "TPM2_VerifyDigestSignature": "TPM2_VerifySignature",
                "TPM2_VerifySequenceComplete": "TPM2_VerifySignature"}
"""1.85 commands on an RSA/ECC key: serve prices them as the 1.83 command that does the work (:mod:`.classical`)."""
SIGNATURE_OPERATIONS = ("sign", "verify")
KEM_OPERATIONS = ("encapsulate", "decapsulate")


def parameter_sets(command: str) -> tuple[str, ...]:
    """The parameter sets a command's post-quantum form takes (the model's names: ML-DSA-65, ML-KEM-768)."""
    from trustlab.devices.tpm2.pqc import keys

    dsa = tuple(p.algorithm for p in keys.MLDSA_SETS.values())
    kem = tuple(p.algorithm for p in keys.MLKEM_SETS.values())
    op = OPERATIONS.get(command)
    if op in SIGNATURE_OPERATIONS:
        return dsa
    if op in KEM_OPERATIONS:
        return kem
    return dsa + kem if op is not None else ()


def parameter_set(key: str) -> str | None:
    """``ML-DSA-65`` for ``ML-DSA-65``, ``ml-dsa-65`` or the trace's ``mldsa65``; None for any other key."""
    from trustlab.devices.tpm2.pqc import keys

    wanted = key.strip().lower().replace("-", "").replace("_", "")
    for p in (*keys.MLDSA_SETS.values(), *keys.MLKEM_SETS.values()):
        if wanted == p.variant:
            return p.algorithm
    return None


POST_QUANTUM_PREFIXES = ("mldsa", "mlkem", "hashmldsa")


def unknown_post_quantum(key: str) -> bool:
    """True for a key named like a post-quantum parameter set that is none of them (``ML-DSA-99``): an error
    to name as such, not a classical key's variant to look up in the 1.83 command's formula."""
    wanted = key.strip().lower().replace("-", "").replace("_", "")
    return wanted.startswith(POST_QUANTUM_PREFIXES) and parameter_set(key) is None


@dataclass(frozen=True)
class Estimate:
    command: str
    algorithm: str
    operation: str
    in_bytes: int
    out_bytes: int
    breakdown: dict[str, float]

    @property
    def ms(self) -> float:
        return sum(self.breakdown.values())


def estimate(profile, command: str, algorithm: str, in_bytes: int | None = None,
             out_bytes: int | None = None) -> Estimate:
    """``command`` with a key of ``algorithm`` on ``profile``: what serve's handler charges at the model's
    means (the central estimate; serve draws around it), on the standard frame unless sizes are given."""
    from trustlab.devices.tpm2.pqc import pricing
    from trustlab.devices.tpm2.pqc_model import frames

    operation = OPERATIONS.get(command)
    if operation is None or algorithm not in parameter_sets(command):
        sets = ", ".join(parameter_sets(command)) or "no post-quantum key"
        raise TrustlabError(f"{command} takes {sets}, not {algorithm}")
    if operation in ("keygen", "load"):
        create, load = frames.keygen_frames(algorithm)
        frame = create if operation == "keygen" else load
    else:
        frame = frames.use_frames(algorithm, operation)
    n_in = frame.in_bytes if in_bytes is None else in_bytes
    n_out = frame.out_bytes if out_bytes is None else out_bytes
    breakdown = pricing.operation_ms(profile, None, algorithm, operation, in_bytes=n_in, out_bytes=n_out)
    return Estimate(command, algorithm, operation, n_in, n_out, breakdown)
