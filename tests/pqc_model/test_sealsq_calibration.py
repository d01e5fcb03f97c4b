"""The SEALSQ QVault profile answers the 1.85 commands at the times wolfTPM published for the silicon.

Reference (calibration, not independent): wolfTPM docs/benchmarks.md, "Post-quantum (SEALSQ QVault)",
measured with examples/bench/bench on a Raspberry Pi 5 over SPI. The client below issues the same
commands per timed operation as that benchmark (bench.c bench_pqc_mldsa / bench_pqc_mlkem):
key gen = CreatePrimary + FlushContext of the previous key, sign = SignSequenceStart +
SignSequenceComplete over a 32-byte message, verify = VerifySequenceStart + VerifySequenceComplete,
encapsulate, decapsulate. The served means (virtual clock, from the proxy's trace) must be within
10% of the published means; ML-DSA signing is a random variable (rejection loop), hence many runs.
"""

from __future__ import annotations

import statistics
import time

import pytest

from trustlab.devices.tpm2.pqc.client import PqcClient
from trustlab.serving.proxy import timed_swtpm

from ..tpm2.conftest import needs_swtpm

PROFILE = "sealsq-qvault-pqc-tpm-wolftpm"
PUBLISHED_MS = {  # reference values: wolfTPM docs/benchmarks.md (average latency)
    ("ML-DSA-65", "keygen"): 2044.7, ("ML-DSA-65", "sign"): 581.0, ("ML-DSA-65", "verify"): 163.1,
    ("ML-KEM-768", "keygen"): 800.8, ("ML-KEM-768", "encapsulate"): 211.8, ("ML-KEM-768", "decapsulate"): 425.5,
}
RUNS = {"keygen": 100, "sign": 300, "verify": 20, "encapsulate": 20, "decapsulate": 20}
MESSAGE = bytes([0x11]) * 32

pytestmark = [pytest.mark.swtpm, needs_swtpm]


def _timed(records: list, fn) -> float:
    """Modelled ms of the commands ``fn`` issues (virtual clock, summed from the proxy's trace)."""
    start = len(records)
    fn()
    return sum(r.modelled_ms for r in records[start:])


@pytest.fixture(scope="module")
def served_means() -> dict:
    return measure_served_means()


def measure_served_means() -> dict:
    """(algorithm, operation) -> served mean ms, issuing wolfTPM bench's commands per operation."""
    records: list = []
    means: dict = {}
    with timed_swtpm(PROFILE, virtual=True, trace=records.append) as proxy, PqcClient.connect(proxy.tcti) as tpm:
        for alg in ("ML-DSA-65", "ML-KEM-768"):
            key = tpm.create_primary(alg)
            times = []
            for _ in range(RUNS["keygen"]):
                def keygen():
                    nonlocal key
                    tpm.flush(key.handle)
                    key = tpm.create_primary(alg)
                times.append(_timed(records, keygen))
            means[(alg, "keygen")] = statistics.fmean(times)
            if alg == "ML-DSA-65":
                sigs = []
                times = [_timed(records, lambda: sigs.append(tpm.sign_sequence(key.handle, MESSAGE)))
                         for _ in range(RUNS["sign"])]
                means[(alg, "sign")] = statistics.fmean(times)
                means[(alg, "verify")] = statistics.fmean(
                    _timed(records, lambda: tpm.verify_sequence(key, MESSAGE, sigs[0])) for _ in range(RUNS["verify"]))
            else:
                cts = []
                means[(alg, "encapsulate")] = statistics.fmean(
                    _timed(records, lambda: cts.append(tpm.encapsulate(key.handle)[1])) for _ in range(RUNS["encapsulate"]))
                means[(alg, "decapsulate")] = statistics.fmean(
                    _timed(records, lambda: tpm.decapsulate(key.handle, cts[0])) for _ in range(RUNS["decapsulate"]))
            tpm.flush(key.handle)
    return means


@pytest.mark.parametrize("op", sorted(PUBLISHED_MS))
def test_served_mean_is_within_10_percent_of_the_published_silicon_figure(served_means, op):
    got, want = served_means[op], PUBLISHED_MS[op]
    assert abs(got / want - 1) <= 0.10, f"{op}: served mean {got:.1f} ms vs published {want} ms"


def test_realtime_client_sees_the_modelled_time():
    """In realtime the proxy holds each response for the modelled time: the client's wall clock shows it."""
    records: list = []
    with timed_swtpm(PROFILE, virtual=False, trace=records.append) as proxy, PqcClient.connect(proxy.tcti) as tpm:
        key = tpm.create_primary("ML-KEM-768")
        for _ in range(2):
            t0 = time.perf_counter()
            tpm.encapsulate(key.handle)
            wall_ms = (time.perf_counter() - t0) * 1000.0
            modelled = records[-1].modelled_ms
            assert records[-1].command == "TPM2_Encapsulate"
            assert abs(modelled / PUBLISHED_MS[("ML-KEM-768", "encapsulate")] - 1) < 0.10
            assert modelled * 0.97 <= wall_ms <= modelled + 250.0, (modelled, wall_ms)
        tpm.flush(key.handle)
