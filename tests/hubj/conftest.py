"""Fixtures of the HUB-J tests: MiniLM stood in for (it is slow to load)."""

from __future__ import annotations

import numpy as np
import pytest


class StubEmbedder:
    """Stands in for MiniLM: one direction per text."""

    name = "stub"

    def encode(self, texts):
        return np.eye(max(len(texts), 1), 8)[:len(texts)]


@pytest.fixture
def stub_embedder(monkeypatch) -> None:
    """discover embeds with `StubEmbedder`, not MiniLM."""
    monkeypatch.setattr("judgeaudit.hubj.embed.MiniLMEmbedder", StubEmbedder)
