"""Sweep points across every shipped experiment's parameters, valid and invalid, for the dry-run agreement test.

Each point is (experiment, {parameter: value}) as a sweep spec's ``[fixed]`` table would give it. Values
come from each experiment's ``--help`` (its choices, its documented ranges and defaults) and from the
mistakes a user makes: a profile that does not exist or is of the wrong family, a name list with a typo,
a combination only the run's mode checks catch. Every point starts from a cheap base (few draws, few
counters, one profile) so that the ones the run accepts can also be run for real on a sample.
"""

from __future__ import annotations

from typing import Any

Point = tuple[str, dict[str, Any]]

TPM2 = "infineon-slb9670-wolftpm"
TPM2_B = "infineon-slb9672-wolftpm"
NO_SUCH = "no-such-profile"

BASES: dict[str, dict[str, Any]] = {
    "ae": {"platform": ["sle78-aes"], "bytes": "16,64"},
    "counters": {"counters": "2,4", "scheme": "log", "deterministic": True},
    "ftpm-crash": {"commands": 5},
    "ftpm-vs-dtpm": {"reps": 1, "profiles": TPM2},
    "hbs": {},
    "oracle": {"queries": 1},
    "pqc-tpm": {"draws": 10, "profiles": TPM2, "algorithms": "ML-KEM-768", "no_progress": True},
    "timing-model": {"profile": ["atmel-2010"], "command": ["TPM_Seal"], "repeats": 1, "simulate": False},
    "validate": {"profile": ["atmel-2010"]},
    "wallet": {"purchases": 3, "merchants": 2, "buyers": 2},
    "workloads": {"draws": 10, "profiles": TPM2, "workloads": "measured-boot"},
}

VARIATIONS: dict[str, list[dict[str, Any]]] = {
    "ae": [
        {}, {"platform": ["multos-sle78"]}, {"platform": ["sle78-tdes", "s3cc9e8"]}, {"platform": ["sle78-aes,s3cc9e8"]},
        {"platform": ["nonexistent"]}, {"platform": [","]}, {"platform": ["atmel-2010:aes"]},
        {"mode": "ocb2"}, {"mode": "ocb3,gcm"}, {"mode": "etm-iso"}, {"mode": "ccm,etm"}, {"mode": "cbc"},
        {"mode": ""}, {"mode": "ocb2,,gcm"}, {"mode": "OCB2"},
        {"bytes": "0"}, {"bytes": "8,16,20,32,40,64,128,192"}, {"bytes": "-1"}, {"bytes": "abc"}, {"bytes": "1e3"},
        {"bytes": "100000"}, {"bytes": "4096"}, {"bytes": ""}, {"bytes": "255"}, {"bytes": "16", "no_pad": True},
        {"link": "char"}, {"link": "char", "protocol": "T=0"}, {"link": "char", "protocol": "T=1"},
        {"protocol": "T=0"}, {"key_setup": "once"}, {"buffers": "nvm"},
        {"buffers": "nvm", "platform": ["multos-sle78"]}, {"buffers": "nvm", "platform": ["s3cc9e8"]},
    ],
    "counters": [
        {}, {"scheme": "hashtree"}, {"scheme": "both"}, {"scheme": "log-tpm2"},
        {"scheme": "log-tpm2", "profile": "infineon-slb9672-wolftpm"},
        {"profile": "atmel-counters-2010,infineon-counters-2010"}, {"profile": NO_SUCH},
        {"profile": "atmel-counters-2010," + NO_SUCH}, {"profile": ","}, {"profile": "jcop-2018"},
        {"profile": "atmel-2010"}, {"profile": TPM2},
        {"counters": "0"}, {"counters": "2,,4"}, {"counters": "x"}, {"counters": str(1 << 21)}, {"counters": ""},
        {"workload": "zipf"}, {"workload": "uniform"}, {"workload": "roundrobin"},
        {"op": "read"}, {"op": "increment"}, {"requests": 0}, {"requests": 5}, {"requests": 1 << 25},
        {"requests": -3},
        {"workload": "zipf", "zipf_mode": "ycsb"}, {"workload": "zipf", "zipf_mode": "scrambled", "zipf_constant": 0.5},
        {"workload": "zipf", "zipf_mode": "ycsb", "zipf_constant": 1.5}, {"zipf_mode": "ycsb"},
        {"workload": "zipf", "zipf_rho": 0.5}, {"workload": "zipf", "zipf_rho": 0.5, "zipf_constant": 0.5},
        {"workload": "zipf", "zipf_mode": "ycsb", "zipf_rho": 0.5}, {"zipf_constant": 0.9},
        {"read_fraction": 0.5}, {"read_fraction": 0.5, "op": "read"}, {"read_fraction": 1.5},
        {"tpm12": "served"}, {"tpm12": "inproc", "scheme": "hashtree"}, {"tpm12": "libtpms", "scheme": "hashtree"},
        {"tpm12": "inproc", "scheme": "log-tpm2", "profile": TPM2},
        {"attest_every": 2, "scheme": "hashtree"}, {"attest_every": 2}, {"attest_every": 0, "scheme": "hashtree"},
        {"trace": "/nonexistent/trace.jsonl"}, {"trace": "/nonexistent/trace.jsonl", "workload": "zipf"},
    ],
    "ftpm-crash": [
        {}, {"levels": 2}, {"boots": 3}, {"boots": 3, "p_typo": 0.5}, {"p_typo": 0.5}, {"boots": -1},
        {"boots": 2, "p_unclean": 1.5}, {"profile": NO_SUCH}, {"profile": "emmc-rpmb-optee-postsleep"},
        {"profile": "atmel-2010"}, {"commands": 0}, {"commands": -1}, {"levels": 3},
    ],
    "ftpm-vs-dtpm": [
        {}, {"profiles": NO_SUCH}, {"profiles": ","}, {"profiles": "atmel-2010"}, {"profiles": f"{TPM2},{TPM2_B}"},
        {"storage_profile": NO_SUCH}, {"storage_profile": TPM2}, {"reps": 0},
    ],
    "hbs": [
        {}, {"h": 20, "d": 4}, {"h": 20, "d": 5}, {"h": 10, "d": 2}, {"h": 10, "d": 4}, {"h": 20, "d": 3},
        {"h": 20, "d": 1}, {"h": 12, "d": 1}, {"h": 60, "d": 6}, {"h": 64, "d": 1}, {"h": 1, "d": 1},
        {"h": 20}, {"d": 5}, {"d": 3}, {"h": 7}, {"w": 4}, {"w": 16}, {"w": 8}, {"h": 0},
        {"grid": True}, {"grid": True, "grid_h": [10]}, {"grid": True, "grid_h": [1]}, {"grid": True, "grid_w": [4]},
        {"grid": True, "grid_w": [8]}, {"grid": True, "h": 20}, {"grid_h": [10]}, {"grid": True, "check": True},
        {"grid": True, "sensitivity": 0.2}, {"sensitivity": 0.2}, {"sensitivity": 1.5}, {"sensitivity": 0},
        {"set": ["hash_call=2.7"]}, {"set": ["hash_call=-1"]}, {"set": ["nothing=1"]}, {"set": ["hash_call=x"]},
        {"set": ["hash_call=1e12"]}, {"seed": 1}, {"seed": 1, "check": True}, {"profile": NO_SUCH},
        {"profile": "atmel-2010"}, {"profile": "nxp-jcop4-p71d321-fixed"},
        {"responses": "short"}, {"responses": "extended"},
    ],
    "oracle": [
        {}, {"parties": 5}, {"parties": 1}, {"parties": 10001}, {"profile": NO_SUCH}, {"profile": "atmel-2010"},
        {"profile": "atmel-counters-2010"}, {"profile": TPM2}, {"profile": "jcop-2018"}, {"input_blocks": 0},
        {"input_blocks": 17}, {"input_blocks": 5000}, {"output_blocks": 65}, {"output_blocks": 2}, {"queries": 0},
        {"realtime": True, "queries": 1, "profile": "sim-2010"},
    ],
    "pqc-tpm": [
        {}, {"algorithms": "ML-DSA-44"}, {"algorithms": "ML-DSA-65,ML-KEM-1024"}, {"algorithms": "ML-KEM-512"},
        {"algorithms": "ML-DSA-99"}, {"algorithms": ","}, {"draws": 9}, {"draws": 20001}, {"profiles": NO_SUCH},
        {"profiles": "atmel-2010"}, {"profiles": ","}, {"profiles": f"{TPM2},{TPM2_B}", "focus": TPM2_B},
        {"focus": TPM2_B}, {"message_bytes": 100}, {"message_bytes": 100, "algorithms": "ML-DSA-44"},
        {"message_bytes": 0, "algorithms": "ML-DSA-44"}, {"protection": "off"},
        {"chip": ["core=m4,mhz=100"], "profiles": None}, {"chip": ["core=nonsense,mhz=100"]},
        {"chip": ["core=m4,mhz=100", "core=m4,mhz=100"]}, {"chip": ["/nonexistent/chip.toml"]},
    ],
    "timing-model": [
        {}, {"profile": ["atmel-2010", "stm-2010"]}, {"profile": [NO_SUCH]}, {"profile": [TPM2]},
        {"profile": ["jcop-2018"]}, {"command": ["TPM_Sign", "TPM_Quote"]}, {"command": ["TPM_Nonsense"]},
        {"command": ["TPM_GetRandom"]}, {"command": ["tpm_seal"]}, {"command": [""]}, {"noise": 0.5},
        {"noise": 1.0}, {"noise": -0.1}, {"repeats": 0}, {"simulate": True},
    ],
    "validate": [
        {}, {"profile": [NO_SUCH]}, {"profile": ["infineon-2010", "jcop-2018"]}, {"profile": None},
    ],
    "wallet": [
        {}, {"scheme": "log"}, {"ordering": "paper"}, {"ordering": "arithmetic"},
        {"ordering": "arithmetic", "scheme": "log"}, {"workload": "zipf"}, {"cheat_rate": 0.5},
        {"cheat_rate": 1.5}, {"merchants": 0}, {"buyers": 0}, {"purchases": 0}, {"credit": 0}, {"credit": -1},
        {"profile": NO_SUCH}, {"profile": "atmel-2010"}, {"profile": TPM2}, {"profile": "jcop-2018"},
        {"deterministic": True},
    ],
    "workloads": [
        {}, {"workloads": "attestation"}, {"workloads": "attestation,tls-key"}, {"workloads": "nonsense"},
        {"workloads": ","}, {"workloads": ""}, {"workloads": "attestation,,tls-key"},
        {"pqc": "sign=ML-DSA-44,kem=ML-KEM-1024"}, {"pqc": "sign=ML-DSA-99"}, {"pqc": "nonsense"}, {"pqc": ""},
        {"pqc": "kem=ML-KEM-512"}, {"pqc": "sign=ML-KEM-768"}, {"draws": 9}, {"draws": 20001},
        {"profiles": NO_SUCH}, {"profiles": "atmel-2010"}, {"profiles": ","}, {"profiles": f"{TPM2},{NO_SUCH}"},
    ],
}


def from_help(experiment: str) -> list[dict[str, Any]]:
    """One change per value each parameter's ``--help`` offers: every choice, and every switch flipped."""
    from trustlab.experiments._params import schema

    out: list[dict[str, Any]] = []
    for p in schema(experiment):
        if p["name"] in ("no_progress", "realtime"):  # output and wall-clock pacing only
            continue
        if p["choices"]:
            out += [{p["name"]: c} for c in p["choices"]]
        elif p["type"] == "bool":
            out.append({p["name"]: not p["default"]})
    return out


def points() -> list[Point]:
    """Every (experiment, params) of :data:`VARIATIONS` and :func:`from_help`, each over its experiment's
    cheap base."""
    out: list[Point] = []
    for experiment, variations in VARIATIONS.items():
        for change in variations + from_help(experiment):
            params = dict(BASES[experiment])
            params.update(change)
            point = (experiment, {k: v for k, v in params.items() if v is not None})
            if point not in out:
                out.append(point)
    return out
