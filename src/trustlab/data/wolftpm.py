"""wolfTPM benchmark figures -> one TPM 2.0 profile per chip.

The wolfTPM README publishes, per chip, the average time of whole operations
measured by ``examples/bench/bench.c`` on a Raspberry Pi. Each operation is
one or a few TPM commands, so the profile's components are recovered by
subtracting the per-command overhead:

- ``ohc``: the smaller of two upper bounds: a ``TPM2_GetRandom`` of 32 bytes
  (wolfTPM fetches randomness in 32-byte requests, ``MAX_RNG_REQ_SIZE``),
  ``ms_for(32, rng_kbps)``, and a third of a 1-KB hash sequence (3 commands);
- ``sha256_byte``: one KB hashed with HashSequenceStart + SequenceUpdate +
  SequenceComplete, ``(ms_for(1024, sha256_kbps) - 3 ohc) / 1024``;

The bench's "KB" is 1024 bytes (``bench.c``: ``gUseBase2 = 1``, blocks divided
by 1024 before the per-second rate is printed), so ``n`` bytes at ``r`` KB/s
take ``n / 1024 / r`` seconds: 1 KB at 42.47 KB/s is 23.55 ms, which is what
the SEALSQ run's own line gives (43 sequences in 1.012 s).
- RSA-2048 public/private = RSA_Encrypt/RSA_Decrypt (NULL scheme) - ohc;
- ECDSA sign/verify, ECDH (ECDH_KeyGen) - ohc;
- key generation = Create + Load - 2 ohc, as a distribution (see
  :func:`keygen_component`): only the mean is published.

``ohir``/``ohor`` are 0: these figures cannot separate a per-byte cost from
the per-command one (the bus time is folded into ``ohc`` and the operations).
"""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path

from trustlab.errors import ProfileError
from trustlab.timing.profile import Component, Profile, Provenance

SOURCE = "wolfSSL/wolfTPM README, TPM2 Benchmarks (data/wolftpm-benchmarks.csv)"
KEYGEN_SHAPE = 2.0
"""Gamma shape of key-generation time: an RSA key needs two primes, each found
after a geometrically distributed number of candidates (≈ exponential time),
so the total is close to a sum of two exponentials, Gamma(2)."""


def keygen_samples(mean: float, lo: float | None = None, hi: float | None = None, n: int = 64,
                   shape: float = KEYGEN_SHAPE) -> tuple[float, ...]:
    """``n`` quantiles of a Gamma(shape) with the given mean, kept inside [lo, hi].

    Quantiles (not random draws) make the profile reproducible; after clipping
    to the observed range the samples are rescaled so their mean is ``mean``.
    """
    from scipy.stats import gamma

    if mean <= 0:
        return ()
    qs = [(i + 0.5) / n for i in range(n)]
    xs = [float(x) for x in gamma.ppf(qs, shape, scale=mean / shape)]
    for _ in range(20):
        if lo is not None or hi is not None:
            xs = [min(max(x, lo if lo is not None else x), hi if hi is not None else x) for x in xs]
        m = sum(xs) / n
        if m <= 0 or abs(m - mean) < 1e-9 * mean:
            break
        xs = [x * mean / m for x in xs]
    return tuple(round(x, 4) for x in xs)


ECC_KEYGEN_REL_SD = 0.03
"""Relative spread of P-256 key generation when only a mean is known: the median
of (max - min) / 6 / avg over the ten JCAlgTest TPMs' ECC 0x0003 TPM2_Create
entries (1.0 % .. 7.3 %). ECC key generation draws one scalar and does one
point multiplication, so it varies little - unlike RSA's prime search."""


def keygen_component(name: str, mean: float, prov: Provenance, lo: float | None = None,
                     hi: float | None = None) -> Component:
    """Key generation as a distribution: Gamma(2) samples for RSA, a normal spread for ECC."""
    if name.startswith("ecc"):
        if lo is not None and hi is not None and hi > lo:
            sd, how = (hi - lo) / 6.0, f"normal, sd = observed range [{lo:.2f}, {hi:.2f}] ms / 6"
        else:
            sd, how = mean * ECC_KEYGEN_REL_SD, f"normal, sd = {ECC_KEYGEN_REL_SD:.0%} of the mean (the median " \
                "relative spread of JCAlgTest's P-256 TPM2_Create)"
        note = (prov.note + "; " if prov.note else "") + "distribution: " + how
        return Component(name, round(mean, 4), "call", sd=round(sd, 4),
                         provenance=Provenance(prov.source, prov.table, note))
    samples = keygen_samples(mean, lo, hi)
    note = (prov.note + "; " if prov.note else "") + (
        "distribution: 64 quantiles of Gamma(2) scaled to the mean"
        + (f", clipped to the observed range [{lo:.1f}, {hi:.1f}] ms" if lo is not None and hi is not None else "")
    )
    mean_of = sum(samples) / len(samples) if samples else mean
    return Component(name, round(mean_of, 4), "call", samples=samples,
                     provenance=Provenance(prov.source, prov.table, note))


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-")


def profile_name(chip: str) -> str:
    """``Infineon SLB9670`` -> ``infineon-slb9670-wolftpm``."""
    return f"{_slug(chip)}-wolftpm"


def _num(row: dict, key: str, where: str) -> float | None:
    raw = (row.get(key) or "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise ProfileError(f"{where}: column {key!r}: expected a number, got {raw!r}") from None
    if not math.isfinite(value) or value <= 0:
        return None
    return value


def parse_wolftpm_csv(path: Path) -> list[Profile]:
    """One family-``tpm2`` profile per chip row of the wolfTPM benchmark CSV."""
    from trustlab import limits

    lines = limits.read_text(path, "wolfTPM benchmark CSV", error=ProfileError).splitlines()
    notes = [ln.lstrip("# ").strip() for ln in lines if ln.startswith("#")]
    body = [(i + 1, ln) for i, ln in enumerate(lines) if ln.strip() and not ln.startswith("#")]
    if not body:
        raise ProfileError(f"{path}: no header row")
    header_line = body[0][1]
    reader = csv.DictReader([header_line] + [ln for _, ln in body[1:]])
    need = {"chip", "rng_kbps", "rsa_pub_ms"}
    if not need <= set(reader.fieldnames or []):
        raise ProfileError(f"{path}: expected columns {', '.join(sorted(need))} (found {header_line!r})")
    single_runs = {m.group(1).strip() for n in notes
                   for m in [re.search(r"the (.+?) rsa_keygen figure is a single run", n)] if m}
    profiles = []
    for (lineno, _), row in zip(body[1:], reader):
        profiles.append(_profile(row, f"{path.name}:{lineno}", single_runs))
    return profiles


KIB = 1024  # the bench's "KB" (bench.c gUseBase2)


def ms_for(nbytes: float, kib_per_s: float) -> float:
    """Milliseconds to move ``nbytes`` at the bench's printed rate (KB = 1024 bytes)."""
    return nbytes / KIB / kib_per_s * 1000.0


def _profile(row: dict, where: str, single_runs: set[str]) -> Profile:
    chip = row["chip"].strip()
    bus = (row.get("bus") or "").strip() or "bus not stated"

    def prov(column: str, how: str) -> Provenance:
        return Provenance(SOURCE, f"{where}, column {column}", how)

    rng = _num(row, "rng_kbps", where)
    if rng is None:
        raise ProfileError(f"{where}: {chip}: no rng_kbps, cannot derive the command overhead")
    sha = _num(row, "sha256_kbps", where)
    # Two upper bounds on the per-command overhead: a 32-byte GetRandom (wolfTPM's
    # MAX_RNG_REQ_SIZE) and a third of a 1-KB hash sequence (three commands).
    # A chip with a slow RNG (ATTPM20) makes the first loose, so take the smaller.
    bounds = {"rng_kbps": ms_for(32, rng)}
    if sha is not None:
        bounds["sha256_kbps"] = ms_for(KIB, sha) / 3.0
    bound_col = min(bounds, key=bounds.get)
    ohc = bounds[bound_col]
    how = ("one 32-byte TPM2_GetRandom: 32 B / 1024 / rng_kbps s" if bound_col == "rng_kbps"
           else "a third of one 1-KB hash sequence (3 commands): 1 / sha256_kbps s / 3")
    comps: dict[str, Component] = {
        "ohc": Component("ohc", round(ohc, 5), "call", provenance=prov(
            bound_col, f"{how} (the smaller of the two upper bounds "
            + ", ".join(f"{k}: {v:.3f} ms" for k, v in bounds.items()) + ")")),
        "ohir": Component("ohir", 0.0, "byte", provenance=prov(
            "-", "not separable from whole-operation figures; folded into ohc")),
        "ohor": Component("ohor", 0.0, "byte", provenance=prov(
            "-", "not separable from whole-operation figures; folded into ohc")),
    }
    if sha is not None:
        per_kb = ms_for(KIB, sha)
        comps["sha256_byte"] = Component("sha256_byte", round(max(per_kb - 3 * ohc, 0.0) / 1024.0, 7), "byte",
                                         provenance=prov("sha256_kbps", f"(1 KB at {sha} KB/s = {per_kb:.3f} ms"
                                                         " - 3 commands x ohc) / 1024, floored at 0"))
    for column, comp, what in (("rsa_pub_ms", "rsa2048_enc", "TPM2_RSA_Encrypt (NULL scheme)"),
                               ("rsa_priv_ms", "rsa2048_dec", "TPM2_RSA_Decrypt (NULL scheme)"),
                               ("ecdsa_sign_ms", "ecc256_sign", "TPM2_Sign (ECDSA P-256)"),
                               ("ecdsa_verify_ms", "ecc256_verify", "TPM2_VerifySignature (ECDSA P-256)"),
                               ("ecdh_ms", "ecc256_ecdh", "TPM2_ECDH_KeyGen (P-256)")):
        ms = _num(row, column, where)
        if ms is not None:
            comps[comp] = Component(comp, round(max(ms - ohc, 0.0), 4), "call",
                                    provenance=prov(column, f"{what}: {ms} ms - ohc"))
    if "rsa2048_dec" in comps:
        # wolfTPM does not time RSA signing; it is the same private-key exponentiation as
        # decryption (padding aside) - JCAlgTest's chips show sign and decrypt within a few %.
        dec = comps["rsa2048_dec"]
        comps["rsa2048_sign"] = Component("rsa2048_sign", dec.mean, "call", provenance=Provenance(
            dec.provenance.source, dec.provenance.table,
            "not measured by wolfTPM: taken equal to rsa2048_dec (the same RSA private-key operation)"))
    for column, comp, what in (("rsa_keygen_ms", "rsa2048_keygen", "RSA-2048"),
                               ("ecc_keygen_ms", "ecc256_keygen", "ECC P-256")):
        ms = _num(row, column, where)
        if ms is not None:
            note = f"{what} TPM2_Create + TPM2_Load: {ms} ms - 2 ohc"
            if comp == "rsa2048_keygen" and any(s in chip for s in single_runs):
                note += "; the source marks this figure as a single run (n=1)"
            comps[comp] = keygen_component(comp, max(ms - 2 * ohc, 0.0), prov(column, note))
    return Profile(
        name=profile_name(chip), components=comps, family="tpm2", version="1",
        description=f"{chip} ({bus}), wolfTPM benchmark figures",
        provenance=Provenance(SOURCE, where, "host: Raspberry Pi; whole-operation averages, user space; "
                              "components derived by subtracting the GetRandom overhead"),
    )


# ---- chip families covered by both sources ------------------------------------

CHIP_FAMILIES = {
    # family: (regex over wolfTPM profile names, regex over JCAlgTest profile names)
    "Nuvoton NPCT75x": (r"^nuvoton-npct75\d", r"^nuvoton-npct75x"),
    "STMicroelectronics ST33": (r"^st-st33", r"^stm-st33"),
}


def chip_family_pairs(names: list[str] | None = None) -> list[tuple[str, list[str], list[str]]]:
    """Chip families that both wolfTPM and JCAlgTest cover: (family, wolfTPM names, JCAlgTest names).

    The two sources measure differently (bare-metal SPI on a Raspberry Pi vs.
    Windows TBS), so a report shows both side by side rather than merging them.
    """
    if names is None:
        from trustlab.timing import registry

        names = registry.names("tpm2")
    pairs = []
    for family, (wolf_re, jc_re) in CHIP_FAMILIES.items():
        wolf = sorted(n for n in names if n.endswith("-wolftpm") and re.search(wolf_re, n))
        jc = sorted(n for n in names if n.endswith("-jcalgtest") and re.search(jc_re, n))
        if wolf and jc:
            pairs.append((family, wolf, jc))
    return pairs
