"""Reading measurement CSVs for :mod:`trustlab.timing.fit`.

Two shapes are accepted. With a ``command`` column, each row's coefficients come
from that command's formula (``variant`` picks e.g. the key type). Without it,
every column other than ``ms`` and the descriptive ones is a component whose
value is that row's coefficient. Descriptive columns (``sd``, ``n``,
percentiles ...) are what ``trustlab measure`` writes beside the mean; they are
carried, not fitted. Anything else is a typo and is refused, naming the column.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Callable

from trustlab import limits
from trustlab.errors import FitError, FormulaError, one_line
from trustlab.timing import formulas
from trustlab.timing.fit import Measurement

DESCRIPTIVE = {"sd", "n", "min", "max", "p50", "p90", "p95", "p99", "median", "suite", "note", "family",
               "center"}
CENTERS = ("mean", "median", "min")


# Magnitudes a fit can square and sum without overflowing a double (1e308 gave NaN and numpy warnings):
# ms up to limits.MAX_COMPONENT_MS (~31 years), a coefficient (calls, bytes) up to 1e12, a weight up to 1e30.
MAX_COEFFICIENT = 1e12
MAX_WEIGHT = 1e30


def _float(value: str, where: str, limit: float | None = None) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise FitError(f"{where}: expected a number, got {_short(value)}") from None
    if not math.isfinite(number):
        raise FitError(f"{where}: expected a finite number, got {_short(value)}")
    if limit is not None and abs(number) > limit:
        raise FitError(f"{where}: {_short(value)} is beyond the limit of {limit:g} (the fit would overflow)")
    return number


def _short(value: str) -> str:
    return repr(value) if len(value) <= 40 else f"{value[:20]!r}...({len(value)} characters)"


COLUMNS_SHOWN = 80
"""Characters of a header's column names an error quotes: a junk first line must not fill the screen."""


def _columns(names: list[str]) -> str:
    """Column names for an error: one line, at most :data:`COLUMNS_SHOWN` characters, what was cut said."""
    text = one_line(", ".join(names))
    if len(text) <= COLUMNS_SHOWN:
        return text or "nothing"
    return f"{text[:COLUMNS_SHOWN]}… (the first {COLUMNS_SHOWN} of {len(text)} characters, {len(names)} column(s))"


def read_measurements(path: Path, family: str | None = None,
                      known_components: Callable[[], set[str]] | None = None) -> list[Measurement]:
    """Rows of a measurement CSV; ``known_components`` is asked only for component-column CSVs."""
    text = limits.read_text(path, "measurements")
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        columns = [c.strip() for c in (reader.fieldnames or [])]
        rows = _rows(path, reader, columns, family, known_components)
    except csv.Error as exc:
        raise FitError(f"{limits.shown(path)}:{reader.line_num}: not a CSV row ({exc})") from None
    if not rows:
        raise FitError(f"{path}: no measurement rows")
    return rows


def _rows(path: Path, reader: csv.DictReader, columns: list[str], family: str | None,
          known_components: Callable[[], set[str]] | None) -> list[Measurement]:
    if "ms" not in columns:
        raise FitError(f"{limits.shown(path)}: needs an 'ms' column in its first line; found: {_columns(columns)}")
    by_formula = "command" in columns
    extra = set(columns) - DESCRIPTIVE - {"ms", "weight", "command", "variant"}
    if by_formula and extra:
        raise FitError(f"{limits.shown(path)}: unknown column(s) {_columns(sorted(extra))} "
                       "(with a 'command' column only ms, weight, variant and descriptive columns are allowed)")
    if not by_formula:
        if not extra:
            raise FitError(f"{path}: no component columns and no 'command' column")
        unknown = extra - known_components() if known_components is not None else set()
        if unknown:
            raise FitError(f"{limits.shown(path)}: unknown column(s) {_columns(sorted(unknown))} "
                           f"(not a component of any shipped profile)")
    rows: list[Measurement] = []
    component_columns = sorted(extra)
    terms_of: dict[tuple[str, str | None, str | None], tuple[dict[str, float], str]] = {}
    for raw in reader:
        lineno = reader.line_num
        where = f"{path}:{lineno}"
        if None in raw:
            raise FitError(f"{where}: {len(columns) + len(raw[None])} fields, but the header has {len(columns)}")
        if len(rows) >= limits.MAX_ROWS:
            raise FitError(f"{path}: more than {limits.MAX_ROWS} measurement rows (the limit)")
        row = {(k or "").strip(): (v or "").strip() for k, v in raw.items()}
        ms = _float(row.get("ms", ""), f"{where}: ms", limits.MAX_COMPONENT_MS)
        if ms < 0:
            raise FitError(f"{where}: ms must not be negative")
        weight = _float(row["weight"], f"{where}: weight", MAX_WEIGHT) if row.get("weight") else None
        if weight is not None and weight <= 0:
            raise FitError(f"{where}: weight must be positive, got {row['weight']!r}")
        center = row.get("center") or "mean"
        if center not in CENTERS:
            raise FitError(f"{where}: center {center!r}: expected one of {', '.join(CENTERS)}")
        if by_formula:
            command = row.get("command", "")
            variant = row.get("variant") or None
            lookup = (command, variant, family or row.get("family") or None)
            if lookup not in terms_of:
                terms_of[lookup] = _formula_terms(*lookup, where)
            terms, row_family = terms_of[lookup]
            label = f"{command}[{variant}]" if variant else command
        else:
            terms = {c: _float(row[c], f"{where}: {c}", MAX_COEFFICIENT) for c in component_columns if row.get(c, "") != ""}
            label = row.get("note") or f"row {lineno}"
            row_family = family
        rows.append(Measurement(label=label, terms=terms, ms=ms, weight=weight, family=row_family,
                                center=center))
    return rows


def _formula_terms(command: str, variant: str | None, family: str | None,
                   where: str) -> tuple[dict[str, float], str]:
    if not command:
        raise FitError(f"{where}: empty command")
    candidates = [family] if family else formulas.families()
    errors = []
    for fam in candidates:
        try:
            return formulas.lookup(fam, command, variant).all_terms, fam  # a measured keygen includes it
        except FormulaError as exc:
            errors.append(str(exc))
    if len(candidates) == 1:
        raise FitError(f"{where}: {errors[0]}")
    raise FitError(f"{where}: no formula for command {command!r} in any family ({', '.join(candidates)})")
