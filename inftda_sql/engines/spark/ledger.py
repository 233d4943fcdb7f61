"""The ledger and budgets on Spark: an append-only folder of small files that outlives sessions.

Where: the folder given as ``ledger=`` (:func:`inftda_sql.spark.release`, the budget functions),
else the Spark conf ``spark.inftda.ledger``, else ``inftda_ledger`` beside the warehouse
(``<spark.sql.warehouse.dir>/inftda_ledger``). So a second session, a second application and a
restarted one (same warehouse or same conf) read the same rows, whatever catalog Spark keeps. It
is opened and checked (created if missing, readable, writable, a format this version reads)
before a release reads any private data (:func:`open_ledger`).

Layout (``FORMAT`` names the layout version)::

    releases/000000000007.json   one per release: its ReleaseRecord, release_id 7
    budgets/<ns>-<uuid>.json     one per set_budget: the newest row of a table holds
    reservations/<uuid>.json     what a release in progress will spend (removed when it ends)
    tmp/                         files being written (then linked or renamed in place)

Nothing is rewritten or lost: every file is written under a temporary name, flushed to disk, then
given its final name in one step. A release row takes its integer ``release_id`` by
``os.link(tmp, releases/<id>.json)``, which fails if that name exists: two applications that
pick the same next id cannot both get it; the loser takes the next one. So ids are unique and
each row is written exactly once.

Budgets are never overspent by releases running at once: before it reads the data, a release
writes a reservation (what it will spend, charged to its base tables) and then checks the
budget against the committed rows plus EVERY other reservation. Of two releases that reserve at
the same time, the one that checks last sees both (each wrote before it read), so they cannot
both pass on the same remaining budget; when reservations of others are what make it too much,
a release withdraws its own, waits a random moment and tries again, a few times. The written row
names its reservation, so the pair is counted once; the reservation is removed after. A
reservation left by a process that died on this host is removed when read; one from another host
counts until it is deleted (its file names the host and process).

These guarantees need a filesystem with atomic rename and ``link``, and read-after-write
visibility across machines: a local disk, or a shared POSIX filesystem every driver mounts (NFS
and the like). Object stores (``s3a://``, ``gs://``, ``abfss://``) and HDFS have no exclusive
create reachable from Python here: a ledger there is refused with a message naming a mounted
folder to use instead.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import errno
import json
import os
import random
import socket
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from pyspark.sql import SparkSession
from pyspark.sql import types as T

from ..._errors import Arg, BudgetError, ConcurrentWriteError, SpecError
from ..._version import __version__
from ...core.accounting import Budget, Guarantee, RhoZCDPBudget, budget_verdict
from ..records import BUDGET_TABLE, LEDGER_TABLE, BudgetRecord, ReleaseRecord

__all__ = [
    "BUDGET_TABLE",
    "CONF_KEY",
    "FORMAT_VERSION",
    "LEDGER_TABLE",
    "FileLedger",
    "Reservation",
    "ledger_location",
    "open_folder",
    "open_ledger",
    "register_views",
    "schema",
    "struct",
]

#: the Spark conf key naming the ledger folder
CONF_KEY = "spark.inftda.ledger"
#: the layout version this package writes and reads
FORMAT_VERSION = 1
#: how many times a release withdraws its reservation and tries again when others' are in the way
_RESERVE_TRIES = 6

_SPARK_TYPES: dict[str, T.DataType] = {
    "INTEGER": T.IntegerType(),
    "TIMESTAMP": T.TimestampNTZType(),
    "VARCHAR": T.StringType(),
    "DOUBLE": T.DoubleType(),
    "BOOLEAN": T.BooleanType(),
    "VARCHAR[]": T.ArrayType(T.StringType()),
    "DOUBLE[]": T.ArrayType(T.DoubleType()),
}


def struct(record: type[ReleaseRecord] | type[BudgetRecord]) -> T.StructType:
    """The Spark schema of a bookkeeping table, from the record's fields (built in Python: no
    round trip to Spark's parser)."""
    fields = []
    for f in dataclasses.fields(record):
        sql = f.metadata["sql"].replace(" PRIMARY KEY", "").replace(" NOT NULL", "")
        fields.append(T.StructField(f.name, _SPARK_TYPES[sql]))
    return T.StructType(fields)


def schema(record: type[ReleaseRecord] | type[BudgetRecord]) -> str:
    """:func:`struct` as a DDL string."""
    return ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in struct(record).fields)


def ledger_location(spark: SparkSession, given: str | os.PathLike[str] | None = None) -> Path:
    """The ledger folder: ``given``, else the conf ``spark.inftda.ledger``, else
    ``inftda_ledger`` in the warehouse folder. Only a folder the driver mounts is accepted."""
    where: str
    param = "ledger"
    if given is not None:
        where = os.fspath(given)
    elif spark.conf.get(CONF_KEY, None):
        where, param = str(spark.conf.get(CONF_KEY)), CONF_KEY
    else:
        warehouse = str(spark.conf.get("spark.sql.warehouse.dir", None) or "spark-warehouse")
        where, param = warehouse.rstrip("/") + "/inftda_ledger", "spark.sql.warehouse.dir"
    url = urlparse(where)
    if url.scheme == "file":
        return Path(url.path).absolute()
    if url.scheme and len(url.scheme) > 1:  # not a Windows drive letter
        raise SpecError(
            f"the ledger folder {where!r} (from {param}) is on {url.scheme}://, where this package "
            "cannot create files exclusively, so concurrent releases could lose ledger rows or "
            "overspend a budget; name a folder every driver mounts (a local or NFS path) with ",
            Arg("ledger", "/path/to/inftda_ledger"),
            f" or the Spark conf {CONF_KEY}",
            param="ledger",
        )
    return Path(where).absolute()


@dataclass(frozen=True)
class Reservation:
    """What a release in progress will spend, written before it reads the data."""

    id: str
    keys: tuple[str, ...]
    rho: float | None
    guarantee: str
    host: str
    pid: int
    created_at: str

    def as_json(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "keys": list(self.keys)}


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


def _encode(value: object) -> object:
    if isinstance(value, dt.datetime):
        return value.isoformat()
    return value


def _record(cls: type[Any], values: dict[str, Any]) -> Any:
    names = {f.name: f for f in dataclasses.fields(cls)}
    kept = {k: v for k, v in values.items() if k in names}
    for name, f in names.items():
        if f.metadata["sql"].startswith("TIMESTAMP") and isinstance(kept.get(name), str):
            kept[name] = dt.datetime.fromisoformat(kept[name])
    return cls(**kept)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


class FileLedger:
    """The ledger folder of :mod:`this module <inftda_sql.engines.spark.ledger>`: its rows,
    budgets and reservations. Build it with :func:`open_ledger`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.releases_dir = root / "releases"
        self.budgets_dir = root / "budgets"
        self.reservations_dir = root / "reservations"
        self.tmp_dir = root / "tmp"

    def __repr__(self) -> str:
        return f"FileLedger({str(self.root)!r})"

    # -- files ------------------------------------------------------------------------------

    def _temp(self, payload: dict[str, Any]) -> Path:
        """``payload`` as JSON in a new file of ``tmp/``, flushed to disk."""
        path = self.tmp_dir / f"{uuid.uuid4().hex}.json"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.write(fd, json.dumps(payload, default=_encode).encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        return path

    def _put(self, folder: Path, name: str, payload: dict[str, Any]) -> None:
        """Write a file under a name nobody else uses (a fresh uuid): rename in place."""
        tmp = self._temp(payload)
        os.replace(tmp, folder / name)

    def _read_all(self, folder: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
        try:
            names = sorted(os.listdir(folder))
        except FileNotFoundError:
            return
        for name in names:
            if not name.endswith(".json"):
                continue
            path = folder / name
            try:
                yield path, json.loads(path.read_text())
            except FileNotFoundError:  # a reservation removed meanwhile
                continue

    # -- releases ---------------------------------------------------------------------------

    def _rows(self) -> list[dict[str, Any]]:
        return [payload for _, payload in self._read_all(self.releases_dir)]

    def read_releases(self) -> list[ReleaseRecord]:
        """Every release row, in ``release_id`` order."""
        rows = [_record(ReleaseRecord, p["record"]) for p in self._rows()]
        return sorted(rows, key=lambda r: r.release_id)

    def append_release(
        self, record: ReleaseRecord, reservation: Reservation | None
    ) -> ReleaseRecord:
        """Write a release's row under the next free ``release_id`` (exclusive: ``os.link``
        fails when another application took that id first; then the next); return it."""
        ids = [int(p.stem) for p in self.releases_dir.glob("*.json") if p.stem.isdigit()]
        next_id = max(ids, default=0) + 1
        for _ in range(10_000):
            record = dataclasses.replace(record, release_id=next_id)
            tmp = self._temp(
                {
                    "format": FORMAT_VERSION,
                    "reservation": None if reservation is None else reservation.id,
                    "record": record.values(),
                }
            )
            try:
                os.link(tmp, self.releases_dir / f"{next_id:012d}.json")
                return record
            except FileExistsError:
                next_id += 1
            finally:
                tmp.unlink()
        raise ConcurrentWriteError(  # pragma: no cover - ten thousand ids taken meanwhile
            f"could not find a free release_id in {self.releases_dir}"
        )

    # -- budgets ----------------------------------------------------------------------------

    def read_budgets(self) -> list[BudgetRecord]:
        """Every budget row ever set, oldest first."""
        rows = [_record(BudgetRecord, p["record"]) for _, p in self._read_all(self.budgets_dir)]
        return sorted(rows, key=lambda r: r.set_at)

    def budgets(self) -> dict[str, BudgetRecord]:
        """The budget that holds per base table (the newest row), by lower-case key."""
        return {b.input_table.lower(): b for b in self.read_budgets()}

    def set_budget(self, record: BudgetRecord) -> None:
        """Append a budget row (it replaces the table's earlier ones: the newest holds)."""
        name = f"{time.time_ns():020d}-{uuid.uuid4().hex}.json"
        self._put(self.budgets_dir, name, {"format": FORMAT_VERSION, "record": record.values()})

    # -- reservations and the budget check --------------------------------------------------

    def reservations(self) -> list[Reservation]:
        """The reservations of releases in progress; those of dead processes on this host are
        removed."""
        host, out = socket.gethostname(), []
        for path, p in self._read_all(self.reservations_dir):
            r = Reservation(**{**p["reservation"], "keys": tuple(p["reservation"]["keys"])})
            if r.host == host and r.pid != os.getpid() and not _alive(r.pid):
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                continue
            out.append(r)
        return out

    def spent(
        self, key: str, *, besides: Reservation | None = None, reserved: bool = True
    ) -> tuple[float, int, int]:
        """What base table ``key`` has spent: (zCDP rho, releases, releases not in rho), over
        the committed rows and the reservations of other releases in progress.

        The reservations are read BEFORE the rows: a release writes its row, then withdraws its
        reservation, so a reservation gone when they are read belongs to a row the later read
        of the rows sees (read the other way round, a release committing in between would be
        in neither, and its spend missed)."""
        pending = list(self.reservations()) if reserved else []
        rows = self._rows()
        committed = {p.get("reservation") for p in rows}
        charges: list[tuple[Sequence[str], float | None, str]] = [
            (p["record"].get("base_tables") or [], p["record"]["rho"], p["record"]["guarantee"])
            for p in rows
        ]
        for r in pending:
            if r.id not in committed and (besides is None or r.id != besides.id):
                charges.append((r.keys, r.rho, r.guarantee))
        rho, n, approx = 0.0, 0, 0
        for keys, r_rho, guarantee in charges:
            if key.lower() in (k.lower() for k in keys):
                n += 1
                charged = Guarantee(guarantee).charged_rho(r_rho)
                if charged is not None:
                    rho += charged
                else:
                    approx += 1
        return rho, n, approx

    def check_budget(
        self,
        keys: Sequence[str],
        outside: str | None,
        requested: Budget,
        guarantee: str,
        *,
        override: bool,
        besides: Reservation | None = None,
        reserved: bool = True,
    ) -> str | None:
        """Refuse a release that would exceed the budget of a base table it reads (see
        :func:`~inftda_sql.core.accounting.budget_verdict`), counting the releases in progress
        other than ``besides`` (unless ``reserved=False``); None when it fits or has none, else
        the note an override records. ``outside`` describes an input that is no catalog table."""
        budgets = self.budgets()
        if not budgets:
            return None
        notes = []
        if outside is not None:
            if not override:
                raise BudgetError(
                    f"the ledger {self.root} stores privacy budgets, but the input is "
                    f"{outside}, so what the release spends cannot be charged to a table; save it "
                    "as a table and release it by name, or pass ",
                    Arg("budget_override", True),
                    " (recorded in the ledger)",
                    param="budget_override",
                )
            notes.append(f"budget override: input is {outside}, not charged to a table")
        for key in keys:
            stored = budgets.get(key.lower())
            if stored is None:
                continue
            rho, n, _ = self.spent(key, besides=besides, reserved=reserved)
            budget = RhoZCDPBudget(
                rho=stored.rho,
                epsilon=stored.epsilon,
                delta=stored.delta,
                conversion=stored.conversion,
            )
            note = budget_verdict(key, budget, rho, n, requested, guarantee, override=override)
            if note:
                notes.append(note)
        return "; ".join(notes) or None

    def reserve(
        self,
        keys: Sequence[str],
        outside: str | None,
        requested: Budget,
        guarantee: str,
        *,
        override: bool,
    ) -> tuple[str | None, Reservation | None]:
        """Check the budget and reserve what the release will spend (see the module
        docstring); return the override note and the reservation (None for an input with no
        base table). Raises what :meth:`check_budget` raises, or
        :class:`~inftda_sql.ConcurrentWriteError` when other releases in progress keep
        holding what this one needs."""
        note = self.check_budget(
            keys, outside, requested, guarantee, override=override, reserved=False
        )
        if not keys:
            return note, None
        rho = Guarantee(guarantee).charged_rho(requested.rho)
        for attempt in range(_RESERVE_TRIES):
            mine = Reservation(
                id=uuid.uuid4().hex,
                keys=tuple(keys),
                rho=rho,
                guarantee=guarantee,
                host=socket.gethostname(),
                pid=os.getpid(),
                created_at=_now().isoformat(),
            )
            self._put(
                self.reservations_dir,
                f"{mine.id}.json",
                {"format": FORMAT_VERSION, "reservation": mine.as_json()},
            )
            try:
                return (
                    self.check_budget(
                        keys, outside, requested, guarantee, override=override, besides=mine
                    ),
                    mine,
                )
            except BudgetError:
                self.withdraw(mine)
                # too much with the committed rows alone: refused; else others are in the way
                self.check_budget(
                    keys, outside, requested, guarantee, override=override, reserved=False
                )
                time.sleep(random.uniform(0.02, 0.1) * 2**attempt)
        held = ", ".join(f"{r.host} pid {r.pid} since {r.created_at}" for r in self._others(keys))
        raise ConcurrentWriteError(
            f"other releases of {', '.join(keys)} in progress reserve the budget this one needs "
            f"({held}; their files are in {self.reservations_dir}); run it again when they "
            "end, or delete the file of one that no longer runs"
        )

    def _others(self, keys: Sequence[str]) -> list[Reservation]:
        lower = {k.lower() for k in keys}
        committed = {p.get("reservation") for p in self._rows()}
        return [
            r
            for r in self.reservations()
            if r.id not in committed and lower & {k.lower() for k in r.keys}
        ]

    def withdraw(self, reservation: Reservation | None) -> None:
        """Remove a reservation (the release ended, recorded or not)."""
        if reservation is not None:
            with contextlib.suppress(FileNotFoundError):
                (self.reservations_dir / f"{reservation.id}.json").unlink()


def open_ledger(spark: SparkSession, given: str | os.PathLike[str] | None = None) -> FileLedger:
    """The session's ledger folder (see :func:`ledger_location`), opened by :func:`open_folder`."""
    return open_folder(ledger_location(spark, given))


def open_folder(root: Path) -> FileLedger:
    """The ledger in folder ``root``, created if missing and checked: a layout this version
    reads, and files can be created, linked, read and removed there."""
    ledger = FileLedger(root)

    def refuse(problem: str) -> SpecError:
        return SpecError(
            f"the ledger folder {root} {problem}; name another with ",
            Arg("ledger", "/path/to/inftda_ledger"),
            f" or the Spark conf {CONF_KEY}",
            param="ledger",
        )

    try:
        for folder in (ledger.releases_dir, ledger.budgets_dir, ledger.reservations_dir):
            folder.mkdir(parents=True, exist_ok=True)
        ledger.tmp_dir.mkdir(exist_ok=True)
        fmt = root / "FORMAT"
        if not fmt.exists():
            tmp = ledger._temp(
                {"format": FORMAT_VERSION, "created_by": f"inftda-sql {__version__}"}
            )
            with contextlib.suppress(FileExistsError):  # another application made it first
                os.link(tmp, fmt)
            tmp.unlink()
        found = json.loads(fmt.read_text())
        probe = ledger._temp({"probe": True})
        linked = probe.with_suffix(".link")
        os.link(probe, linked)
        linked.unlink()
        probe.unlink()
    except PermissionError as exc:
        raise refuse(f"cannot be written or read ({exc.strerror})") from None
    except OSError as exc:
        if exc.errno in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP):
            raise refuse("is on a filesystem without hard links (os.link)") from None
        raise refuse(f"cannot be used ({exc.strerror or exc})") from None
    except ValueError:
        raise refuse("holds a FORMAT file that is not this package's") from None
    version = found.get("format") if isinstance(found, dict) else None
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise refuse(
            f"was written in ledger format {version!r} (by {found.get('created_by', '?')}), "
            f"newer than this inftda-sql {__version__} reads ({FORMAT_VERSION}); upgrade "
            "inftda-sql"
        )
    return ledger


def register_views(spark: SparkSession, ledger: FileLedger) -> None:
    """Temporary views ``inftda_releases`` (every row) and ``inftda_budgets`` (the budget that
    holds per table) of the session, as the ledger folder holds them now (made again after
    every release and budget change of this session, and by :func:`inftda_sql.spark.ledger`)."""
    releases = [tuple(r.values().values()) for r in ledger.read_releases()]
    spark.createDataFrame(releases, struct(ReleaseRecord)).createOrReplaceTempView(LEDGER_TABLE)
    budgets = [tuple(b.values().values()) for b in ledger.budgets().values()]
    spark.createDataFrame(budgets, struct(BudgetRecord)).createOrReplaceTempView(BUDGET_TABLE)
