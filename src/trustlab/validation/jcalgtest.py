"""Reference source: JCAlgTest TPM 2.0 performance files (copied into data/jcalgtest_tpm/, MIT).

Each entry is a host-side average through the OS TPM stack. The files are
the inputs of the ``*-jcalgtest`` profiles; here they are the measurements
other sources' profiles (wolfTPM, other firmware versions) must predict.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from trustlab.data.jcalgtest_tpm import KEYS, default_name, parse_entries
from trustlab.validation.tpm2_pairs import Observation, family_of

SOURCE = "JCAlgTest TPM performance results (crocs-muni/jcalgtest_results, MIT; validation/data/jcalgtest_tpm)"
# (command, variant) -> (JCAlgTest command, key variant, schemes in order of preference)
ENTRIES = {
    ("TPM2_Sign", "ecc256"): ("TPM2_Sign", "ecc256", ("0x0018", "0x001c")),
    ("TPM2_VerifySignature", "ecc256"): ("TPM2_VerifySignature", "ecc256", ("0x0018", "0x001c")),
    ("TPM2_RSA_Decrypt", "rsa2048"): ("TPM2_RSA_Decrypt", "rsa2048", ("0x0010",)),
    ("TPM2_RSA_Encrypt", "rsa2048"): ("TPM2_RSA_Encrypt", "rsa2048", ("0x0010",)),
    ("TPM2_Sign", "rsa2048"): ("TPM2_Sign", "rsa2048", ("0x0014", "0x0016")),
    ("TPM2_Create", "ecc256"): ("TPM2_Create", "ecc256", ()),
}
SCHEMES = {"0x0018": "ECDSA", "0x001c": "ECSCHNORR", "0x0010": "NULL", "0x0014": "RSASSA", "0x0016": "RSAPSS"}


def files() -> list[Path]:
    root = resources.files("trustlab.validation").joinpath("data", "jcalgtest_tpm")
    return sorted(Path(str(root)).glob("*.csv"))


def observations() -> list[Observation]:
    out = []
    for path in files():
        header, entries = parse_entries(path)
        name = default_name(header)
        fam = family_of(name)
        if fam is None:
            continue
        for (command, variant), (jc_command, key, schemes) in ENTRIES.items():
            found = None
            for i, scheme in enumerate(schemes or (None,)):
                for e in entries:
                    if e.command != jc_command or e.params.get("Key parameters", "").lower() != KEYS[key].lower():
                        continue
                    if scheme is not None and e.params.get("Scheme", "").lower() != scheme:
                        continue
                    found = (e, i)
                    break
                if found:
                    break
            if found is None:
                continue
            e, i = found
            note = (f"scheme {SCHEMES.get(schemes[i], schemes[i])}: the file has no {SCHEMES[schemes[0]]} entry"
                    if i else "")
            out.append(Observation(fam, name, command, variant, e.avg,
                                   f"{SOURCE}: {path.name} line {e.line}, {e.describe()}", note))
    return out
