"""Reference source: van der Laan et al. 2018, XMSS^MT on a Java Card (excerpt).

The 33 s WOTS+ signature is the anchor of jcop-2018's hash_call
(calibration); the "~1 min" WOTS+ key generation was not used to build the
profile (independent, though only one significant digit).
"""

from __future__ import annotations

from trustlab.timing import registry
from trustlab.validation.core import CALIBRATION, INDEPENDENT, Check, Inconsistency, device_class

PAPER = "van der Laan et al. 2018, Java Card hash-based signatures excerpt, 'Memory Usage and Benchmarks'"
PROFILE = "jcop-2018"
PROFILES = (PROFILE,)


def checks() -> list[Check]:
    from trustlab.apps.hbs.costs import COMPONENTS, price
    from trustlab.apps.hbs.model import wots_keygen_counts, wots_signature_counts
    from trustlab.apps.hbs.params import XMSSParams

    prof = registry.load(PROFILE)
    means = {c: prof.mean(c) for c in COMPONENTS}
    p = XMSSParams(20, 4, 16)
    cls = device_class(PROFILE, prof.family)
    return [
        Check(PROFILE, cls, "WOTS+ signature (avg)", price(wots_signature_counts(p), means) / 1e3, 33.0, "s",
              CALIBRATION, f"{PAPER}: 'approximately 33 s'", "anchor of hash_call"),
        Check(PROFILE, cls, "WOTS+ key generation (PREPARE, one leaf)", price(wots_keygen_counts(p), means) / 1e3,
              60.0, "s", INDEPENDENT, f"{PAPER}: 'approximately a minute'",
              "one significant digit: a 'minute' covers roughly 45-75 s"),
    ]


def inconsistencies() -> list[Inconsistency]:
    return []
