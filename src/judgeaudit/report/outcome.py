"""Moved to `judgeaudit.outcome` (the run rule serves every command, not only the report);
this name is kept so scripts and plugins that imported it still work."""

from judgeaudit.outcome import (  # noqa: F401
    DEFAULT_MAX_FAILED,
    DEFAULT_MIN_VALID,
    EXIT_GATE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_RUN_FAILED,
    EXIT_TERMINATED,
    EXIT_USAGE,
    assess,
    failure_message,
    probe_verdict,
    run_failed,
    sum_calls,
)
