"""JCAlgTest Java Card performance CSV -> a ``javacard`` profile (one per card file).

Public API (stable; the HBS work of issue 7 builds on it)::

    parse_card_csv(path: Path, name: str | None = None) -> Profile
    parse_card_text(text: str, where: str, name: str | None = None) -> Profile
    component_name(method: str, length: int | None = None) -> str

The AlgTest applet measures each Java Card API call (``method name:``) as
``operation stats (ms/op): avg op / min op / max op`` over many iterations,
with the applet's own baseline already subtracted; the figures still include
the host reader and APDU transport, which is why they are far above the
chip's raw crypto speed (compare the paper's MULTOS-vs-native gap).

Component naming: the method line with ``()`` dropped and blanks turned into
dots, so Java Card constants stay recognisable::

    "TYPE_AES LENGTH_AES_128 ALG_AES_BLOCK_128_CBC_NOPAD Cipher_doFinal()"
      -> "TYPE_AES.LENGTH_AES_128.ALG_AES_BLOCK_128_CBC_NOPAD.Cipher_doFinal"

``*_fixed`` files measure one data length per method (usually 256 bytes): the
component is the plain name, unit ``call``, and its note says the length.
``*_variable`` files measure several lengths per method: every length becomes
``NAME@LEN`` (unit ``call``), the first (shortest) also the plain ``NAME``,
and where two or more lengths exist a least-squares line through
(length, ms) gives ``NAME:base`` (unit ``call``) and ``NAME:per_byte``
(unit ``byte``) so that a caller can charge ``base + n * per_byte``.

Entries are skipped when they report ``NO_SUCH_ALGORITHM``, ``ILLEGAL_VALUE``,
an error status, or a zero/negative time (the data README's rules). Older
files write decimal commas (``8,84``); both forms are read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from trustlab.errors import ProfileError
from trustlab.timing.profile import Component, Profile, Provenance

SOURCE = "JCAlgTest (crocs-muni/jcalgtest_results, MIT)"

_HEADER_KEYS = {
    "Card name": "card",
    "Card ATR": "atr",
    "Used protocol": "protocol",
    "Execution date/time": "date",
    "AlgTest applet version": "applet",
}


@dataclass(frozen=True)
class Measurement:
    """One ``method name:`` block that produced a usable time."""

    method: str
    avg: float
    min: float
    max: float
    length: int | None
    line: int


def component_name(method: str, length: int | None = None) -> str:
    """The profile component name for a JCAlgTest method (and data length)."""
    base = ".".join(method.replace("()", "").split())
    return f"{base}@{length}" if length is not None else base


def _number(text: str, where: str) -> float:
    try:
        return float(text.strip().replace(",", "."))
    except ValueError:
        raise ProfileError(f"{where}: expected a number, got {text.strip()!r}") from None


def _stats(line: str, where: str) -> tuple[float, float, float]:
    cells = [c.strip() for c in line.split(";")]
    values: dict[str, float] = {}
    for i, cell in enumerate(cells[:-1]):
        if cell in ("avg op:", "min op:", "max op:"):
            values[cell[:3]] = _number(cells[i + 1], where)
    if "avg" not in values:
        raise ProfileError(f"{where}: 'operation stats' line without 'avg op:'")
    return values["avg"], values.get("min", values["avg"]), values.get("max", values["avg"])


def _length(line: str) -> int | None:
    cells = [c.strip() for c in line.split(";")]
    for i, cell in enumerate(cells[:-1]):
        if cell == "data length":
            try:
                return int(cells[i + 1])
            except ValueError:
                return None
    return None


def scan(text: str, where: str) -> tuple[dict[str, str], list[Measurement]]:
    """Header fields and usable measurements of one AlgTest performance file."""
    header: dict[str, str] = {}
    out: list[Measurement] = []
    method: str | None = None
    stats: tuple[float, float, float] | None = None
    start = 0
    length: int | None = None

    def flush() -> None:
        if method is not None and stats is not None and stats[0] > 0:
            out.append(Measurement(method, stats[0], stats[1], stats[2], length, start))

    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        key = line.split(";", 1)[0].strip()
        if key in _HEADER_KEYS and _HEADER_KEYS[key] not in header:
            header[_HEADER_KEYS[key]] = line.split(";", 1)[1].strip().strip(";").strip() if ";" in line else ""
            continue
        if key == "method name:":
            flush()
            # newer files: "method name:; NAME"; older: "method name:; NAME;LEN;"
            cells = [c.strip() for c in line.split(";")[1:]]
            method = cells[0] if cells else ""
            stats, length, start = None, None, lineno
            if not method:
                method = None
            continue
        if method is None:
            continue
        if key == "operation stats (ms/op):":
            stats = _stats(line, f"{where}:{lineno}")
        elif key == "operation info:":
            length = _length(line)
        elif key.startswith(("NO_SUCH_ALGORITHM", "ILLEGAL_VALUE", "UNKONWN_ERROR", "UNKNOWN_ERROR",
                             "SW_ALG_OPS_NOT_SUPPORTED", "CANT_BE_MEASURED", "CryptoException")):
            stats = None
            flush()
            method = None
    flush()
    return header, out


def _slug(stem: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", stem.lower()).strip("-")


def parse_card_text(text: str, where: str, name: str | None = None) -> Profile:
    """Build a profile from the text of one JCAlgTest Java Card file."""
    if "AlgTest" not in text[:20000] and "Card ATR" not in text[:20000]:
        raise ProfileError(f"{where}: not a JCAlgTest Java Card file (no AlgTest header)")
    header, measurements = scan(text, where)
    if not measurements:
        raise ProfileError(f"{where}: no usable measurements (every entry failed or was unsupported)")
    stem = Path(where).stem
    table = Path(where).name
    components: dict[str, Component] = {}

    def add(cname: str, mean: float, unit: str, note: str) -> None:
        final, k = cname, 2
        while final in components:
            final, k = f"{cname}#{k}", k + 1
        components[final] = Component(
            name=final, mean=float(mean), unit=unit,
            provenance=Provenance(source=SOURCE, table=table, note=note))

    by_method: dict[str, list[Measurement]] = {}
    for m in measurements:
        by_method.setdefault(m.method, []).append(m)
    variable = any(len({m.length for m in ms}) > 1 for ms in by_method.values())
    for method, ms in by_method.items():
        lengths = sorted({m.length for m in ms if m.length is not None})
        def note(m: Measurement) -> str:
            size = f"data length {m.length} B; " if m.length is not None else ""
            return f"{size}min {m.min:g} max {m.max:g}; line {m.line}"
        if len(lengths) <= 1:
            for m in ms:
                add(component_name(method), m.avg, "call", note(m))
            continue
        first = min(ms, key=lambda m: (m.length or 0, m.line))
        add(component_name(method), first.avg, "call", note(first))
        per_len: dict[int, list[float]] = {}
        for m in ms:
            if m.length is not None:
                per_len.setdefault(m.length, []).append(m.avg)
                add(component_name(method, m.length), m.avg, "call", note(m))
        x = np.array([m.length for m in ms if m.length is not None], dtype=float)
        y = np.array([m.avg for m in ms if m.length is not None], dtype=float)
        slope, intercept = np.polyfit(x, y, 1)
        fit_note = f"least-squares line over data lengths {', '.join(map(str, lengths))} B"
        add(component_name(method) + ":per_byte", max(0.0, float(slope)), "byte", fit_note)
        add(component_name(method) + ":base", max(0.0, float(intercept)), "call", fit_note)
    desc_bits = [header.get("card", stem), "Java Card", "JCAlgTest " + ("variable-length" if variable else "fixed-length")]
    if "protocol" in header:
        desc_bits.append(header["protocol"])
    return Profile(
        name=name or _slug(stem),
        components=components,
        family="javacard",
        version="1",
        description=", ".join(desc_bits),
        provenance=Provenance(
            source=SOURCE, table=table,
            note="; ".join([f"{k} {v}" for k, v in header.items() if k in ("card", "atr", "date", "applet")]
                           + ["ms per operation measured from the host: includes reader and APDU transport"]),
        ),
    )


def parse_card_csv(path: Path, name: str | None = None) -> Profile:
    """One Java Card profile (family ``javacard``) from a JCAlgTest CSV file."""
    from trustlab import limits

    raw = limits.read_bytes(path, "JCAlgTest file", error=ProfileError)  # bounded; a regular file only
    text = raw.decode("utf-8-sig", errors="replace")
    return parse_card_text(text, str(path), name=name)
