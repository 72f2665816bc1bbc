"""The results file's reader and writer, kept under this name for scripts that import it
here; they live in the neutral `judgeaudit.results_file`."""

from judgeaudit.results_file import SCHEMA_VERSION, plain, read_results, write_results

__all__ = ["SCHEMA_VERSION", "plain", "read_results", "write_results"]
