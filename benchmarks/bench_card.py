"""Smart-card AE simulation: how much faster than the chip it runs, and how robust the APDU layer is.

Figures (all measured in this run):

* ``ae_<platform>_<mode>_modelled_ms``  modelled processing per 192-byte message (key set-up included)
* ``ae_<platform>_<mode>_wall_ms``      wall time per message of the full simulation (APDUs, chaining,
                                       real ciphers, counting and charging)
* ``ae_<platform>_<mode>_speedup``      modelled / wall: >1 means the simulation outruns the chip
* ``primitive_ops_per_s``              counted+charged block operations per second on this host
* ``apdu_fuzz_per_s``                  random byte strings answered with a status word per second
                                       (``apdu_fuzz_exceptions`` must be 0)
"""

from __future__ import annotations

import random
import time

from trustlab.apps.ae.analysis import PAPER_MODES, predict
from trustlab.devices.card import Card, CardCrypto, ResponseAPDU
from trustlab.devices.card.platforms import FLAGSHIP, platform
from trustlab.timing.clock import Clock


def run(quick: bool = False) -> dict:
    reps = 5 if quick else 40
    figures: dict = {}
    for name in FLAGSHIP:
        plat = platform(name)
        for mode in PAPER_MODES:
            started = time.perf_counter()
            rows = []
            for _ in range(reps):
                rows += predict(plat, (mode,), (192,))
            wall_ms = (time.perf_counter() - started) * 1000 / reps
            modelled = rows[0].predicted_ms
            key = f"ae_{name}_{mode}"
            figures[f"{key}_modelled_ms"] = modelled
            figures[f"{key}_wall_ms"] = wall_ms
            figures[f"{key}_speedup"] = modelled / wall_ms

    plat = platform("sle78-aes")
    crypto = CardCrypto(Clock(plat.profile()), plat.cipher)
    kc = crypto.load_key(bytes(16))
    n = 2000 if quick else 20000
    block = bytes(16)
    started = time.perf_counter()
    for _ in range(n // 2):
        block = crypto.xor(crypto.encrypt(kc, block), block)
    figures["primitive_ops_per_s"] = n / (time.perf_counter() - started)

    card = Card(Clock(plat.profile()), max_message=512)
    card.register(0x10, lambda c, a: a.data[::-1])
    card.register(0x20, lambda c, a: 1 // 0)
    rng = random.Random(7)
    n = 2000 if quick else 30000
    exceptions = 0
    started = time.perf_counter()
    for _ in range(n):
        raw = bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 300)))
        if rng.random() < 0.5 and len(raw) >= 4:
            raw = bytes([rng.choice([0x00, 0x10, 0x80, 0xFF]), rng.choice([0x10, 0x20, 0xC0])]) + raw[2:]
        try:
            ResponseAPDU.parse(card.transmit(raw))
        except Exception:  # the property under test: there must be none
            exceptions += 1
    figures["apdu_fuzz_per_s"] = n / (time.perf_counter() - started)
    figures["apdu_fuzz_exceptions"] = exceptions
    return figures
