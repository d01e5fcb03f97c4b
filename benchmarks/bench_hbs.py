"""HBS on the simulated Java Card: simulation speed, analysis cost, and a tear campaign.

Figures (all measured in this run):

* ``host_sha256_calls_per_s``      metered SHA-256 calls/s of the scheme code on this machine
* ``lifetime_*``                   a whole small key signed on the card: modelled card time vs
                                   wall time (how much faster than the chip the simulation runs),
                                   all signatures verified off-card
* ``analysis_h20_d{4,5}_wall_s``   wall time of the h=20 lifetime analysis (count-by-running)
* ``tear_*``                       random power cuts during signing and preparation over many
                                   key lifetimes: index reuses found (must be 0), tears injected,
                                   indices left unsigned (lost to tears or loop cap), signatures verified
"""

from __future__ import annotations

import random
import time

from trustlab.apps.hbs.costs import CardTear
from trustlab.apps.hbs.hashes import Hasher
from trustlab.apps.hbs.host import CardSigner, personalize
from trustlab.apps.hbs.keys import SecretSeeds
from trustlab.apps.hbs.model import analyse
from trustlab.apps.hbs.params import XMSSParams
from trustlab.apps.hbs.verify import Verifier
from trustlab.timing import registry
from trustlab.timing.clock import Clock


def _hash_rate(n: int) -> float:
    hs = Hasher()
    x = bytes(32)
    t = time.perf_counter()
    for _ in range(n):
        x = hs.prf(x, x + x)
    return n / (time.perf_counter() - t)


def _lifetime(p: XMSSParams, prof) -> dict:
    clock = Clock(prof)
    t = time.perf_counter()
    card, pk = personalize(p, SecretSeeds.from_int(11), clock)
    signer = CardSigner(card)
    v = Verifier(p.h, p.d, p.w)
    ok = 0
    for i in range(p.signatures):
        msg = b"doc %d" % i
        ok += v.verify(pk.to_bytes(), msg, signer.sign(msg))
        signer.prepare()
    wall = time.perf_counter() - t
    return {"params": p.label(), "signatures": p.signatures, "verified": ok,
            "modelled_card_s": clock.now_ms / 1e3, "wall_s": wall, "speedup": clock.now_ms / 1e3 / wall}


def _tears(p: XMSSParams, keys: int, rate: float, seed: int) -> dict:
    rng = random.Random(seed)
    reuses = tears = lost = verified = 0
    for k in range(keys):
        card, pk = personalize(p, SecretSeeds.from_int(100 + k))
        signer, v = CardSigner(card), Verifier(p.h, p.d, p.w)
        seen: set[int] = set()
        for _ in range(4 * p.signatures):
            if rng.random() < rate:
                card.meter.tear_after = rng.randrange(0, 3000)
            try:
                signer.prepare()
                if signer.index() >= p.signatures:
                    break
                sig = signer.sign(b"m")
                idx = int.from_bytes(sig[:p.idx_bytes], "big")
                reuses += idx in seen
                seen.add(idx)
                verified += v.verify(pk.to_bytes(), b"m", sig)
            except CardTear:
                tears += 1
            card.meter.tear_after = None
        lost += p.signatures - len(seen)
    return {"keys": keys, "reuses": reuses, "tears": tears, "indices_not_signed": lost, "verified": verified}


def run(quick: bool) -> dict:
    prof = registry.load("jcop-2018")
    out: dict = {"host_sha256_calls_per_s": _hash_rate(20_000 if quick else 200_000)}
    life = _lifetime(XMSSParams(4, 2, 16) if quick else XMSSParams(6, 3, 16), prof)
    out.update({f"lifetime_{k}": v for k, v in life.items()})
    for d in (4, 5):
        t = time.perf_counter()
        a = analyse(XMSSParams(20, d), prof)
        out[f"analysis_h20_d{d}_wall_s"] = time.perf_counter() - t
        out[f"analysis_h20_d{d}_sign_avg_s"] = a.sign_ms.avg / 1e3
    tears = _tears(XMSSParams(4, 2, 4), keys=3 if quick else 30, rate=0.3, seed=7)
    out.update({f"tear_{k}": v for k, v in tears.items()})
    return out
