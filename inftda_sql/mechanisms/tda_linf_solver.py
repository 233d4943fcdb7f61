"""TDA-Linf with a black-box solver: IntOpt's integer Chebyshev problem, solved by a MILP.

Per parent, ``min max |x_i - y_i|`` over non-negative integers ``x`` with ``sum x = target``,
posed as a MILP and solved by ``scipy.optimize.milp`` (HiGHS; the optional extra
``inftda-sql[solver]``). Same optimal distance as IntOpt, ties broken however the solver does;
a Python loop per parent (that is the point of the comparison). Consistent, non-negative
integers. zCDP.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._errors import Arg, InternalError, SpecError
from .._interrupts import critical
from ..core.accounting import Budget
from ..core.arrays import I64
from ..core.tree import TopDownResult
from ._shared import check_segments
from .base import Mechanism, MechanismContext

__all__ = [
    "MECHANISM",
    "SOLVER_HINT",
    "linf_milp_optimizer",
    "require_solver",
    "run_tda_linf_solver",
]


#: how to install the optional MILP solver
SOLVER_HINT = "pip install 'inftda-sql[solver]'"


def require_solver() -> tuple[Any, Any]:
    """``(scipy.optimize, scipy.sparse)``, or a SpecError naming the extra that provides them."""
    try:
        with critical():  # a Ctrl-C here is not a missing scipy
            from scipy import optimize, sparse  # type: ignore[import-untyped, unused-ignore]
    except ImportError as exc:
        raise SpecError(
            "mechanism 'tda_linf_solver' needs scipy (scipy.optimize.milp with HiGHS), which is "
            f"not installed: {SOLVER_HINT}, or use ",
            Arg("mechanism", "inftda"),
            " (the same problem solved by IntOpt, no solver needed)",
            param="mechanism",
        ) from exc
    return optimize, sparse


def _milp_one(scipy: tuple[Any, Any], y: I64, c: int) -> I64:
    """min t s.t. |x_i - y_i| <= t, sum x = c, x >= 0 integer: one parent, by the solver."""
    opt, sp = scipy
    d = y.size
    eye = sp.eye_array(d, format="csr")
    col = sp.csr_array(np.ones((d, 1)))
    a = sp.vstack(
        [
            sp.hstack([eye, -col]),  # x_i - t <= y_i
            sp.hstack([eye, col]),  # x_i + t >= y_i
            sp.csr_array(np.append(np.ones(d), 0.0)[None, :]),  # sum x = c
        ],
        format="csr",
    )
    yf = y.astype(np.float64)
    lb = np.concatenate([np.full(d, -np.inf), yf, [c]])
    ub = np.concatenate([yf, np.full(d, np.inf), [c]])
    res = opt.milp(
        np.append(np.zeros(d), 1.0),
        integrality=np.append(np.ones(d), 0.0),
        bounds=opt.Bounds(np.zeros(d + 1), np.append(np.full(d, float(c)), np.inf)),
        constraints=opt.LinearConstraint(a, lb, ub),
        options={"mip_rel_gap": 0.0},
    )
    if res.x is None or not res.success:
        raise InternalError(f"the MILP solver failed on a parent ({res.status}: {res.message})")
    x: I64 = np.rint(res.x[:d]).astype(np.int64)
    if int(x.sum()) != c or np.any(x < 0):
        raise InternalError("the MILP solver's rounded solution does not sum to the parent")
    return x


def linf_milp_optimizer(y: I64, targets: I64, offsets: I64) -> I64:
    """TDA-Linf's per-level step: the integer Chebyshev problem per parent, by HiGHS.

    ``min max |x_i - y_i|`` over non-negative integers ``x`` with ``sum x = target``, posed as
    a MILP (``t`` continuous, ``x`` integer, relative gap 0) and solved parent by parent;
    parents with value 0 or a single child are set directly.
    """
    scipy = require_solver()
    yv = np.asarray(y, dtype=np.int64)
    tv = np.asarray(targets, dtype=np.int64)
    ov = np.asarray(offsets, dtype=np.int64)
    out = np.zeros(yv.size, dtype=np.int64)
    if yv.size == 0:
        return out
    check_segments(yv, tv, ov)
    ends = np.append(ov[1:], yv.size)
    for a, b, c in zip(ov.tolist(), ends.tolist(), tv.tolist(), strict=True):
        if c == 0:
            continue
        if b - a == 1:
            out[a] = c
        else:
            out[a:b] = _milp_one(scipy, yv[a:b], c)
    return out


def run_tda_linf_solver(ctx: MechanismContext) -> TopDownResult:
    """TopDown with :func:`linf_milp_optimizer` (HiGHS per parent) in place of IntOpt."""
    require_solver()
    return ctx.topdown(linf_milp_optimizer)


def _requires(budget: Budget) -> None:
    require_solver()


MECHANISM = Mechanism(
    name="tda_linf_solver",
    summary="TopDown with the integer Chebyshev problem solved by a MILP solver (HiGHS)",
    run=run_tda_linf_solver,
    requires=_requires,
    topdown_step=linf_milp_optimizer,
    error_analysis="linf",
)
