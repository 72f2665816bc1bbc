"""One async client for every model call (`Client`), providers registered by name."""

from judgeaudit.llm.base import (
    ERROR_KINDS,
    FatalProviderError,
    Message,
    Provider,
    ProviderError,
    Request,
    RequestRejected,
    Response,
    Usage,
)
from judgeaudit.llm.cache import Cache, CacheError
from judgeaudit.llm.client import (
    MAX_RESPONSE_CHARS,
    CallCap,
    CallFailed,
    CallStats,
    Client,
    RetryPolicy,
    SpendCap,
)
from judgeaudit.llm.redact import install_log_redaction, redact
from judgeaudit.llm.registry import available, make_provider, register

__all__ = [
    "ERROR_KINDS", "MAX_RESPONSE_CHARS", "Cache", "CacheError", "CallCap", "CallFailed",
    "CallStats", "Client", "FatalProviderError", "Message", "Provider", "ProviderError", "Request",
    "RequestRejected", "Response", "RetryPolicy", "SpendCap", "Usage", "available",
    "install_log_redaction", "make_provider", "redact", "register",
]
