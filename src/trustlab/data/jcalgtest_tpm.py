"""JCAlgTest TPM 2.0 performance files -> one family-``tpm2`` profile per TPM.

A file is a header (Manufacturer, Vendor string, Firmware version) and blocks
per command (``TPM2_Sign``), each with entries: a parameter line
(``Key parameters:;ECC 0x0003;Scheme:;0x0018``), ``operation stats (ms/op):;
avg op:;X;min op:;Y;max op:;Z`` and ``operation info`` with the success count.
Times are taken from the host through the OS TPM stack, so every figure
includes the command overhead. Components are derived as:

- ``ohc``: TPM2_GetRandom of 32 bytes (no cryptography worth the name);
- ``sha256_byte``: (TPM2_Hash SHA-256 of N bytes - ohc) / N;
- ``hmac``: TPM2_HMAC SHA-256 of N bytes - ohc - N sha256_byte;
- asymmetric operations: the command's average - ohc (RSA-2048, P-256);
- key generation: TPM2_Create - ohc, as a distribution clipped to the
  observed [min, max] (see :func:`trustlab.data.wolftpm.keygen_samples`).

``ohir``/``ohor`` are 0: one message size per command cannot separate a
per-byte cost. Entries with zero/negative times, no successful iteration,
``NO_SUCH_ALGORITHM`` or ``ILLEGAL_VALUE`` are ignored; older files' decimal
commas are accepted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from trustlab.data.wolftpm import keygen_component
from trustlab.errors import ProfileError
from trustlab.timing.profile import Component, Profile, Provenance

SOURCE = "JCAlgTest TPM performance results (crocs-muni/jcalgtest_results, MIT)"

KEYS = {"rsa2048": "RSA 2048", "ecc256": "ECC 0x0003", "rsa1024": "RSA 1024", "ecc384": "ECC 0x0004",
        "eccbn256": "ECC 0x0010"}
"""Key variant (as the proxy names it) -> JCAlgTest's key parameters (TPM_ECC_CURVE ids)."""

MODELS = {
    # (manufacturer, vendor string) -> profile name stem; the vendor strings name no model beyond these
    ("INTC", "intel"): "intel-ptt",
    ("NTC", "npct75x6rls"): "nuvoton-npct75x",
    ("NTC", "rlsnpct"): "nuvoton-npct",
    ("STM", ""): "stm-st33",
    ("IBM", "swtpm"): "ibm-swtpm",
}


@dataclass(frozen=True)
class Entry:
    command: str
    params: dict[str, str]
    avg: float
    min: float
    max: float
    successful: int
    failed: int
    line: int

    def describe(self) -> str:
        return f"{self.command} [" + ", ".join(f"{k} {v}" for k, v in self.params.items()) + "]"


def _number(text: str, where: str) -> float:
    try:
        return float(text.strip().replace(",", "."))
    except ValueError:
        raise ProfileError(f"{where}: expected a number, got {text!r}") from None


def parse_entries(path: Path) -> tuple[dict[str, str], list[Entry]]:
    """Header fields and every usable (command, parameters, stats) entry of a file."""
    from trustlab import limits

    raw = limits.read_bytes(path, "JCAlgTest file", error=ProfileError)  # bounded; a regular file only
    lines = raw.decode("utf-8-sig", errors="replace").splitlines()
    header: dict[str, str] = {}
    entries: list[Entry] = []
    command = ""
    params: dict[str, str] = {}
    stats: tuple[float, float, float, int] | None = None
    for lineno, raw in enumerate(lines, start=1):
        line = raw.strip()
        where = f"{path.name}:{lineno}"
        if not line:
            continue
        fields = [f.strip() for f in line.split(";")]
        if re.fullmatch(r"TPM2_\w+", fields[0]) and len(fields) <= 2:
            command, params, stats = fields[0], {}, None
            continue
        if not command and len(fields) >= 2 and fields[0] in ("Manufacturer", "Vendor string", "Firmware version"):
            header[fields[0]] = fields[1]
            continue
        if fields[0].startswith("operation stats"):
            values = dict(zip(fields[1::2], fields[2::2]))
            try:
                stats = (_number(values["avg op:"], where), _number(values["min op:"], where),
                         _number(values["max op:"], where), lineno)
            except KeyError:
                raise ProfileError(f"{where}: operation stats without avg/min/max") from None
            continue
        if fields[0].startswith("operation info"):
            info = dict(zip(fields[1::2], fields[2::2]))
            ok = int(_number(info.get("successful:", "0"), where))
            failed = int(_number(info.get("failed:", "0"), where))
            bad = any(w in line for w in ("NO_SUCH_ALGORITHM", "ILLEGAL_VALUE"))
            if command and stats and ok > 0 and stats[0] > 0 and not bad:
                entries.append(Entry(command, dict(params), stats[0], stats[1], stats[2], ok, failed, stats[3]))
            params, stats = {}, None
            continue
        if command and fields[0].endswith(":"):
            params = {k.rstrip(":").strip(): v for k, v in zip(fields[0::2], fields[1::2])}
    if not header.get("Manufacturer"):
        raise ProfileError(f"{path}: no 'Manufacturer;' header line; not a JCAlgTest TPM file")
    return header, entries


def default_name(header: dict[str, str]) -> str:
    manufacturer = header.get("Manufacturer", "").strip()
    vendor = re.sub(r"[^A-Za-z0-9]+", "", header.get("Vendor string", "")).lower()
    firmware = header.get("Firmware version", "").strip()
    stem = MODELS.get((manufacturer, vendor)) or MODELS.get((manufacturer, "")) or \
        re.sub(r"[^a-z0-9]+", "-", f"{manufacturer}-{vendor}".lower()).strip("-")
    return f"{stem}-{firmware}-jcalgtest" if firmware else f"{stem}-jcalgtest"


def _find(entries: list[Entry], command: str, **want: str) -> Entry | None:
    for e in entries:
        if e.command == command and all(e.params.get(k, "").lower() == v.lower() for k, v in want.items()):
            return e
    return None


def parse_tpm_csv(path: Path, name: str | None = None) -> Profile:
    """A family-``tpm2`` profile from one JCAlgTest TPM performance file."""
    header, entries = parse_entries(path)
    if not entries:
        raise ProfileError(f"{path}: no successful measurements in the file")

    def prov(e: Entry, how: str) -> Provenance:
        note = how + (f"; {e.failed} of {e.successful + e.failed} iterations failed" if e.failed else "")
        return Provenance(f"{SOURCE}: {path.name}", f"line {e.line}: {e.describe()}", note)

    comps: dict[str, Component] = {}
    rng = _find(entries, "TPM2_GetRandom", **{"Data length (bytes)": "32"}) or _find(entries, "TPM2_GetRandom")
    ohc = 0.0
    if rng is not None:
        ohc = rng.avg
        comps["ohc"] = Component("ohc", ohc, "call", provenance=prov(
            rng, f"TPM2_GetRandom average {rng.avg} ms taken as the per-command overhead"))
        for c in ("ohir", "ohor"):
            comps[c] = Component(c, 0.0, "byte", provenance=Provenance(
                f"{SOURCE}: {path.name}", "-", "not separable (one message size per command); folded into ohc"))
    folded = "" if rng is not None else " (no TPM2_GetRandom in the file: overhead not subtracted)"

    def minus_ohc(e: Entry) -> float:
        return round(max(e.avg - ohc, 0.0), 4)

    h = (_find(entries, "TPM2_Hash", **{"Hash algorithm": "0x000b"})
         or _find(entries, "TPM2_Hash", **{"Hash algorithm": "SHA-256"}))
    if h is not None and rng is not None:
        n = int(_number(h.params.get("Data length (bytes)", "0"), path.name))
        if n > 0:
            comps["sha256_byte"] = Component("sha256_byte", round(max(h.avg - ohc, 0.0) / n, 7), "byte",
                                             provenance=prov(h, f"({h.avg} ms - ohc) / {n} bytes, floored at 0"))
    hm = _find(entries, "TPM2_HMAC", **{"Hash algorithm": "SHA-256"}) or _find(entries, "TPM2_HMAC")
    if hm is not None and rng is not None:
        n = int(_number(hm.params.get("Data length (bytes)", "0"), path.name))
        per_byte = comps["sha256_byte"].mean if "sha256_byte" in comps else 0.0
        comps["hmac"] = Component("hmac", round(max(hm.avg - ohc - n * per_byte, 0.0), 4), "call",
                                  provenance=prov(hm, f"{hm.avg} ms - ohc - {n} x sha256_byte"))

    def asym(component: str, command: str, key: str, schemes: tuple[str, ...], what: str) -> None:
        for i, scheme in enumerate(schemes):
            e = _find(entries, command, **{"Key parameters": key, "Scheme": scheme})
            if e is not None:
                alt = f" (scheme {scheme}; the preferred scheme {schemes[0]} failed or is absent)" if i else ""
                comps[component] = Component(component, minus_ohc(e), "call",
                                             provenance=prov(e, f"{what}: {e.avg} ms - ohc{alt}{folded}"))
                return

    for v, key in KEYS.items():
        if v.startswith("rsa"):
            bits = v[3:]
            asym(f"{v}_dec", "TPM2_RSA_Decrypt", key, ("0x0010", "0x0017", "0x0015"), f"RSA-{bits} private op")
            asym(f"{v}_enc", "TPM2_RSA_Encrypt", key, ("0x0010", "0x0017", "0x0015"), f"RSA-{bits} public op")
            asym(f"{v}_sign", "TPM2_Sign", key, ("0x0014", "0x0016"), f"RSASSA-{bits} signature")
            if f"{v}_enc" not in comps:
                asym(f"{v}_enc", "TPM2_VerifySignature", key, ("0x0014", "0x0016"),
                     f"RSA-{bits} public op (from TPM2_VerifySignature)")
        else:
            asym(f"{v}_sign", "TPM2_Sign", key, ("0x0018", "0x001c"), f"ECDSA {key} signature")
            asym(f"{v}_verify", "TPM2_VerifySignature", key, ("0x0018", "0x001c"), f"{key} verification")
        e = _find(entries, "TPM2_Create", **{"Key parameters": key})
        if e is not None:
            comps[f"{v}_keygen"] = keygen_component(
                f"{v}_keygen", minus_ohc(e),
                prov(e, f"TPM2_Create {key}: {e.avg} ms (min {e.min}, max {e.max}) - ohc{folded}"),
                lo=max(e.min - ohc, 0.0), hi=max(e.max - ohc, 0.0))
    if not comps:
        raise ProfileError(f"{path}: no command this importer maps onto tpm2 components")
    profile_name = name or default_name(header)
    vendor = header.get("Vendor string", "").strip()
    return Profile(
        name=profile_name, components=comps, family="tpm2", version="1",
        description=" ".join(f"{header.get('Manufacturer', '')} {vendor} firmware "
                             f"{header.get('Firmware version', '')}, JCAlgTest measurements".split()),
        provenance=Provenance(f"{SOURCE}: {path.name}", "whole file",
                              "host-side timings through the OS TPM stack; components derived by subtracting "
                              "the TPM2_GetRandom time"),
    )
