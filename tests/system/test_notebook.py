"""The example notebook runs end to end on the demo data.

It is executed cell by cell in a fresh Jupyter kernel running this interpreter, in a temporary
folder. The test skips (with the reason) only when no kernel can start; any error in a cell
fails it.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

import inftda_sql

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "examples" / "quickstart.ipynb"
KERNEL = "inftda-sql-test"
#: public names the notebook calls
USED = ("connect", "plan", "release", "evaluate", "plot_evaluation", "plot_zoom", "ledger",
        "storage_version")  # fmt: skip


def _outputs(cell: Any, kind: str) -> list[Any]:
    return [o for o in cell.get("outputs", []) if o.get("output_type") == kind]


def _text(cell: Any) -> str:
    """Everything a cell printed or displayed, as text (plain and HTML)."""
    parts = []
    for o in cell.get("outputs", []):
        if o.get("output_type") == "stream":
            parts.append(o["text"])
        for kind in ("text/plain", "text/html"):
            parts.append(o.get("data", {}).get(kind, ""))
    return "".join(parts)


def test_notebook_is_stored_without_outputs() -> None:
    nb = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code
    assert all(not c["outputs"] and c["execution_count"] is None for c in code)


def test_notebook_runs_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nbformat = pytest.importorskip("nbformat", reason="nbformat is in the test extra")
    nbclient = pytest.importorskip("nbclient", reason="nbclient is in the test extra")
    missing = [name for name in USED if not hasattr(inftda_sql, name)]
    assert not missing, f"the notebook uses inftda_sql.{', '.join(missing)}: export them"

    # a kernel spec of its own, running this interpreter (user or system specs named python3
    # could point to another Python), found first through JUPYTER_PATH
    spec_dir = tmp_path / "jupyter" / "kernels" / KERNEL
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": KERNEL,
                "language": "python",
            }
        ),
        encoding="utf-8",
    )
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")  # jupyter_core's future default, no warning
    monkeypatch.setenv("MPLBACKEND", "Agg")
    work = tmp_path / "work"
    work.mkdir()

    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        kernel_name=KERNEL,
        timeout=300,
        startup_timeout=120,
        resources={"metadata": {"path": str(work)}},
    )
    client.reset_execution_trackers()
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(client.setup_kernel())
        except Exception as exc:  # no kernel: ipykernel missing, no sockets, ...
            pytest.skip(f"a Jupyter kernel cannot start here: {type(exc).__name__}: {exc}")
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)  # raises CellExecutionError on any error

    code = [c for c in nb.cells if c.cell_type == "code"]
    (work / "executed.ipynb").write_text(nbformat.writes(nb), encoding="utf-8")
    assert all(not _outputs(c, "error") for c in code)
    text = "\n".join(_text(c) for c in code)
    assert "origin/destination pairs" in text
    assert "Comune" in text  # the join with the geography table
    assert "release #1: trips -" in text  # the Release summary
    assert "storage format: v1.0.0" in text
    images = [o for c in code for o in _outputs(c, "display_data") if "image/png" in o["data"]]
    assert len(images) == 2
    for name in ("notebook_demo.duckdb", "errors.png", "zoom.png"):
        assert (work / name).exists(), name
