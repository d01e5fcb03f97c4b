"""The paper's analyses, computed: workload (Table I), predicted times, transmission, TIGA.

* :func:`workload` runs a mode on counting-only primitives and returns what
  it did -- the Table I figures come from here, never from the paper.
* :func:`predict` installs the AE applet on an APDU-level card whose clock
  runs on a platform profile, sends each message as APDUs, and splits the
  clock's ledger into processing (the primitives) and link time.
* :func:`analytic_ms` prices an op count directly; with a spread-free profile
  it must equal the simulation exactly (a test holds it to that).
* :func:`tiga` is the Technology Independent Gain Assessment of §V.F:
  block XOR time as a percentage of block encryption time.

Paper conventions kept: payloads of modes other than OCB are zero-padded to
whole blocks before encryption (§II); transmission in ``paper`` link mode is
the message bytes at 8 bits each (Table XII); a case is processing-limited
when processing takes longer than transmission, else communication-limited
(§VII). Per-message cost includes the key-dependent set-up (``setup_ms``):
EMV derives fresh session keys per transaction, so a card pays it each time.
"""

from __future__ import annotations

import math
import warnings
from collections import Counter
from dataclasses import asdict, dataclass, field

from trustlab.apps.ae import MODES, InsecureModeWarning, make_mode
from trustlab.apps.ae.applet import CLA, INS_ENCRYPT, MODE_ORDER, AEApplet
from trustlab.apps.ae.common import BLOCK
from trustlab.devices.card.card import Card
from trustlab.devices.card.link import ContactLink, ContactlessLink
from trustlab.devices.card.platforms import Platform
from trustlab.devices.card.primitives import CardCrypto, cipher_component, key_load_component
from trustlab.errors import TrustlabError
from trustlab.timing.clock import Clock
from trustlab.timing.profile import Profile

PAPER_SIZES = (8, 16, 20, 32, 40, 64, 128, 192)
PAPER_MODES = ("ocb2", "ocb3", "ccm", "etm", "gcm")
OCB_MODES = ("ocb2", "ocb3")
CARD_BUFFER = 1024
"""The AE card's message buffer (``Card(max_message=...)``): the data of one chained ENCRYPT command,
i.e. the (padded) message, must fit in it; beyond it the card answers 6A84 (not enough memory). The
same on every platform and link: the platforms differ in their primitives, not in the applet's buffer."""
CONTACT_RATES = (13441, 78125, 312500)
CONTACTLESS_RATES = (106000, 212000, 424000, 848000)
OP_COMPONENT = {"E": None, "D": None, "load": None, "xor": "block_xor", "copy": "block_copy",
                "shift": "block_shift", "vshift": "block_shift_var", "gfmul": "gf_multiply", "inc": "counter_inc"}
OPTIONAL = ("counter_inc", "block_shift_var")  # uncharged (or, for the variable shift, the fixed one) if absent


def links(mode: str = "paper", protocol: str = "T=1") -> dict[str, ContactLink | ContactlessLink]:
    """The interface rates of Table XII (plus 212 and 848 kbit/s), keyed by bit rate."""
    out: dict[str, ContactLink | ContactlessLink] = {}
    for F, D in ((372, 1), (512, 8), (512, 32)):
        link = ContactLink(5e6, F, D, protocol=protocol, mode=mode)
        out[str(round(link.bit_rate))] = link
    for r in CONTACTLESS_RATES:
        out[str(r)] = ContactlessLink(r, mode=mode)
    return out


def payload(mode: str, nbytes: int, pad: bool = True) -> bytes:
    """A deterministic test message; zero-padded to whole blocks for non-OCB modes (paper §II)."""
    if nbytes < 0:
        raise TrustlabError(f"message size must not be negative, got {nbytes}")
    data = bytes((i * 7 + 1) & 0xFF for i in range(nbytes))
    if pad and mode not in OCB_MODES and nbytes % BLOCK:
        data += bytes(BLOCK - nbytes % BLOCK)
    return data


def largest_message(modes: tuple[str, ...], pad: bool = True) -> int:
    """The largest message size whose payload (padded as :func:`payload` pads) fits the card's buffer
    in every one of ``modes``."""
    padded = pad and any(m not in OCB_MODES for m in modes)
    return CARD_BUFFER - (CARD_BUFFER % BLOCK if padded else 0)


def _quiet_mode(name: str, crypto: CardCrypto):  # type: ignore[no-untyped-def]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureModeWarning)
        return make_mode(name, crypto)


def workload(mode: str, nbytes: int, cipher: str = "aes128", pad: bool = True) -> dict[str, int]:
    """Operations one encryption of ``nbytes`` performs, counted by running the mode.

    Keys: ``E`` block encryptions per message, ``E_init`` key-dependent ones,
    ``gfmul``, ``xor``, ``copy``, ``shift``, ``inc`` (and ``*_init``), ``blocks``.
    """
    from trustlab.apps.ae import NONCES

    crypto = CardCrypto(None, cipher)
    ae = _quiet_mode(mode, crypto)
    crypto.start_message()
    ae.encrypt(NONCES[mode], payload(mode, nbytes, pad))
    ops = Counter(crypto.ops)
    out = {k: int(v) for k, v in sorted(ops.items())}
    for k in ("E", "E_init", "gfmul"):
        out.setdefault(k, 0)
    out["blocks"] = math.ceil(nbytes / BLOCK)
    return out


def analytic_ms(profile: Profile, cipher: str, ops: dict[str, int], mask: bool = False,
                dest: str = "ram") -> float:
    """Price an op count with a profile's means (all results to ``dest``)."""
    return sum(n * profile.mean(comp) for comp, n in charged_components(profile, cipher, ops, mask, dest).items())


def charged_components(profile: Profile, cipher: str, ops: dict[str, int], mask: bool = False,
                       dest: str = "ram") -> dict[str, int]:
    """How many times each profile component is charged for an op count (what drives the time)."""
    out: Counter[str] = Counter()
    enc = cipher_component(cipher, mask, dest=dest)
    for key, n in ops.items():
        op = key.removesuffix("_init")
        if op not in OP_COMPONENT:
            continue
        comp = enc if op in ("E", "D") else key_load_component(cipher) if op == "load" else OP_COMPONENT[op]
        if op == "vshift" and (dest == "nvm" or comp not in profile):
            comp = "block_shift"  # the profile has no variable-shift figure: the fixed routine's
        if dest == "nvm" and op in ("xor", "copy", "shift", "vshift"):
            comp += ".nvm"
        if comp not in profile and (op == "load" or comp in OPTIONAL):
            continue
        out[comp] += n
    return dict(out)


@dataclass
class Row:
    """One platform x mode x size prediction: exactly what ``--json`` prints per row."""

    platform: str
    mode: str
    bytes: int
    predicted_ms: float
    setup_ms: float
    message_ms: float
    ops: dict[str, int]
    tx_ms: dict[str, float]
    limited_by: dict[str, str]
    apdus: int = 1
    card_link_ms: float = 0.0
    components_ms: dict[str, float] = field(default_factory=dict)
    """Processing time per profile component (set-up included when charged per message): what drives it."""
    extra: dict[str, object] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        d = asdict(self)
        d.pop("extra")
        return d


def predict(plat: Platform, modes: tuple[str, ...] = PAPER_MODES, sizes: tuple[int, ...] = PAPER_SIZES, *,
            link_mode: str = "paper", protocol: str = "T=1", pad: bool = True,
            setup_per_message: bool = True, dest: str = "ram", profile: Profile | None = None) -> list[Row]:
    """Run every mode and size on the platform's card; one :class:`Row` each.

    ``setup_per_message=False`` treats the key-dependent set-up as done once
    per key (personalisation): its time and ops are left out of the rows.
    ``dest="nvm"`` writes every primitive's result to NVM instead of RAM.
    ``profile`` replaces the platform's own (another reading of its figures).
    """
    for m in modes:
        if m not in MODES:
            raise TrustlabError(f"unknown AE mode {m!r} (known: {', '.join(MODES)})")
    limit = largest_message(modes, pad)
    if any(n > limit for n in sizes):
        raise TrustlabError(f"message size {max(sizes)} B: the card's message buffer holds at most {limit} bytes")
    profile = (profile or plat.profile()).without_spread()
    rate_links = links(link_mode, protocol)
    rows = []
    for mode in modes:
        clock = Clock(profile)
        card = Card(clock, ContactLink(5e6, 512, 8, protocol=protocol, mode=link_mode), classes=(0x00, 0x80),
                    max_message=CARD_BUFFER)
        crypto = plat.crypto(clock, dest)
        AEApplet(card, crypto, (mode,))
        setup_ms = clock.now_ms if setup_per_message else 0.0
        setup_ops = Counter(crypto.ops) if setup_per_message else Counter()
        setup_by = Counter(dict(clock.by_component)) if setup_per_message else Counter()
        for n in sizes:
            clock.reset()
            crypto.reset_ops()
            data = payload(mode, n, pad)
            resp = card.send(CLA, INS_ENCRYPT, MODE_ORDER.index(mode), 0, data)
            if not resp.ok:
                raise TrustlabError(f"{plat.name} {mode} {n} B: card answered {resp.sw:04X}")
            link_ms = clock.by_component.get("link", 0.0)
            message_ms = clock.now_ms - link_ms
            ops = {k: int(v) for k, v in sorted((setup_ops + Counter(crypto.ops)).items())}
            for k in ("E", "E_init", "gfmul"):
                ops.setdefault(k, 0)
            tag_len = len(resp.data) - len(data)
            tx = {}
            for rate, link in rate_links.items():
                if link_mode == "paper":
                    tx[rate] = link.payload_ms(n)
                else:
                    tx[rate] = sum(link.exchange_ms(len(c.encode()), 0) for c in _chain(data)[:-1]) + \
                        link.exchange_ms(_chain(data)[-1], len(data) + tag_len)
            predicted = setup_ms + message_ms
            limited = {r: ("processing" if predicted > t else "communication") for r, t in tx.items()}
            by = setup_by + Counter({k: v for k, v in clock.by_component.items() if k != "link"})
            rows.append(Row(plat.name, mode, n, predicted, setup_ms, message_ms, ops, tx, limited,
                            apdus=len(_chain(data)), card_link_ms=link_ms,
                            components_ms={k: float(v) for k, v in sorted(by.items())}))
    return rows


def _chain(data: bytes):  # type: ignore[no-untyped-def]
    from trustlab.devices.card.apdu import chain

    return chain(CLA, INS_ENCRYPT, 0, 0, data)


@dataclass
class Tiga:
    platform: str
    cipher: str
    source: str
    xor_ms: float
    encrypt_ms: float
    tiga_pct: float
    components: tuple[str, str]


def tiga(plat: Platform, source: str = "scope") -> Tiga:
    """TIGA = block XOR time / block encryption time x 100 (§V.F), from benchmark or scope figures."""
    profile = plat.profile()
    enc = cipher_component(plat.cipher, plat.mask)
    if source == "scope":
        xor_c, enc_c = "scope.block_xor", "scope." + enc
    elif source == "benchmark":
        xor_c, enc_c = "block_xor", enc
    else:
        raise TrustlabError(f"TIGA source must be 'scope' or 'benchmark', got {source!r}")
    if xor_c not in profile or enc_c not in profile:
        raise TrustlabError(f"platform {plat.name}: profile {profile.name} has no {source} figures "
                            f"({xor_c}, {enc_c})")
    x, e = profile.mean(xor_c), profile.mean(enc_c)
    if source == "benchmark":  # a stand-alone benchmark call pays its key set-up too
        e = standalone_encrypt_ms(profile, plat.cipher, plat.mask)
    return Tiga(plat.name, plat.cipher, source, x, e, 100.0 * x / e, (xor_c, enc_c))


ALT_SPLIT = "alt.engine."


def engine_reading(profile: Profile, cipher: str, mask: bool = False) -> Profile | None:
    """The profile under its ``alt.engine.*`` per-call/per-block split, or None if it has none."""
    enc, load = cipher_component(cipher, mask), key_load_component(cipher)
    if ALT_SPLIT + enc not in profile:
        return None
    variant = enc.removeprefix("block_encrypt.")
    return profile.with_means({enc: profile.mean(ALT_SPLIT + enc),
                               load: profile.mean(f"{ALT_SPLIT}key_load.{variant}")})


def standalone_encrypt_ms(profile: Profile, cipher: str, mask: bool = False) -> float:
    """One stand-alone block encryption as a benchmark command runs it: key load (if split off) + block."""
    load = key_load_component(cipher)
    return profile.mean(cipher_component(cipher, mask)) + (profile.mean(load) if load in profile else 0.0)


def coprocessor_tiga_s3cc9e8(profile: Profile) -> dict[str, float]:
    """§V.D: the raw DES engine's TIGA from Table VI differences (the paper quotes 100% and 33%).

    One DES run ``td`` = (t(TDES(M1)||M2) - t(DES(M1)||M2)) / 2 and
    (t(TDES||TDES) - t(DES||DES)) / 4; the in-line dummy XOR = the ``+mask``
    increments. TIGA_DES = xor / td, TIGA_3DES = xor / (3 td).
    """
    m = profile.mean
    td = ((m("block_encrypt.tdes_m1_m2") - m("block_encrypt.des_m1_m2")) / 2
          + (m("block_encrypt.tdes_m1_tdes_m2") - m("block_encrypt.des_m1_des_m2")) / 4) / 2
    xor = ((m("block_encrypt.des_m1_des_m2+mask") - m("block_encrypt.des_m1_des_m2"))
           + (m("block_encrypt.tdes_m1_tdes_m2+mask") - m("block_encrypt.tdes_m1_tdes_m2"))) / 2
    return {"des_run_ms": td, "inline_xor_ms": xor, "tiga_des_pct": 100 * xor / td,
            "tiga_3des_pct": 100 * xor / (3 * td)}
