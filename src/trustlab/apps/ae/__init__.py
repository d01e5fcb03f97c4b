"""Authenticated encryption on smart-card primitives (Mayes 2017): OCB2, OCB3, CCM, ETM, GCM.

Each mode is written only in the counted, charged primitives of
``trustlab.devices.card.primitives``; ``make_mode`` builds one by name,
``workload`` counts operations (Table I), ``predict`` prices them on a
platform, ``tiga`` computes the Technology Independent Gain Assessment.
"""

from __future__ import annotations

from trustlab.apps.ae.ccm import CCM
from trustlab.apps.ae.common import AEMode, InsecureModeWarning, InvalidTag
from trustlab.apps.ae.etm import ETM
from trustlab.apps.ae.gcm import GCM
from trustlab.apps.ae.ocb2 import OCB2
from trustlab.apps.ae.ocb3 import OCB3
from trustlab.devices.card.primitives import CardCrypto
from trustlab.errors import TrustlabError

MODES: dict[str, type[AEMode]] = {"ocb2": OCB2, "ocb3": OCB3, "ccm": CCM, "etm": ETM, "gcm": GCM,
                                   "etm-iso": ETM}
"""``etm`` is the paper's Encrypt-then-MAC (MAC over C only: §III, Figure 3, Table I's 2m); ``etm-iso``
ISO/IEC 19772 mechanism 5 (MAC over S || C, 2m + 1), the standard reading shown beside it."""
STANDARD_READING = {"etm": "etm-iso"}
"""Paper construction -> the standard's, where they differ (the reports show both)."""

# Fixed demonstration keys and nonces (costs do not depend on their values,
# except OCB3's Offset_0 shift, whose count depends on the nonce's last 6 bits).
KEY = bytes.fromhex("000102030405060708090a0b0c0d0e0f")
MAC_KEY = bytes.fromhex("f0e1d2c3b4a5968778695a4b3c2d1e0f")
NONCES = {"ocb2": bytes(range(16)), "ocb3": bytes.fromhex("bbaa9988776655443322110b"),
          "ccm": bytes.fromhex("00000003020100a0a1a2a3a4a5"), "etm": bytes(range(16)),
          "etm-iso": bytes(range(16)),
          "gcm": bytes.fromhex("cafebabefacedbaddecaf888")}


def make_mode(name: str, crypto: CardCrypto, key: bytes = KEY, mac_key: bytes = MAC_KEY) -> AEMode:
    """A mode by name on the given primitives (ETM gets its separate MAC key)."""
    if name not in MODES:
        raise TrustlabError(f"unknown AE mode {name!r} (known: {', '.join(MODES)})")
    if name in ("etm", "etm-iso"):
        return ETM(crypto, key, mac_key=mac_key, mac_nonce=name == "etm-iso")
    return MODES[name](crypto, key)


__all__ = ["MODES", "STANDARD_READING", "make_mode", "AEMode", "InvalidTag", "InsecureModeWarning", "OCB2", "OCB3", "CCM",
           "ETM", "GCM", "KEY", "MAC_KEY", "NONCES"]
