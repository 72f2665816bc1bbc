"""Bootstrap and jackknife resamples are built in bounded blocks: memory stays flat in n
(kappa over 20,000 items used to take ~1 GB), and the numbers are the same as with one block."""

from __future__ import annotations

import numpy as np
import pytest

from judgeaudit.stats import intervals
from judgeaudit.stats.agreement import kappa_ci, spearman
from judgeaudit.stats.intervals import bootstrap_ci, paired_bootstrap_diff


def _data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    return a, np.where(rng.random(n) < 0.7, a, rng.integers(0, 3, n))


def _all_results() -> list:
    a, b = _data(300)
    x = a + np.random.default_rng(1).normal(size=a.size)
    return [
        bootstrap_ci(x, np.mean, n_boot=200, seed=3),
        bootstrap_ci(x, np.mean, n_boot=200, seed=3, method="bca"),
        bootstrap_ci(x, lambda z: z.mean(axis=1), n_boot=200, seed=3, method="bca",
                     vectorized=True),
        paired_bootstrap_diff(x, a.astype(float), lambda z: z.mean(axis=1), n_boot=200,
                              seed=4, method="bca", vectorized=True),
        kappa_ci(a, b, labels=[0, 1, 2], n_boot=300, seed=5),
        spearman(x, b, method="bootstrap", n_boot=200, seed=6),
    ]


def test_blocks_give_the_same_numbers_as_one_block(monkeypatch):
    monkeypatch.setattr(intervals, "_BLOCK_ENTRIES", 1 << 40)
    whole = _all_results()
    monkeypatch.setattr(intervals, "_BLOCK_ENTRIES", 700)  # 1-2 rows of 300 items per block
    assert _all_results() == whole


def test_jackknife_rows_leave_one_item_out(monkeypatch):
    monkeypatch.setattr(intervals, "_BLOCK_ENTRIES", 10)
    seen: list[np.ndarray] = []
    intervals._jackknife(lambda row: seen.append(row.copy()) or 0.0, 7, vectorized=False)
    assert [r.tolist() for r in seen] == [np.delete(np.arange(7), i).tolist() for i in range(7)]


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_resample_blocks_are_bounded_for_large_n(method):
    n = 20_000 if method == "percentile" else 3_000
    a, b = _data(n)
    codes = np.stack([a, b], axis=1)
    biggest = 0

    def agree(x: np.ndarray) -> np.ndarray:
        nonlocal biggest
        biggest = max(biggest, x.size)
        return (x[..., 0] == x[..., 1]).mean(axis=-1)

    lo, hi = bootstrap_ci(codes, agree, n_boot=2000, seed=0, method=method, vectorized=True)
    assert lo < float((a == b).mean()) < hi
    # one block of all 2000 resamples would hold 2000 * n * 2 entries
    assert biggest <= intervals._BLOCK_ENTRIES
