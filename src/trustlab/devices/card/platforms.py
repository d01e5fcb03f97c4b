"""The paper's platforms by name: a card profile plus the block cipher its AE modes use.

Public API (stable)::

    PLATFORMS                      name -> Platform
    platform(name) -> Platform     also "PROFILE:CIPHER" for any card-family profile or .toml path
    Platform.profile()             the loaded Profile
    Platform.crypto(clock=None, dest="ram")    CardCrypto for this platform

``FLAGSHIP`` are the paper's three chips: MULTOS on SLE78 (AES), native
S3CC9E8 (TDES(M1)||M2 after optimisation) and native SLE78 (AES).
"""

from __future__ import annotations

from dataclasses import dataclass

from trustlab.devices.card.primitives import CIPHERS, CardCrypto
from trustlab.errors import TrustlabError
from trustlab.timing import registry
from trustlab.timing.clock import Clock
from trustlab.timing.profile import Profile


@dataclass(frozen=True)
class Platform:
    name: str
    profile_name: str
    cipher: str
    mask: bool = False
    description: str = ""

    def profile(self) -> Profile:
        return registry.load(self.profile_name)

    def crypto(self, clock: Clock | None = None, dest: str = "ram") -> CardCrypto:
        return CardCrypto(clock, self.cipher, mask=self.mask, dest=dest)


PLATFORMS: dict[str, Platform] = {p.name: p for p in [
    Platform("multos-sle78", "multos-sle78", "aes128", description="MULTOS ML3 on SLE78, AES-128 (Table II)"),
    Platform("s3cc9e8", "s3cc9e8-native", "tdes(m1)||m2",
             description="native S3CC9E8 after optimisation, TDES(M1)||M2 (Table VI)"),
    Platform("s3cc9e8-original", "s3cc9e8-native-original", "tdes(m1)||tdes(m2)", mask=True,
             description="native S3CC9E8 before optimisation, TDES(M1)||TDES(M2) + mask (Table V)"),
    Platform("s3cc9e8-stage1", "s3cc9e8-native-stage1", "tdes(m1)||tdes(m2)", mask=True,
             description="native S3CC9E8 first optimisation, TDES(M1)||TDES(M2) + mask (Table V)"),
    Platform("sle78-aes", "sle78-native", "aes128", description="native SLE78, AES-128 (Table VIII)"),
    Platform("sle78-tdes", "sle78-native", "tdes(m1)||m2", description="native SLE78, TDES(M1)||M2 (Table VIII)"),
]}
FLAGSHIP = ("multos-sle78", "s3cc9e8", "sle78-aes")


def platform(name: str) -> Platform:
    """A named platform, or ``PROFILE:CIPHER`` (e.g. ``my-chip.toml:aes128``)."""
    if name in PLATFORMS:
        return PLATFORMS[name]
    if ":" in name:
        prof, cipher = name.rsplit(":", 1)
        if cipher not in CIPHERS:
            raise TrustlabError(f"platform {name!r}: unknown cipher {cipher!r} (known: {', '.join(CIPHERS)})")
        registry.load(prof)  # fail now, naming the profile
        return Platform(name, prof, cipher, description=f"profile {prof} with {cipher}")
    raise TrustlabError(f"unknown platform {name!r} (known: {', '.join(PLATFORMS)}; or PROFILE:CIPHER)")
