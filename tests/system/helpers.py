"""Small builders shared by the system tests."""

from __future__ import annotations

from typing import Any

import duckdb


def make_geo(con: duckdb.DuckDBPyConnection) -> None:
    """A 3-level geography with an uneven fan-out and a domain leaf without any record."""
    con.execute(
        """CREATE TABLE geo AS SELECT * FROM (VALUES
            ('North', 'N1', 'n1a'), ('North', 'N1', 'n1b'), ('North', 'N2', 'n2a'),
            ('South', 'S1', 's1a'), ('South', 'S1', 's1b'), ('South', 'S1', 's1c'),
            ('East',  'E1', 'e1a')
        ) g(region, province, mun)"""
    ).fetchall()


PERSONS = (
    [("North", "N1", "n1a")] * 5
    + [("North", "N2", "n2a")] * 3
    + [("South", "S1", "s1c")] * 7
    + [("South", "S1", "s1a")]
)


def make_persons(con: duckdb.DuckDBPyConnection, name: str = "persons") -> None:
    con.execute(f"CREATE TABLE {name} (region VARCHAR, province VARCHAR, mun VARCHAR)").fetchall()
    con.executemany(f"INSERT INTO {name} VALUES (?, ?, ?)", PERSONS)


def make_od(con: duckdb.DuckDBPyConnection) -> None:
    """O/D geography (origin 2 levels, destination 3 levels) and pre-aggregated trips."""
    con.execute(
        "CREATE TABLE geo_o AS SELECT * FROM (VALUES ('A','a1'),('A','a2'),('B','b1')) g(o_reg, o_mun)"
    ).fetchall()
    con.execute(
        """CREATE TABLE geo_d AS SELECT * FROM (VALUES
            ('X','x1','x1a'),('X','x1','x1b'),('X','x2','x2a'),('Y','y1','y1a')) g(d_reg, d_prov, d_mun)"""
    ).fetchall()
    con.execute(
        """CREATE TABLE od AS SELECT * FROM (VALUES
            ('A','a1','X','x1','x1a', 4), ('A','a1','Y','y1','y1a', 2), ('A','a2','X','x2','x2a', 9),
            ('B','b1','X','x1','x1b', 1), ('B','b1','Y','y1','y1a', 6), ('B','b1','Y','y1','y1a', 1)
        ) t(o_reg, o_mun, d_reg, d_prov, d_mun, n)"""
    ).fetchall()
    con.execute(
        "CREATE TABLE od_micro AS SELECT o_reg, o_mun, d_reg, d_prov, d_mun FROM od, range(n)"
    ).fetchall()


def leaf_truth(
    con: duckdb.DuckDBPyConnection, table: str, cols: list[str], count: str | None = None
) -> list[Any]:
    agg = f"sum({count})" if count else "count(*)"
    return con.execute(
        f"SELECT {', '.join(cols)}, {agg}::BIGINT FROM {table} GROUP BY ALL HAVING {agg} > 0 "
        f"ORDER BY ALL"
    ).fetchall()


def released(con: duckdb.DuckDBPyConnection, table: str, cols: list[str]) -> list[Any]:
    return con.execute(f"SELECT {', '.join(cols)}, count FROM {table} ORDER BY ALL").fetchall()


def snapshot(con: duckdb.DuckDBPyConnection) -> list[Any]:
    """Every table and view of the database with its row count (to check nothing changed)."""
    objs = con.execute(
        "SELECT table_schema, table_name, table_type FROM information_schema.tables "
        "WHERE NOT starts_with(table_name, '__inftda') ORDER BY ALL"
    ).fetchall()
    out = []
    for schema, name, kind in objs:
        n = con.execute(f'SELECT count(*) FROM "{schema}"."{name}"').fetchall()[0][0]
        out.append((schema, name, kind, n))
    return out
