"""Measurements in, profile out: how a user profiles a new chip.

Each measurement is a row of the design matrix (coefficients per component,
from a command's formula or given directly) and a measured time. Costs are
non-negative, so the fit is bounded least squares (``scipy.optimize.lsq_linear``);
components a user already knows can be held fixed. The paper found that rate
variables are hard to isolate — so a fit that cannot separate two components
says which ones, instead of returning arbitrary numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
from scipy.optimize import lsq_linear

from trustlab.errors import FitError


@dataclass(frozen=True)
class Measurement:
    label: str
    terms: Mapping[str, float]
    ms: float
    weight: float | None = None  # None: no weight given (counts as 1 under weighting="given")
    family: str | None = None  # the formula family the terms came from, if any
    center: str = "mean"  # what ``ms`` summarises: mean, median or min of the samples (trustlab measure --center)


@dataclass(frozen=True)
class FitRow:
    command: str
    measured_ms: float
    fitted_ms: float
    residual_ms: float
    loo_ms: float | None


@dataclass(frozen=True)
class FitResult:
    params: dict[str, float]
    stderr: dict[str, float]
    fixed: dict[str, float]
    rows: list[FitRow]
    rank_note: str = ""
    dof: int = 0
    weighting: str = "given"

    @property
    def max_abs_residual_ms(self) -> float:
        return max((abs(r.residual_ms) for r in self.rows), default=0.0)

    @property
    def max_rel_residual(self) -> float:
        return max((abs(r.residual_ms) / abs(r.measured_ms) for r in self.rows if r.measured_ms), default=0.0)

    def to_dict(self) -> dict:
        return {
            "params": self.params,
            "stderr": self.stderr,
            "fixed": self.fixed,
            "rows": [r.__dict__ for r in self.rows],
            "max_abs_residual_ms": self.max_abs_residual_ms,
            "max_rel_residual": self.max_rel_residual,
            "dof": self.dof,
            "weighting": self.weighting,
        }


@dataclass
class _Design:
    free: list[str]
    matrix: np.ndarray
    target: np.ndarray
    sqrt_w: np.ndarray
    fixed: dict[str, float] = field(default_factory=dict)


WEIGHTINGS = ("given", "relative", "none")


def _weights(measurements: Sequence[Measurement], weighting: str) -> np.ndarray:
    """Row weights: the measurements' own (``given``, e.g. 1/variance from ``trustlab measure``),
    1/ms^2 (``relative``: every row's relative error counts alike, so slow key generations
    do not swamp fast commands), or 1 (``none``)."""
    if weighting == "none":
        return np.ones(len(measurements))
    if weighting == "relative":
        ms = np.array([m.ms for m in measurements], dtype=float)
        zero = np.flatnonzero(ms < 1e-12)  # 1/ms^2 of a smaller time overflows a double
        if zero.size:
            raise FitError(f"--weights relative: row {measurements[zero[0]].label!r} measured {ms[zero[0]]} ms; "
                           "relative weights (1/ms^2) need positive times (at least 1e-12 ms)")
        return 1.0 / ms ** 2
    if weighting == "given":
        w = np.array([1.0 if m.weight is None else m.weight for m in measurements], dtype=float)
        bad = np.flatnonzero(~np.isfinite(w) | (w <= 0))
        if bad.size:
            raise FitError(f"row {measurements[bad[0]].label!r}: weight {w[bad[0]]} is not a positive number")
        return w
    raise FitError(f"weighting {weighting!r}: expected one of {', '.join(WEIGHTINGS)}")


def _design(measurements: Sequence[Measurement], fixed: Mapping[str, float], weighting: str) -> _Design:
    components = list(dict.fromkeys(comp for m in measurements for comp in m.terms))
    unknown_fixed = sorted(set(fixed) - set(components))
    if unknown_fixed:
        raise FitError(f"--fix names component(s) not in any measurement: {', '.join(unknown_fixed)}")
    for name, value in fixed.items():
        if not math.isfinite(value) or value < 0:
            raise FitError(f"--fix {name}={value}: a cost must be a non-negative number")
    free = [c for c in components if c not in fixed]
    if not free:
        raise FitError("every component is fixed; nothing to fit")
    column = {c: i for i, c in enumerate(components)}
    full = np.zeros((len(measurements), len(components)))
    for i, m in enumerate(measurements):
        for comp, coef in m.terms.items():
            full[i, column[comp]] = coef
    if not np.all(np.isfinite(full)):
        raise FitError("a coefficient is not a finite number")
    free_idx = [column[c] for c in free]
    fixed_idx = [column[c] for c in fixed]
    a = full[:, free_idx]
    offset = full[:, fixed_idx] @ np.array(list(fixed.values()), dtype=float) if fixed else np.zeros(len(measurements))
    y = np.array([m.ms for m in measurements], dtype=float) - offset
    w = _weights(measurements, weighting)
    return _Design(free=free, matrix=a, target=y, sqrt_w=np.sqrt(w), fixed=dict(fixed))


def _unidentifiable(free: list[str], a: np.ndarray) -> list[list[str]]:
    """Groups of components whose columns are linearly dependent.

    The SVD runs on R of a QR of the (rows x components) matrix: same singular values and
    null space, but a components x components problem, so 100k rows cost one QR."""
    r = np.linalg.qr(a, mode="r") if a.shape[0] > a.shape[1] else a
    _, s, vt = np.linalg.svd(r, full_matrices=True)
    tol = max(a.shape) * np.finfo(float).eps * (s[0] if s.size else 0.0)
    rank = int(np.sum(s > tol))
    groups = []
    for vec in vt[rank:]:
        involved = [free[i] for i in np.flatnonzero(np.abs(vec) > 1e-8 * np.abs(vec).max())]
        if involved and involved not in groups:
            groups.append(involved)
    return groups


def _solve(a: np.ndarray, y: np.ndarray) -> np.ndarray:
    scale = np.linalg.norm(a, axis=0)
    scale[scale == 0] = 1.0  # rescaling columns keeps per-byte rates and per-call costs comparable
    res = lsq_linear(a / scale, y, bounds=(0.0, np.inf), method="bvls", tol=1e-12)
    return res.x / scale


def fit(measurements: Sequence[Measurement], fixed: Mapping[str, float] | None = None,
        weighting: str = "given") -> FitResult:
    """Bounded least squares of ``measurements``; ``weighting`` is one of :data:`WEIGHTINGS`."""
    fixed = dict(fixed or {})
    if not measurements:
        raise FitError("no measurements to fit")
    d = _design(measurements, fixed, weighting)
    aw = d.matrix * d.sqrt_w[:, None]
    yw = d.target * d.sqrt_w
    groups = _unidentifiable(d.free, aw)
    if groups:
        described = "; ".join("{" + ", ".join(g) + "}" for g in groups)
        raise FitError(
            f"the measurements cannot separate these components: {described}. "
            "Add commands that use them differently, or hold some fixed with --fix COMPONENT=VALUE"
        )
    x = _solve(aw, yw)
    n, p = aw.shape
    dof = n - p
    resid_w = yw - aw @ x
    stderr: dict[str, float] = {}
    if dof > 0:
        sigma2 = float(resid_w @ resid_w) / dof
        cov = sigma2 * np.linalg.pinv(aw.T @ aw)
        stderr = {c: float(math.sqrt(max(cov[i, i], 0.0))) for i, c in enumerate(d.free)}
    else:
        stderr = {c: float("nan") for c in d.free}
    fitted = d.matrix @ x
    loo = _leave_one_out(aw, yw, d.sqrt_w, x)
    offset = np.array([m.ms for m in measurements]) - d.target
    rows = [
        FitRow(
            command=m.label,
            measured_ms=m.ms,
            fitted_ms=float(fitted[i] + offset[i]),
            residual_ms=float(m.ms - fitted[i] - offset[i]),
            loo_ms=None if loo[i] is None else float(loo[i] + offset[i]),
        )
        for i, m in enumerate(measurements)
    ]
    params = {c: float(x[i]) for i, c in enumerate(d.free)}
    params.update(fixed)
    return FitResult(params=params, stderr=stderr, fixed=fixed, rows=rows, dof=dof, weighting=weighting)


def _leave_one_out(aw: np.ndarray, yw: np.ndarray, sqrt_w: np.ndarray, x: np.ndarray) -> list[float | None]:
    """Prediction of each row by a fit that never saw it (None if that row alone identifies a component).

    Closed form from the hat matrix H = A (A'A)^-1 A' of the components the bounded fit left
    free (x > 0; those at the zero bound stay there): the deleted residual is e_i / (1 - h_ii).
    One QR instead of refitting N times, so it is linear in the rows.
    """
    n = aw.shape[0]
    active = np.flatnonzero(x > 0)
    resid = yw - aw @ x
    if active.size == 0:
        lev = np.zeros(n)
    else:
        q, _ = np.linalg.qr(aw[:, active], mode="reduced")
        lev = np.einsum("ij,ij->i", q, q)
    out: list[float | None] = []
    for i in range(n):
        if lev[i] > 1.0 - 1e-9:
            out.append(None)
            continue
        pred_w = yw[i] - resid[i] / (1.0 - lev[i])
        out.append(float(pred_w / sqrt_w[i]))
    return out
