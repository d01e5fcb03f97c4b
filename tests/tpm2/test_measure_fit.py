"""Closing the loop: measure a proxy-served profile, fit, recover the profile.

``trustlab measure`` times the small suite against ``TimingProxy(P)`` in
realtime; ``trustlab fit --family tpm2`` on its CSV must recover P's
components within 5 %. The suite's formulas use its wire sizes (the proxy's
own terms), so what remains is the client's per-call overhead (~1 ms, more
when the shared machine is busy), which lands in ``ohc`` and is small next to it.

The proxy runs without its resource manager here (``rm=False``, a raw
``/dev/tpm0``-like TPM): through the RM every command also pays for loading and
saving the client's objects, which is right for a ``/dev/tpmrm0`` user but is
not in the per-command formulas being fitted.
"""

from __future__ import annotations

import csv
import json

import pytest

from trustlab.cli import main
from trustlab.devices.tpm2 import harness
from trustlab.serving.proxy import TimingProxy
from trustlab.timing import formulas

from .conftest import make_profile, needs_swtpm

pytestmark = needs_swtpm

# Discrete-TPM-like magnitudes (an I2C chip's per-byte costs): the client's own ~1 ms per call
# then stays well inside the 5 % the loop must close within.
TRUE = dict(ohc=60.0, ohir=0.05, ohor=0.05, sha256_byte=0.05, nv_write=40.0, nv_increment=40.0,
            ecc256_sign=60.0)


def test_suite_formulas_match_what_the_proxy_charges(swtpm):
    """Analytic model and simulation agree exactly (no spread): every step of the full suite."""
    means = dict(ohc=3.0, ohir=0.011, ohor=0.013, sha256_byte=0.007, hmac=2.0, nv_write=5.0, nv_increment=4.0)
    for v, base in (("rsa2048", 50.0), ("ecc256", 20.0)):
        means.update({f"{v}_{op}": base + i for i, op in enumerate(("sign", "verify", "enc", "dec", "ecdh",
                                                                   "keygen"))})
    profile = make_profile("agree", **means)
    marks = []
    with TimingProxy(profile, swtpm, virtual=True, rm=False) as proxy:
        harness.measure(proxy.tcti, suite="full", repeat=1, warmup=0,
                        progress=lambda c, v: marks.append((c, v, len(proxy.records))))
        records = list(proxy.records)
    from trustlab.timing.formula_sets.tpm2 import SIZES

    assert {(c, v) for c, v, _ in marks} == set(SIZES)  # every registered variant is exercised
    for command, variant, start in marks:
        rec = next(r for r in records[start:] if r.command == command)
        formula = formulas.lookup("tpm2", command, variant)
        assert dict(formula.terms) == rec.terms, (command, variant)
        assert formula.evaluate(profile)[0] == pytest.approx(rec.modelled_ms, abs=1e-9), (command, variant)
        assert not rec.unmodelled, (command, variant)


@pytest.mark.realtime
def test_measure_then_fit_recovers_profile(swtpm, tmp_path, capsys):
    """One retry: the shared 2-core host can spoil a whole round with a load burst."""
    misses = []
    for attempt in range(2):
        miss = _measure_and_fit(swtpm, tmp_path / f"measured-{attempt}.csv", capsys)
        if not miss:
            return
        misses.append(miss)
    pytest.fail(f"fit missed 5 % twice: {misses}")


def _measure_and_fit(swtpm, out, capsys) -> dict[str, tuple[float, float]]:
    profile = make_profile("loop", **TRUE)
    with TimingProxy(profile, swtpm, rm=False) as proxy:
        assert main(["measure", "--tcti", proxy.tcti, "--suite", "small", "--repeat", "5",
                     "--center", "min", "--subtract-client-overhead", "--out", str(out)]) == 0
    rows = list(csv.DictReader(out.open()))
    assert {"command", "variant", "ms", "sd", "n", "p50", "p90", "p99"} <= set(rows[0])
    assert {(r["command"], r["variant"]) for r in rows} >= {("TPM2_Sign", "ecc256"), ("TPM2_Sign", "bad-handle")}
    capsys.readouterr()
    assert main(["fit", str(out), "--family", "tpm2", "--json"]) == 0
    fitted = json.loads(capsys.readouterr().out)["params"]
    return {name: (fitted[name], true) for name, true in TRUE.items()
            if fitted[name] != pytest.approx(true, rel=0.05)}


def test_full_suite_round_trip_on_a_virtual_serve(swtpm, tmp_path, capsys):
    """measure --suite full -> fit closes on a served profile (issue 13), weights from measure.

    The proxy is virtual with a fixed seed and the suite reads its modelled
    clock, so the rows are the model itself. Every deterministic component of
    the served profile is recovered within 5 %; a component with a spread (key
    generation: 64 measured samples, CV 0.7) within 5 % of what was actually
    drawn in the timed calls and within 3 standard errors of the profile mean;
    and components the profile lacks (nv_write, hmac ... priced as overhead +
    bytes by the proxy) come out as zero. Without measure's 1/variance weights
    the key-generation rows swamp the fit (ohc and rsa2048_enc went to 0).
    """
    import statistics

    from trustlab.timing import registry

    profile = registry.load("nuvoton-npct750-wolftpm")
    out = tmp_path / "served.csv"
    with TimingProxy(profile, swtpm, virtual=True, seed=7, rm=False) as proxy:
        rows = harness.measure(proxy.tcti, suite="full", repeat=4, warmup=0, clock=lambda: proxy.clock.now_ms)
    harness.write_csv(rows, out)
    written = list(csv.DictReader(out.open()))
    assert all(float(r["weight"]) > 0 and r["center"] == "mean" for r in written)
    assert main(["fit", str(out), "--family", "tpm2", "--json"]) == 0
    fitted = json.loads(capsys.readouterr().out)["params"]
    for name in profile.components:
        comp = profile[name]
        if not comp.sd and not comp.samples:
            assert fitted[name] == pytest.approx(comp.mean, rel=0.05, abs=1e-6), name
            continue
        keygens = [r for r in rows if r.command in ("TPM2_CreatePrimary", "TPM2_Create")
                   and r.variant == name.split("_")[0]]
        # what was drawn, as the fit weighs it (1/variance per row); the profile's ohir/ohor are 0
        drawn = sum(r.weight * (r.ms - profile.mean("ohc")) for r in keygens) / sum(r.weight for r in keygens)
        assert fitted[name] == pytest.approx(drawn, rel=0.05), name
        spread = comp.sd or statistics.pstdev(comp.samples)
        n = sum(r.n for r in keygens)
        assert abs(fitted[name] - comp.mean) < 3 * spread / n ** 0.5, name
    added = {name: v for name, v in fitted.items() if name not in profile and abs(v) > 1e-3}
    assert not added, added
