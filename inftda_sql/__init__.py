"""inftda_sql: differentially private hierarchical counts, written back into DuckDB."""

from __future__ import annotations

__version__ = "0.1.0"
