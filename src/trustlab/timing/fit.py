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
    weight: float = 1.0
    family: str | None = None  # the formula family the terms came from, if any


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
        }


@dataclass
class _Design:
    free: list[str]
    matrix: np.ndarray
    target: np.ndarray
    sqrt_w: np.ndarray
    fixed: dict[str, float] = field(default_factory=dict)


def _design(measurements: Sequence[Measurement], fixed: Mapping[str, float]) -> _Design:
    components: list[str] = []
    for m in measurements:
        for comp in m.terms:
            if comp not in components:
                components.append(comp)
    unknown_fixed = sorted(set(fixed) - set(components))
    if unknown_fixed:
        raise FitError(f"--fix names component(s) not in any measurement: {', '.join(unknown_fixed)}")
    for name, value in fixed.items():
        if not math.isfinite(value) or value < 0:
            raise FitError(f"--fix {name}={value}: a cost must be a non-negative number")
    free = [c for c in components if c not in fixed]
    if not free:
        raise FitError("every component is fixed; nothing to fit")
    a = np.array([[m.terms.get(c, 0.0) for c in free] for m in measurements], dtype=float)
    offset = np.array([sum(m.terms.get(c, 0.0) * v for c, v in fixed.items()) for m in measurements])
    y = np.array([m.ms for m in measurements], dtype=float) - offset
    w = np.array([m.weight for m in measurements], dtype=float)
    if np.any(w <= 0) or not np.all(np.isfinite(w)):
        raise FitError("weights must be positive numbers")
    return _Design(free=free, matrix=a, target=y, sqrt_w=np.sqrt(w), fixed=dict(fixed))


def _unidentifiable(free: list[str], a: np.ndarray) -> list[list[str]]:
    """Groups of components whose columns are linearly dependent."""
    _, s, vt = np.linalg.svd(a, full_matrices=True)
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


def fit(measurements: Sequence[Measurement], fixed: Mapping[str, float] | None = None) -> FitResult:
    fixed = dict(fixed or {})
    if not measurements:
        raise FitError("no measurements to fit")
    d = _design(measurements, fixed)
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
    loo = _leave_one_out(aw, yw, d.matrix)
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
    return FitResult(params=params, stderr=stderr, fixed=fixed, rows=rows, dof=dof)


def _leave_one_out(aw: np.ndarray, yw: np.ndarray, a: np.ndarray) -> list[float | None]:
    """Prediction of each row by a fit that never saw it (None if unidentifiable)."""
    n, p = aw.shape
    out: list[float | None] = []
    for i in range(n):
        keep = np.arange(n) != i
        sub = aw[keep]
        if sub.shape[0] < p or np.linalg.matrix_rank(sub) < p:
            out.append(None)
            continue
        x = _solve(sub, yw[keep])
        out.append(float(a[i] @ x))
    return out
