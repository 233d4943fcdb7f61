"""The drop-in has the output distribution of the ``inf-tda`` 0.1 package at the same rho.

The package runs in its own virtualenv (it needs old opendp, pandas and numpy; installed once
into the git-ignored ``.cache/``, or taken from ``$INFTDA_REF_PYTHON`` or the benchmarks'
``benchmarks/.venv-ref``), many times on a small hierarchy (a ragged region > province
geography crossed with five age bands: both of the drop-in's layouts, a nested chain and a
product cut); the drop-in runs as often with ``conversion="simple"``, the package's
Bun-Steinke conversion, so both spend the same rho. Per run and per level: the L1 and the
maximum absolute error over the union of true and released cells, and the number of released
leaf cells. Each statistic's two samples are compared with a two-sided Mann-Whitney U test and
a two-sample Kolmogorov-Smirnov test; every p-value must stay above 1e-4 divided by the number
of tests (Bonferroni). The same test must reject the drop-in with its default, tight conversion
(a larger rho, less noise): the comparison can fail.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest

pd = pytest.importorskip("pandas")
stats = pytest.importorskip("scipy.stats")

from inftda_sql.pandas import inf_tda  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.network]

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "inftda-ref"
PINS = ["inf-tda==0.1", "opendp==0.12.1", "pandas==2.2.3", "numpy==2.2.6"]
RUNS = 200
EPSILON, DELTA = 1.0, 1e-6
FLOOR = 1e-4

#: the statistics of one release, run by both interpreters (pandas only)
STATS = """
def release_stats(released, truth):
    out = {}
    for depth in range(1, truth.index.nlevels + 1):
        levels = list(range(depth))
        true = truth.groupby(level=levels).sum()
        if len(released):
            got = released.groupby(level=levels).sum()
        else:
            got = true * 0
        true, got = true.align(got, fill_value=0)
        error = (got - true).abs()
        out[f"l1_{depth}"] = int(error.sum())
        out[f"linf_{depth}"] = int(error.max())
    out["cells"] = int((released > 0).sum())
    return out
"""
namespace: dict[str, Any] = {}
exec(STATS, namespace)
release_stats = namespace["release_stats"]

REF_SCRIPT = (
    STATS
    + """
import json, sys
import pandas as pd
from InfTDA import inf_tda
spec = json.loads(sys.stdin.read())
index = pd.MultiIndex.from_tuples([tuple(t) for t in spec["index"]])
truth = pd.Series(spec["values"], index=index)
runs = []
for _ in range(spec["runs"]):
    released = inf_tda(data=truth, budget=(spec["epsilon"], spec["delta"]), contribution=1,
                       privacy_type="bounded", distinct_tuples=True)
    runs.append(release_stats(released, truth))
print(json.dumps(runs))
"""
)


def _truth() -> Any:
    provinces = {"R1": ["P1", "P2"], "R2": ["P3"], "R3": ["P4", "P5", "P6"]}
    ages = ["0-17", "18-34", "35-54", "55-74", "75+"]
    tuples = [(r, p, a) for r, ps in provinces.items() for p in ps for a in ages]
    values = [(7 * i * i + 3 * i) % 61 if i % 7 else 0 for i in range(len(tuples))]
    return pd.Series(values, index=pd.MultiIndex.from_tuples(tuples))


def _python_with_reference() -> Path:
    """An interpreter that imports InfTDA: given, the benchmarks' one, or installed once."""
    given = os.environ.get("INFTDA_REF_PYTHON")
    candidates = [Path(given)] if given else []
    candidates.append(ROOT / "benchmarks" / ".venv-ref" / "bin" / "python")
    for python in candidates:
        if python.exists() and _imports(python):
            return python
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    python = CACHE / "bin" / "python"
    with open(CACHE.parent / ".inftda-ref.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one installer at a time
        marker = CACHE / ".installed"
        if not (marker.exists() and marker.read_text() == " ".join(PINS) and _imports(python)):
            made = subprocess.run(
                [sys.executable, "-m", "venv", "--clear", str(CACHE)],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            if made.returncode != 0:
                pytest.skip(f"cannot create a virtualenv: {made.stderr.strip()[-200:]}")
            try:
                pip = subprocess.run(
                    [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                     "--only-binary", ":all:", *PINS],
                    capture_output=True, text=True, timeout=900, check=False,
                )  # fmt: skip
            except subprocess.TimeoutExpired:
                pytest.skip(f"pip install {' '.join(PINS)} timed out")
            if pip.returncode != 0:
                last = (pip.stderr.strip().splitlines() or ["no output"])[-1]
                pytest.skip(f"the reference package cannot be installed ({' '.join(PINS)}): {last}")
            marker.write_text(" ".join(PINS))
    return python


def _imports(python: Path) -> bool:
    if not python.exists():
        return False
    probe = subprocess.run(
        [str(python), "-c", "import InfTDA.mechanism"], capture_output=True, check=False
    )
    return probe.returncode == 0


def _reference_runs(truth: Any) -> list[dict[str, int]]:
    python = _python_with_reference()
    spec = {
        "index": [list(t) for t in truth.index],
        "values": [int(v) for v in truth],
        "runs": RUNS,
        "epsilon": EPSILON,
        "delta": DELTA,
    }
    proc = subprocess.run(
        [str(python), "-c", REF_SCRIPT],
        input=json.dumps(spec), capture_output=True, text=True, timeout=1800, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    runs: list[dict[str, int]] = json.loads(proc.stdout)
    return runs


def _our_runs(truth: Any, conversion: str) -> list[dict[str, int]]:
    con = duckdb.connect()  # one connection: the ledger of every run in one place
    try:
        return [
            release_stats(
                inf_tda(truth, (EPSILON, DELTA), 1, conversion=conversion, con=con), truth
            )
            for _ in range(RUNS)
        ]
    finally:
        con.close()


def _p_values(a: list[dict[str, int]], b: list[dict[str, int]]) -> dict[str, float]:
    out = {}
    for key in a[0]:
        x, y = [r[key] for r in a], [r[key] for r in b]
        if len(set(x) | set(y)) == 1:  # e.g. no error at all at the coarsest level, both sides
            continue
        out[f"{key} mann-whitney"] = float(stats.mannwhitneyu(x, y, alternative="two-sided").pvalue)
        out[f"{key} ks"] = float(stats.ks_2samp(x, y).pvalue)
    return out


def test_same_output_distribution_as_the_package_at_the_same_rho() -> None:
    truth = _truth()
    reference = _reference_runs(truth)
    ours = _our_runs(truth, "simple")
    p = _p_values(reference, ours)
    assert len(p) >= 12  # every level's L1 and max error, and the leaf cells, were compared
    floor = FLOOR / len(p)
    low = {k: v for k, v in p.items() if v < floor}
    assert not low, f"the drop-in differs from inf-tda 0.1 (Bonferroni floor {floor:.2g}): {low}"
    # The comparison has power: the default (tight) conversion spends a larger rho for the same
    # (epsilon, delta), so less noise, and the same test tells it apart.
    tight = _p_values(reference, _our_runs(truth, "tight"))
    assert min(tight[f"l1_{d} mann-whitney"] for d in (1, 2, 3)) < FLOOR / len(tight), tight
