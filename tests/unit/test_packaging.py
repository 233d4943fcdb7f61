"""The wheel ships the SQL templates, and the public surface is exactly what we export."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import inftda_sql

ROOT = Path(__file__).resolve().parents[2]


def test_public_names_are_pinned() -> None:
    """Nothing leaks into the API by accident: __all__ is the documented surface, sorted."""
    expected = [
        "Accounting",
        "Budget",
        "BudgetError",
        "BudgetExceededError",
        "ConcurrentWriteError",
        "CountOfCountsRelease",
        "Domain",
        "DomainError",
        "InftdaError",
        "InputDataError",
        "InternalError",
        "Ledger",
        "OutputExistsError",
        "Plan",
        "Release",
        "SpecError",
        "__version__",
        "connect",
        "evaluate",
        "evaluate_count_of_counts",
        "intopt",
        "ledger",
        "plan",
        "plot_bounds",
        "plot_evaluation",
        "plot_zoom",
        "publish",
        "register",
        "release",
        "release_count_of_counts",
        "sample_discrete_gaussian",
        "set_budget",
        "storage_version",
    ]
    assert inftda_sql.__all__ == expected
    for name in expected:
        assert hasattr(inftda_sql, name)


def test_wheel_contains_sql_templates(tmp_path: Path) -> None:
    pytest.importorskip("hatchling")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(ROOT),
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    (wheel,) = tmp_path.glob("inftda_sql-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for sql in (ROOT / "sql").glob("*.sql"):
        assert f"inftda_sql/sql/{sql.name}" in names
    assert "inftda_sql/py.typed" in names
