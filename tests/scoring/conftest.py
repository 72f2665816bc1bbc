"""Real loopback LLM servers for the scoring tests (tests/llm/fakeserver.py), stopped at
teardown."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fakeserver import FakeLLMServer


@pytest.fixture
def fake_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., FakeLLMServer]]:
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    servers: list[FakeLLMServer] = []

    def start(**kw: Any) -> FakeLLMServer:
        srv = FakeLLMServer(**kw).start()
        servers.append(srv)
        return srv

    yield start
    for srv in servers:
        srv.stop()
