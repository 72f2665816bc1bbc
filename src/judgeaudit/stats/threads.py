"""BLAS threads for small dense algebra.

The rank step does a few small dense factorisations and products (N up to a few thousand).
OpenBLAS's default of one thread per core makes them slower, not faster, as soon as the
machine has other work: its threads spin and wait on each other (measured: an N = 100 step
took 264 ms with default threading under load against 18 ms single-threaded). Large
problems take the sparse path, which BLAS threads do not speed up either.

``threadpoolctl`` is optional: without it these are no-ops (set OPENBLAS_NUM_THREADS=1
before starting Python instead).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

# Dense problems up to this many parameters run single-threaded (the dense posterior stops
# at judgeaudit.stats.bradley_terry.DENSE_MAX = 3,000).
SMALL_PROBLEM = 4000

_controller: Any = None


def _get_controller() -> Any:
    """One threadpoolctl controller, built once (scanning the loaded libraries costs ~ms)."""
    global _controller
    if _controller is None:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # optional dependency
            _controller = False
        else:
            _controller = ThreadpoolController()
    return _controller


def blas_threads_for(n_params: int) -> int | None:
    """Threads for a dense problem of ``n_params`` parameters: 1 if small, else None (the
    library default)."""
    return 1 if n_params <= SMALL_PROBLEM else None


@contextlib.contextmanager
def limit_blas_threads(n_params: int | None = None, limit: int | None = None) -> Iterator[None]:
    """Limit BLAS threads inside the block: to ``limit``, or by ``blas_threads_for(n_params)``;
    restored on exit. A no-op when no limit applies or threadpoolctl is missing."""
    if limit is None and n_params is not None:
        limit = blas_threads_for(n_params)
    ctl = _get_controller() if limit is not None else False
    if not ctl:
        yield
        return
    ctl_now = ctl.select(user_api="blas")
    if all(lib.get("num_threads", 0) <= limit for lib in ctl_now.info()):
        yield  # already there: skip the set/restore calls
        return
    with ctl.limit(limits=limit, user_api="blas"):
        yield


def blas_info() -> list[dict]:
    """The loaded BLAS libraries and their thread counts (for benchmark records)."""
    ctl = _get_controller()
    if not ctl:
        return []
    return [{k: lib.get(k) for k in ("internal_api", "version", "num_threads", "filepath")}
            for lib in ctl.select(user_api="blas").info()]
