"""Reference source: the post-quantum cost model's rows, from ``devices/tpm2/pqc_model/validation``.

Independent rows: every published ML-KEM / ML-DSA measurement in ``data/pqc_measurements.toml``
(pqm3 and Greconici et al. on a Cortex-M3, mlkem-native on RISC-V 64 and x86-64, its reference-C
start on a Cortex-A72, wolfSSL on a Cortex-A53 and a Cortex-M4, Chhetri on a Cortex-M0+, Xu's thesis
data on a Cortex-M33 (RP2350) and an x86-64 desktop, libcrux-iot's portable Rust on an STM32L4R5 (Cortex-M4),
Huang et al.'s assembly Kyber on a SiFive FE310 (RV32) and an Arduino Due (Cortex-M3), among others;
Albrecht et al.'s SLE 78 Kyber variant and a Java Card Kyber applet on an Infineon SLC37, flagged and not counted),
each predicted leave-one-source-out with its interval. Calibration rows: pqm4's Cortex-M4 figures
(the unit costs) and the SEALSQ QVault's published 1.85 command times (its profile is calibrated).
:func:`loso_text` is validate's per-source summary: leave-one-source-out error and coverage.
"""

from __future__ import annotations

from trustlab.devices.tpm2.pqc_model import validation as pqc_validation
from trustlab.validation.core import Check, Inconsistency

CHECK_FIELDS = ("profile", "device_class", "command", "predicted", "reference", "unit", "kind", "source", "note")
PROFILES = ("sealsq-qvault-pqc-tpm-wolftpm",)


def checks() -> list[Check]:
    out = []
    for row in pqc_validation.rows():
        fields = {k: row[k] for k in CHECK_FIELDS}
        if row.get("flagged"):  # the text tables show the note, the plot the flag
            fields["note"] = f"flagged, not counted: {fields['note']}"
        out.append(Check(**fields, flagged=bool(row.get("flagged"))))
    return out


def inconsistencies() -> list[Inconsistency]:
    return []


def loso_text() -> str:
    """Per source: rows, leave-one-source-out median error and |error|, worst ratio, coverage; then every
    assumption of the model with its range and source."""
    from trustlab.devices.tpm2.pqc_model import assumptions

    return "\n".join([
        "Post-quantum cost model, leave-one-source-out (each source predicted by the model rebuilt without it; "
        "coverage = share of measurements inside the 5-95% interval):",
        *pqc_validation.per_source_lines(pqc_validation.summary()), "", *assumptions.lines()])
