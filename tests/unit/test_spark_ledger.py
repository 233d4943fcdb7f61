"""The Spark ledger folder (engines/spark/ledger.py) without a JVM: processes writing at once.

Several processes append rows and reserve budget in one folder at the same time: no row is lost
or written twice, the integer ids are 1..n, and a budget is never overspent.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import multiprocessing
import os
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed: pip install -e '.[test]'")

from inftda_sql._errors import BudgetError, ConcurrentWriteError, SpecError
from inftda_sql.core.accounting import Budget
from inftda_sql.engines.records import BudgetRecord, ReleaseRecord
from inftda_sql.engines.spark.ledger import (
    FORMAT_VERSION,
    open_folder,
)

KEY = "spark_catalog.db.people"


def _record(rho: float = 0.3) -> ReleaseRecord:
    return ReleaseRecord(
        release_id=0,
        created_at=dt.datetime(2026, 1, 1),
        input_table="people",
        output_table="people_private",
        hierarchy="[]",
        tree="single",
        domain_source="d",
        mechanism="inftda",
        guarantee="zCDP",
        privacy="bounded",
        rho=rho,
        epsilon=1.0,
        delta=1e-9,
        conversion="tight",
        budget_given="rho",
        contribution=1,
        distinct_records=False,
        privacy_unit=None,
        level_names=["root"],
        level_sensitivity=[1.0],
        level_sigma=[1.0],
        level_rho=[rho],
        seeded=False,
        non_private=[],
        library_version="x",
        details="{}",
        base_tables=[KEY],
    )


def _budget(rho: float) -> BudgetRecord:
    b = Budget.from_args(rho=rho)
    return BudgetRecord(KEY, b.rho, b.epsilon, b.delta, b.conversion, dt.datetime(2026, 1, 1))


def _appender(root: str, n: int, start: multiprocessing.synchronize.Event) -> list[int]:
    ledger = open_folder(Path(root))
    start.wait()
    return [ledger.append_release(_record(), None).release_id for _ in range(n)]


def _spender(root: str, start: multiprocessing.synchronize.Event) -> str:
    """Reserve rho 0.3 of the budget, then record the release (or say why not)."""
    ledger = open_folder(Path(root))
    start.wait()
    try:
        _, mine = ledger.reserve([KEY], None, Budget.from_args(rho=0.3), "zCDP", override=False)
    except (BudgetError, ConcurrentWriteError) as exc:
        return type(exc).__name__
    ledger.append_release(_record(), mine)
    ledger.withdraw(mine)
    return "recorded"


def _run(target: object, args: list[tuple[object, ...]]) -> list[object]:
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager:
        start = manager.Event()
        with ctx.Pool(len(args)) as pool:
            pending = [pool.apply_async(target, (*a, start)) for a in args]  # type: ignore[arg-type]
            start.set()
            return [p.get(timeout=120) for p in pending]


def test_processes_appending_at_once_lose_and_duplicate_nothing(tmp_path: Path) -> None:
    root = str(tmp_path / "ledger")
    got = _run(_appender, [(root, 15)] * 4)
    ids = sorted(i for ids in got for i in ids)  # type: ignore[attr-defined]
    assert ids == list(range(1, 61))
    rows = open_folder(Path(root)).read_releases()
    assert [r.release_id for r in rows] == ids
    assert not list((Path(root) / "tmp").iterdir())  # nothing half-written left


def test_processes_spending_at_once_never_overspend(tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    ledger = open_folder(root)
    ledger.set_budget(dataclasses.replace(_budget(1.0), input_table=KEY.upper()))  # any case
    outcomes = _run(_spender, [(str(root),)] * 6)
    rows = ledger.read_releases()
    assert outcomes.count("recorded") == len(rows) <= 3  # 3 x 0.3 <= 1 < 4 x 0.3
    assert len(rows) >= 1  # and someone got through
    assert ledger.spent(KEY) == (pytest.approx(0.3 * len(rows)), len(rows), 0)
    assert not ledger.reservations()  # every reservation withdrawn


def test_a_reservation_counts_until_recorded_then_once(tmp_path: Path) -> None:
    ledger = open_folder(tmp_path)
    note, mine = ledger.reserve([KEY], None, Budget.from_args(rho=0.4), "zCDP", override=False)
    assert note is None and mine is not None
    assert ledger.spent(KEY) == (pytest.approx(0.4), 1, 0)  # in progress: counted
    assert ledger.spent(KEY, besides=mine) == (0.0, 0, 0)
    ledger.append_release(_record(0.4), mine)
    assert ledger.spent(KEY) == (pytest.approx(0.4), 1, 0)  # recorded: still once
    ledger.withdraw(mine)
    assert ledger.spent(KEY) == (pytest.approx(0.4), 1, 0)


def test_a_reservation_of_a_dead_process_is_dropped(tmp_path: Path) -> None:
    ledger = open_folder(tmp_path)
    _, mine = ledger.reserve([KEY], None, Budget.from_args(rho=0.4), "zCDP", override=False)
    assert mine is not None
    path = ledger.reservations_dir / f"{mine.id}.json"
    payload = json.loads(path.read_text())
    dead = multiprocessing.get_context("spawn").Process(target=int)
    dead.start()
    dead.join()
    payload["reservation"]["pid"] = dead.pid
    path.write_text(json.dumps(payload))
    assert ledger.spent(KEY) == (0.0, 0, 0) and not path.exists()


def test_the_folder_is_checked_before_use(tmp_path: Path) -> None:
    open_folder(tmp_path / "l")
    fmt = tmp_path / "l" / "FORMAT"
    assert json.loads(fmt.read_text())["format"] == FORMAT_VERSION
    fmt.write_text(json.dumps({"format": FORMAT_VERSION + 1, "created_by": "inftda-sql 9"}))
    with pytest.raises(SpecError, match=r"newer than this inftda-sql .* upgrade"):
        open_folder(tmp_path / "l")
    fmt.write_text("not json")
    with pytest.raises(SpecError, match="FORMAT file that is not this package's"):
        open_folder(tmp_path / "l")
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        with pytest.raises(SpecError, match="cannot be written or read"):
            open_folder(locked / "ledger")


def test_budget_rows_append_and_the_newest_holds(tmp_path: Path) -> None:
    ledger = open_folder(tmp_path)
    ledger.set_budget(_budget(1.0))
    ledger.set_budget(dataclasses.replace(_budget(2.0), set_at=dt.datetime(2026, 1, 2)))
    assert [b.rho for b in ledger.read_budgets()] == [1.0, 2.0]
    assert ledger.budgets()[KEY.lower()].rho == 2.0


@pytest.mark.parametrize("first", ["reservations", "_rows"])
def test_a_release_that_commits_between_the_two_reads_is_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, first: str
) -> None:
    """Whichever of its two reads (reservations, committed rows) spent() makes first, another
    release that writes its row and withdraws its reservation right after that read is counted
    once: reading the rows first, it would be in neither and its rho missed (an overspend)."""
    ledger = open_folder(tmp_path)
    _, other = ledger.reserve([KEY], None, Budget.from_args(rho=0.3), "zCDP", override=False)
    real = getattr(type(ledger), first)
    done: list[bool] = []

    def read_then_commit(self: object) -> object:
        found = real(self)
        if not done:  # the other release ends between the two reads
            done.append(True)
            ledger.append_release(_record(), other)
            ledger.withdraw(other)
        return found

    monkeypatch.setattr(type(ledger), first, read_then_commit)
    rho, n, _ = ledger.spent(KEY)
    assert done and (rho, n) == (pytest.approx(0.3), 1)
