"""What is publicly known about each TPM 2.0 profile's chip: processor class, bus, I/O buffer.

The facts live in ``data/chips.toml`` with a source per figure; a profile is
matched by name prefix (first match wins; an unknown chip falls into a
"discrete TPM, unknown core" default that says so).
"""

from __future__ import annotations

import functools
import math
import tomllib
from dataclasses import dataclass
from importlib import resources

N_QUANTILES = 32
"""Every spread is stored as this many quantiles (comonotonic across one chip's compute units)."""


@dataclass(frozen=True)
class Chip:
    prefix: str
    label: str
    cls: str
    cpu: str
    cpu_source: str
    clock_mhz: tuple[float, float]
    clock_source: str
    per_clock: tuple[float, float]
    per_clock_source: str
    bus: str
    bus_hz: float
    bus_source: str
    bus_efficiency: tuple[float, float]
    bus_efficiency_source: str
    max_command_size: int
    max_command_source: str
    software_crypto: bool = False
    core: str | None = None  # a core class of data/cores.toml (pqc_model.classes), when the class names one
    certified: bool = False  # FIPS 140 / CC certified: secret-key operations are protected
    certified_source: str = ""

    @property
    def clock_public(self) -> bool:
        return self.clock_mhz[0] == self.clock_mhz[1]


@functools.cache
def _doc() -> dict:
    text = (resources.files("trustlab.devices.tpm2.pqc_model") / "data" / "chips.toml").read_text("utf-8")
    return tomllib.loads(text)


@functools.cache
def chip_for(profile_name: str) -> Chip:
    """The chips.toml entry whose prefix the profile name starts with (cached: the pricing calls it per draw)."""
    doc = _doc()
    for entry in doc["chips"]:
        if profile_name.startswith(entry["prefix"]):
            cls = doc["classes"][entry["class"]]
            bus = doc["buses"][entry["bus"]]
            # a chip may state its own processor text (cpu / cpu_source) where its class's names other parts
            return Chip(entry["prefix"], entry["label"], entry["class"], entry.get("cpu", cls["cpu"]),
                        entry.get("cpu_source", cls["cpu_source"]),
                        tuple(cls["clock_mhz"]), cls["clock_source"], tuple(cls["per_clock"]),
                        cls["per_clock_source"], entry["bus"], float(entry["bus_hz"]), entry["bus_source"],
                        tuple(bus["efficiency"]), bus["source"], int(entry["max_command_size"]),
                        entry["max_command_source"], bool(cls.get("software_crypto", False)), cls.get("core"),
                        bool(entry.get("certified", False)), entry.get("certified_source", ""))
    raise AssertionError("chips.toml has no default entry")  # the last entry matches every name


def countermeasure(family: str, operation: str) -> tuple[tuple[float, float], str] | None:
    """The published first-order masking slowdown range of ``operation`` ("ML-KEM"/"ML-DSA"), or None.

    Certified chips protect their secret-key operations (ML-KEM decapsulation, ML-DSA signing and key
    generation): this is the factor their compute time is taken to grow by."""
    entry = _doc().get("countermeasures", {}).get(family, {}).get(operation)
    return None if entry is None else (tuple(entry["factor"]), entry["source"])


def log_uniform_quantiles(lo: float, hi: float, n: int = N_QUANTILES) -> list[float]:
    """Mid-quantiles of a log-uniform distribution on [lo, hi] (a point if lo == hi)."""
    if lo == hi:
        return [lo] * n
    a, b = math.log(lo), math.log(hi)
    return [math.exp(a + (b - a) * (i + 0.5) / n) for i in range(n)]
