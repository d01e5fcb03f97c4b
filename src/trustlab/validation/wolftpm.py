"""Reference source: the wolfTPM README's TPM 2.0 benchmark table (copied as data/wolftpm-benchmarks.csv).

Each row is one chip, each column a whole-operation average measured by
wolfTPM's bench on a Raspberry Pi (user space, bus and polling included).
These are the raw figures the ``*-wolftpm`` profiles were derived from; here
they are the measurements other sources' profiles must predict.
"""

from __future__ import annotations

import csv
from importlib import resources

from trustlab.data.wolftpm import profile_name
from trustlab.validation.tpm2_pairs import Observation, family_of

FILE = "wolftpm-benchmarks.csv"
SOURCE = "wolfSSL/wolfTPM README, TPM2 Benchmarks (validation/data/wolftpm-benchmarks.csv)"
COLUMNS = {  # column -> (command, variant, what)
    "ecdsa_sign_ms": ("TPM2_Sign", "ecc256", "ECDSA P-256 sign"),
    "ecdsa_verify_ms": ("TPM2_VerifySignature", "ecc256", "ECDSA P-256 verify"),
    "rsa_priv_ms": ("TPM2_RSA_Decrypt", "rsa2048", "RSA-2048 decrypt, NULL scheme"),
    "rsa_pub_ms": ("TPM2_RSA_Encrypt", "rsa2048", "RSA-2048 encrypt, NULL scheme"),
}


def observations() -> list[Observation]:
    text = resources.files("trustlab.validation").joinpath("data", FILE).read_text(encoding="utf-8")
    rows = csv.DictReader(line for line in text.splitlines() if line and not line.startswith("#"))
    out = []
    for row in rows:
        name = profile_name(row["chip"].strip())
        fam = family_of(name)
        if fam is None:
            continue
        for column, (command, variant, what) in COLUMNS.items():
            value = (row.get(column) or "").strip()
            if value:
                out.append(Observation(fam, name, command, variant, float(value),
                                       f"{SOURCE}, {row['chip'].strip()}, column {column} ({what})"))
    return out
