"""FIPS 203 (ML-KEM) and FIPS 204 (ML-DSA) parameter sets and the sizes they imply.

Sizes are computed from the parameters with the standards' formulas (FIPS 203
Sec. 8 Table 3; FIPS 204 Sec. 4 Table 2), not typed in; a test compares them
with pyca/cryptography's key and signature lengths.
"""

from __future__ import annotations

from dataclasses import dataclass

from trustlab.errors import TrustlabError


@dataclass(frozen=True)
class MLKEMParams:
    name: str
    k: int
    eta1: int
    eta2: int
    du: int
    dv: int

    @property
    def pk_bytes(self) -> int:
        return 384 * self.k + 32

    @property
    def sk_bytes(self) -> int:
        return 768 * self.k + 96

    @property
    def ct_bytes(self) -> int:
        return 32 * (self.du * self.k + self.dv)


@dataclass(frozen=True)
class MLDSAParams:
    name: str
    k: int
    l: int
    eta: int
    tau: int
    lam: int  # collision strength lambda (bits)
    gamma1: int
    gamma2: int
    omega: int
    d: int = 13
    q: int = 8380417

    @property
    def beta(self) -> int:
        return self.tau * self.eta

    @property
    def pk_bytes(self) -> int:
        return 32 + 32 * self.k * (23 - self.d)

    @property
    def sk_bytes(self) -> int:
        eta_bits = (2 * self.eta).bit_length()
        return 128 + 32 * ((self.k + self.l) * eta_bits + self.d * self.k)

    @property
    def sig_bytes(self) -> int:
        z_bits = 1 + (self.gamma1 - 1).bit_length()
        return self.lam // 4 + self.l * 32 * z_bits + self.omega + self.k


MLKEM = {
    "ML-KEM-512": MLKEMParams("ML-KEM-512", 2, 3, 2, 10, 4),
    "ML-KEM-768": MLKEMParams("ML-KEM-768", 3, 2, 2, 10, 4),
    "ML-KEM-1024": MLKEMParams("ML-KEM-1024", 4, 2, 2, 11, 5),
}
MLDSA = {
    "ML-DSA-44": MLDSAParams("ML-DSA-44", 4, 4, 2, 39, 128, 1 << 17, (8380417 - 1) // 88, 80),
    "ML-DSA-65": MLDSAParams("ML-DSA-65", 6, 5, 4, 49, 192, 1 << 19, (8380417 - 1) // 32, 55),
    "ML-DSA-87": MLDSAParams("ML-DSA-87", 8, 7, 2, 60, 256, 1 << 19, (8380417 - 1) // 32, 75),
}

ALGORITHMS = ("ML-DSA-44", "ML-DSA-65", "ML-DSA-87", "ML-KEM-768", "ML-KEM-1024")
"""The algorithms TPM 2.0 Library 1.85 profiles (the pricing API's domain)."""
KEM_OPERATIONS = ("keygen", "encapsulate", "decapsulate")
DSA_OPERATIONS = ("keygen", "sign", "verify")


def params(algorithm: str) -> MLKEMParams | MLDSAParams:
    """The parameter set named ``algorithm`` ("ML-KEM-768", "ML-DSA-65", ...)."""
    found = MLKEM.get(algorithm) or MLDSA.get(algorithm)
    if found is None:
        raise TrustlabError(f"unknown post-quantum algorithm {algorithm!r} "
                            f"(known: {', '.join(list(MLKEM) + list(MLDSA))})")
    return found


def check_operation(algorithm: str, operation: str) -> MLKEMParams | MLDSAParams:
    """The parameter set, after checking that ``operation`` exists for ``algorithm``."""
    p = params(algorithm)
    ops = KEM_OPERATIONS if isinstance(p, MLKEMParams) else DSA_OPERATIONS
    if operation not in ops:
        raise TrustlabError(f"{algorithm} has no operation {operation!r} (it has: {', '.join(ops)})")
    return p


def family(algorithm: str) -> str:
    """'ML-DSA' or 'ML-KEM': which FIPS standard a parameter set belongs to."""
    return "ML-DSA" if algorithm in MLDSA else "ML-KEM"
