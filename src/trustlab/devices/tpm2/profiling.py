"""Profile a TPM 2.0 end to end: measure the suite, fit the formulas, keep the spreads.

This is the paper's procedure as one function: run the measurement suite,
fit the family-``tpm2`` formulas by bounded least squares, and turn the fit
into a profile whose every component says where it came from. Key
generation keeps its measured distribution (the per-sample times of the
Create command minus the fitted non-keygen part), since it is random.
"""

from __future__ import annotations

import platform
from datetime import datetime, timezone

from trustlab.devices.tpm2 import harness
from trustlab.timing import formulas
from trustlab.timing.fit import Measurement, fit
from trustlab.timing.profile import Component, Profile, Provenance

BYTE_COMPONENTS = ("ohir", "ohor", "sha256_byte")
NOISE_FLOOR_MS = 0.02
"""Smallest uncertainty credited to a row's centre (timer and scheduler resolution)."""


def profile_from_rows(rows: list[harness.Row], name: str, source: str, description: str = "") -> Profile:
    """Fit the suite's rows and build a family-``tpm2`` profile with provenance."""
    # Weighted by 1/variance: a random key generation row (sd of hundreds of ms)
    # must not drag the sub-ms components; each keygen component still has its
    # own rows, so it is fitted from them alone.
    measurements = [Measurement(label=f"{r.command}[{r.variant}]",
                                terms=dict(formulas.lookup("tpm2", r.command, r.variant).terms), ms=r.ms,
                                weight=1.0 / (r.sd ** 2 / max(r.n, 1) + NOISE_FLOOR_MS ** 2))
                    for r in rows]
    result = fit(measurements)
    comps: dict[str, Component] = {}
    for comp, value in result.params.items():
        se = result.stderr.get(comp, float("nan"))
        prov = Provenance(source, "trustlab measure suite, fitted by bounded least squares",
                          f"fitted; stderr {se:.3g} ms")
        unit = "byte" if comp in BYTE_COMPONENTS else "call"
        comps[comp] = Component(comp, round(float(value), 6), unit, provenance=prov)
    for r in rows:  # key generation: keep the measured spread
        if r.command not in ("TPM2_Create", "TPM2_CreatePrimary") or not r.samples:
            continue
        terms = formulas.lookup("tpm2", r.command, r.variant).terms
        keygen = [c for c in terms if c.endswith("_keygen")]
        if len(keygen) != 1 or keygen[0] not in comps:
            continue
        rest = sum(coeff * result.params[c] for c, coeff in terms.items() if c != keygen[0])
        samples = tuple(round(max(x - rest, 0.0), 4) for x in r.samples)
        if r.command == "TPM2_Create" or keygen[0] not in {c for c, comp in comps.items() if comp.samples}:
            mean = sum(samples) / len(samples)
            prov = Provenance(source, f"{r.command}[{r.variant}], {len(samples)} samples",
                              "distribution: per-sample time minus the fitted overhead terms")
            comps[keygen[0]] = Component(keygen[0], round(mean, 6), "call", samples=samples, provenance=prov)
    keygen_rows = {f"{r.command}[{r.variant}]" for r in rows
                   if any(c.endswith("_keygen") for c in formulas.lookup("tpm2", r.command, r.variant).terms)}
    worst = max((abs(fr.residual_ms) for fr in result.rows if fr.command not in keygen_rows), default=0.0)
    return Profile(name=name, components=comps, family="tpm2", version="1", description=description,
                   provenance=Provenance(source, "trustlab measure --suite full; trustlab fit (weights 1/variance)",
                                         f"max |residual| {worst:.3f} ms outside the (random) key generation rows"))


def profile_swtpm_native(repeat: int = 20) -> Profile:
    """Measure a fresh local swtpm directly (no proxy) and fit the ``swtpm-native`` profile."""
    from trustlab.serving.swtpm import Swtpm

    with Swtpm() as tpm:
        version = _swtpm_version()
        rows = harness.measure(tpm.tcti, suite="full", repeat=repeat, warmup=1, center="median")
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    source = (f"measured here with trustlab measure on {version}, {platform.machine()} host, "
              f"{when}, tcti-swtpm, median of {repeat}")
    return profile_from_rows(rows, "swtpm-native", source,
                             description=f"{version} (libtpms) as this host runs it, no timing proxy")


def _swtpm_version() -> str:
    import subprocess

    try:
        out = subprocess.run(["swtpm", "--version"], capture_output=True, text=True, timeout=10).stdout
    except OSError:
        return "swtpm"
    return "swtpm " + out.split("version", 1)[1].split(",")[0].strip() if "version" in out else "swtpm"
