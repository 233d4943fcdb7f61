"""Data frames in and out: pandas and polars DataFrames and Arrow tables.

A data frame is read by DuckDB where it lies (registered as a temporary view, zero-copy for
numeric and Arrow columns), and a released table comes back as Arrow and is converted to the
form asked for. pandas and polars are optional dependencies (``pip install 'inftda-sql[pandas]'``,
``'inftda-sql[polars]'``): they are never imported here unless the caller's object already comes
from them or a result is asked for in their form.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from ._errors import Arg, InftdaError, SpecError

__all__ = [
    "FORMS",
    "convert",
    "frame_kind",
    "frame_label",
    "held_data",
    "is_frame_label",
    "mapping_table",
    "not_a_frame_hint",
]

#: the forms a released table can be returned in (``release(return_as=...)``)
FORMS = ("arrow", "pandas", "polars")

_LABELS = {"arrow": "Arrow table", "pandas": "pandas DataFrame", "polars": "polars DataFrame"}


def _module(name: str) -> Any:
    """The module ``name`` if the caller's process has imported it already, else None."""
    return sys.modules.get(name)


def frame_kind(obj: object) -> str | None:
    """``"pandas"``, ``"polars"`` or ``"arrow"`` for a data frame or Arrow table, else None.

    Nothing is imported: an object can only be a pandas (polars) DataFrame if pandas (polars)
    is loaded already.

    Example:
        >>> import pyarrow as pa
        >>> frame_kind(pa.table({"a": [1]})), frame_kind("trips")
        ('arrow', None)
    """
    if isinstance(obj, (pa.Table, pa.RecordBatch)):
        return "arrow"
    pd = _module("pandas")
    if pd is not None and isinstance(obj, pd.DataFrame):
        return "pandas"
    pl = _module("polars")
    if pl is not None and isinstance(obj, pl.DataFrame):
        return "polars"
    return None


def held_data(obj: object, kind: str) -> tuple[str, ...]:
    """What identifies the data a data frame or Arrow table holds in this process: the object
    itself and the start address of every column buffer it holds (its Arrow buffers; a pandas
    column's numpy array or Arrow data; a polars column's buffers).

    A frame made from another without copying its columns (an Arrow ``select``, a polars
    ``select``, a pandas selection under copy-on-write, the same object passed twice) shares
    some of these; a copy (``drop_duplicates()`` that dropped rows, ``to_pandas()``) shares
    none. Only memory the object owns is named, never a temporary made to look at it: the
    buffers are listed twice while the first listing is held, and an address kept only if both
    listings give it (a temporary of the second could not reuse one of the first). Two live
    objects share an address only if they share the memory. Reads no value.

    Example:
        >>> import pyarrow as pa
        >>> t = pa.table({"a": [1, 2], "b": [3, 4]})
        >>> bool(set(held_data(t.select(["b"]), "arrow")) & set(held_data(t, "arrow")))
        True
        >>> bool(set(held_data(pa.table({"b": [3, 4]}), "arrow")) & set(held_data(t, "arrow")))
        False
    """
    first, held = _buffers(obj, kind)
    second, _ = _buffers(obj, kind)
    owned = sorted(set(first) & set(second))
    del held
    return (
        f"the data of the Python object at {id(obj):#x}",
        *(f"the column data at {a:#x}" for a in owned),
    )


def _buffers(obj: Any, kind: str) -> tuple[list[int], list[Any]]:
    """The start addresses of the non-empty buffers of ``obj``'s columns, and the objects that
    hold them (to be kept alive while the addresses are compared)."""
    columns: list[Any] = []
    if kind == "arrow":
        columns = list(obj.columns)
    elif kind == "pandas":  # only what is held without a conversion
        import numpy as np

        pd = _module("pandas")
        for i in range(obj.shape[1]):
            series = obj.iloc[:, i]
            dtype = series.dtype
            if isinstance(dtype, np.dtype):
                columns.append(series.to_numpy(copy=False))
            elif isinstance(dtype, pd.ArrowDtype) or getattr(dtype, "storage", None) == "pyarrow":
                columns.append(series.array.__arrow_array__())
            elif isinstance(dtype, pd.CategoricalDtype):
                columns.append(np.asarray(series.array.codes))
    elif kind == "polars":
        pl = _module("polars")
        level = getattr(getattr(pl, "CompatLevel", None), "newest", None)
        for series in obj.get_columns():
            try:
                columns.append(series.to_arrow(**({"compat_level": level()} if level else {})))
            except Exception:  # a type polars cannot hand over: nothing of it is named
                continue
    addresses: list[int] = []
    for column in columns:
        if isinstance(column, (pa.Array, pa.ChunkedArray)):
            for chunk in column.chunks if isinstance(column, pa.ChunkedArray) else [column]:
                addresses += [b.address for b in chunk.buffers() if b is not None and b.size]
        elif column.nbytes:  # a numpy array
            addresses.append(column.__array_interface__["data"][0])
    return addresses, columns


def frame_label(kind: str) -> str:
    """How messages and the ledger name a frame kind: ``pandas DataFrame``."""
    return _LABELS[kind]


def is_frame_label(kind: str) -> bool:
    """Whether a source's kind (see :class:`~inftda_sql.engines.duckdb.catalog.Resolved`) is a
    data frame's label, not a table, view, file or relation."""
    return kind in _LABELS.values()


def not_a_frame_hint(obj: object) -> str | None:
    """For objects close to a data frame that cannot be read as one (they can be read only once,
    or are one column), what to pass instead; None for anything else."""
    name = f"{type(obj).__module__.split('.')[0]}.{type(obj).__name__}"
    hints = {
        "polars.LazyFrame": "collect it first: lazy_frame.collect()",
        "pyarrow.RecordBatchReader": "it can be read only once; pass reader.read_all()",
        "pandas.Series": "pass series.reset_index() (a DataFrame), or use "
        "inftda_sql.pandas.inf_tda(series, ...) for a Series with a MultiIndex",
        "polars.Series": "pass series.to_frame()",
    }
    return hints.get(name)


def _install(kind: str) -> str:
    return f"pip install 'inftda-sql[{kind}]'"


def require(kind: str, *, param: str | None = "return_as") -> Any:
    """Import pandas or polars, or a SpecError that names the extra that installs it."""
    try:
        if kind == "pandas":
            import pandas

            return pandas
        import polars

        return polars
    except ImportError as exc:
        missing = f"{kind}, an optional dependency that is not installed: {_install(kind)}"
        if param is None:
            raise ImportError(f"this needs {missing}") from exc
        raise SpecError(
            Arg(param, kind), f" needs {missing}; or pass ", Arg(param, "arrow"), param=param
        ) from exc


def convert(table: pa.Table, kind: str) -> Any:
    """``table`` as an Arrow table, a pandas DataFrame or a polars DataFrame.

    Example:
        >>> import pyarrow as pa
        >>> convert(pa.table({"a": [1]}), "arrow").num_rows
        1
    """
    if kind == "arrow":
        return table
    if kind == "pandas":
        require("pandas")
        return table.to_pandas()
    if kind == "polars":
        pl = require("polars")
        return pl.from_arrow(table)
    raise SpecError(
        f"return_as must be one of {', '.join(map(repr, FORMS))} or None, got {kind!r}",
        param="return_as",
    )


def mapping_table(
    obj: Mapping[Any, Any], role: str, error: type[InftdaError], param: str | None
) -> pa.Table:
    """Declared values ``{column: [values, ...]}`` (a small public domain typed in by hand) as
    an Arrow table, for any engine; a malformed mapping is ``error`` naming the ``role``.

    Example:
        >>> mapping_table({"region": ["N", "S"]}, "domain", SpecError, "domain").num_rows
        2
    """
    data = {}
    for col, values in obj.items():
        if (
            not isinstance(col, str)
            or isinstance(values, (str, bytes))
            or not isinstance(values, Sequence)
        ):
            raise error(
                f"{role} mapping must be {{column: [values, ...]}}, got {col!r}: {values!r}",
                param=param,
            )
        data[col] = list(values)
    lengths = {len(v) for v in data.values()}
    if len(lengths) != 1 or 0 in lengths:
        raise error(
            f"{role} mapping columns must be non-empty and of equal length, got {obj!r}",
            param=param,
        )
    try:
        return pa.table(data)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise error(f"{role} mapping has mixed value types: {exc}", param=param) from exc
