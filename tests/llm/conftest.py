"""Fixtures for the llm tests: real loopback servers, stopped at teardown."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fakeserver import FakeLLMServer


@pytest.fixture
def fake_server() -> Iterator[Callable[..., FakeLLMServer]]:
    """Factory: `fake_server(latency=..., faults=[...])` starts a FakeLLMServer on
    127.0.0.1; every server started is shut down after the test."""
    servers: list[FakeLLMServer] = []

    def start(**kw: Any) -> FakeLLMServer:
        srv = FakeLLMServer(**kw).start()
        servers.append(srv)
        return srv

    yield start
    for srv in servers:
        srv.stop()


@pytest.fixture
def no_key_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests must not pick up a real key or base URL from the developer's environment."""
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
                "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(var, raising=False)
