"""Results files (plain JSON with a schema version) and the HTML reports built from them."""

from judgeaudit.report.html import render_report, write_report
from judgeaudit.results_file import SCHEMA_VERSION, read_results, write_results

__all__ = ["SCHEMA_VERSION", "read_results", "render_report", "write_report", "write_results"]
