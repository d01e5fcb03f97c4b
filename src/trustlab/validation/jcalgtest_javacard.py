"""Reference source: JCAlgTest measurements of other NXP JCOP 2.4.x Java Cards (leave-one-card-out).

jcop-2018's persistent-memory and bytecode costs come from one card each
(NXP J3D081 for Util.arrayCopy to and from EEPROM and Util.arrayCopyNonAtomic
to EEPROM -- an atomic write is the non-atomic one plus the transaction's
nvm_tx_* --, JCOP21 v2.4.2R3 for the
XOR loop). The same methods measured on the other cards of that generation
(data/jcalgtest_javacard_jcop24.csv, extracted from the JCAlgTest files) are
what those components must predict; rows from a component's own file are
calibration. The hash cost cannot be checked this way: hash_call is the
applet's doFinal plus its Java glue, which no JCAlgTest method measures.
"""

from __future__ import annotations

import csv
from importlib import resources

from trustlab.timing import registry
from trustlab.validation.core import CALIBRATION, INDEPENDENT, Check, Inconsistency, device_class

PROFILE = "jcop-2018"
PROFILES = (PROFILE,)
FILE = "jcalgtest_javacard_jcop24.csv"
SOURCE = "JCAlgTest Java Card results (crocs-muni/jcalgtest_results, MIT; validation/data/" + FILE + ")"
METHODS = {  # JCAlgTest method -> (per-call components, per-byte components, what)
    "UTIL Util_arrayCopy_RAM2EEPROM()": (("nvm_write_call", "nvm_tx_call"), ("nvm_write_byte", "nvm_tx_byte"),
                                         "Util.arrayCopy RAM -> EEPROM (atomic)"),
    "UTIL Util_arrayCopyNonAtomic_RAM2EEPROM()": (("nvm_write_call",), ("nvm_write_byte",),
                                                  "Util.arrayCopyNonAtomic RAM -> EEPROM"),
    "UTIL Util_arrayCopy_EEPROM2RAM()": (("nvm_read_call",), ("nvm_read_byte",), "Util.arrayCopy EEPROM -> RAM"),
    "SWALGS SWAlgs_xor()": ((), ("ram_byte",), "bytecode XOR loop"),
}


def checks() -> list[Check]:
    prof = registry.load(PROFILE)
    text = resources.files("trustlab.validation").joinpath("data", FILE).read_text(encoding="utf-8")
    out = []
    for row in csv.DictReader(line for line in text.splitlines() if line and not line.startswith("#")):
        calls, per_byte, what = METHODS[row["method"]]
        n = int(row["length"])
        predicted = sum(prof.mean(c) for c in calls) + n * sum(prof.mean(b) for b in per_byte)
        own = row["file"] in prof[per_byte[0]].provenance.source
        out.append(Check(PROFILE, device_class(PROFILE, prof.family), f"{what}, {n} B", predicted,
                         float(row["avg_ms"]), "ms", CALIBRATION if own else INDEPENDENT,
                         f"{SOURCE}: {row['card']} ({row['file']} line {row['line']})",
                         "" if own else f"leave-one-card-out: {PROFILE}'s {'+'.join(per_byte)} comes from another "
                         "JCOP card"))
    return out


def inconsistencies() -> list[Inconsistency]:
    return []
