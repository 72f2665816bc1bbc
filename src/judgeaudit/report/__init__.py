"""Results files (plain JSON with a schema version) and, later, HTML reports built from them."""

from judgeaudit.report.results import SCHEMA_VERSION, read_results, write_results

__all__ = ["SCHEMA_VERSION", "read_results", "write_results"]
