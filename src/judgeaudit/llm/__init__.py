"""One async client for every model call (`Client`), providers registered by name."""

from judgeaudit.llm.base import (
    FatalProviderError,
    Message,
    Provider,
    ProviderError,
    Request,
    Response,
    Usage,
)
from judgeaudit.llm.cache import Cache
from judgeaudit.llm.client import CallFailed, CallStats, Client, RetryPolicy
from judgeaudit.llm.registry import available, make_provider, register

__all__ = [
    "Cache", "CallFailed", "CallStats", "Client", "FatalProviderError", "Message", "Provider",
    "ProviderError", "Request", "Response", "RetryPolicy", "Usage", "available",
    "make_provider", "register",
]
