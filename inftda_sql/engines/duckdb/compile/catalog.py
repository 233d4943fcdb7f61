"""The catalog (``sql/catalog.sql``): describe, explain, drop temporary objects."""

from __future__ import annotations

from ..sql import ident, render
from ._common import string_literal


def drop_object(kind: str, name_sql: str) -> str:
    """``DROP TABLE`` or ``DROP VIEW`` of an already-quoted name (``kind``: table or view)."""
    return render("catalog.drop_object", kind="VIEW" if kind == "view" else "TABLE", name=name_sql)


def drop_temp_view(name: str) -> str:
    return render("catalog.drop_view", view=ident(name))


def drop_temp_table(name: str) -> str:
    return render("catalog.drop_table", table=ident(name))


def describe(source_sql: str) -> str:
    """The columns and types of a readable source."""
    return render("catalog.describe", source=source_sql)


def explain(source_sql: str) -> str:
    """The plans (JSON) of reading a source, for the tables it reads."""
    return render("catalog.explain", source=source_sql)


def set_explain_output(value: str) -> str:
    """``SET explain_output`` (DuckDB cannot bind a setting's value as a parameter)."""
    return render("catalog.set_explain_output", value=string_literal(value))


def describe_table(name: str) -> str:
    return render("catalog.describe_table", table=ident(name))
