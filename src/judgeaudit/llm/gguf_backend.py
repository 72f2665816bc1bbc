"""What the integer backends (ik_backend.py, llamacpp_backend.py) share: opening the verified
GGUF with its torch-free tokenizer, the context size, file-type names and the length check.

Why one place: both run the same file with the same token ids and refuse the same prompts;
only the library that multiplies differs.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judgeaudit.llm.base import RequestRejected
from judgeaudit.llm.local_model import ModelFilesError, ModelSource, ensure_gguf

log = logging.getLogger("judgeaudit.llm.local")

MIN_CTX = 8192          # tokens of KV cache shared by the slots, at least
CTX_PER_SLOT = 2048     # ... and this many per slot beyond that
# llama.cpp file types (general.file_type) by number, for display
FILE_TYPES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1",
              10: "Q2_K", 11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S",
              15: "Q4_K_M", 16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K", 32: "BF16"}


@dataclass(kw_only=True)
class GGUFModel:
    """A GGUF loaded by an integer backend, shared by every provider using these weights:
    what both backends know of it (each adds its own handles)."""

    source: ModelSource
    gguf: Path
    tokenizer: Any
    slots: int
    n_ctx: int
    n_ctx_train: int
    threads: int
    load_seconds: float
    system_info: str
    file_type: str
    backend: str
    state: dict[str, Any] = field(default_factory=dict)

    @property
    def dtype(self) -> str:
        return f"gguf:{self.file_type}"


def open_gguf(source: ModelSource, backend: str) -> tuple[Path, dict[str, Any], Any]:
    """(the verified GGUF, its metadata, its tokenizer), or ModelFilesError saying why the
    backend cannot use it."""
    from judgeaudit.llm.gguf_meta import GGUFError, read_metadata
    from judgeaudit.llm.gguf_tokenizer import GGUFTokenizer, UnsupportedTokenizer

    gguf = ensure_gguf(source)
    try:
        meta = read_metadata(gguf)
        return gguf, meta, GGUFTokenizer(meta)
    except (GGUFError, UnsupportedTokenizer) as exc:
        raise ModelFilesError(f"backend={backend} cannot use {gguf}: {exc}") from None


def file_type(meta: dict[str, Any]) -> str:
    return FILE_TYPES.get(meta.get("general.file_type", -1), "?")


def context_size(ctx: int | str | None, slots: int) -> int:
    """Tokens of context for `slots` sequences: `local?ctx=N`, else the default."""
    if ctx in (None, "", "auto"):
        return max(MIN_CTX, CTX_PER_SLOT * slots)
    try:
        n = int(ctx)
    except ValueError:
        raise ValueError(f"local model ctx={ctx!r}: expected a whole number of tokens") from None
    if n < 256:
        raise ValueError(f"local model ctx={ctx!r}: at least 256 tokens")
    return n


def check_length(lm: GGUFModel, ids: list[int], extra: int, library: str) -> None:
    """Refuse a prompt (+ the tokens to generate) longer than the model's or the loaded
    context (`lm.n_ctx_train`, `lm.n_ctx`), naming the setting that raises the latter. Only
    this request fails (`RequestRejected`): the run's other prompts may fit."""
    if lm.n_ctx_train and len(ids) + extra > lm.n_ctx_train:
        raise RequestRejected(
            f"prompt of {len(ids)} tokens (+{extra} to generate) exceeds the model's context "
            f"of {lm.n_ctx_train} tokens")
    if len(ids) + extra > lm.n_ctx:
        raise RequestRejected(
            f"prompt of {len(ids)} tokens (+{extra} to generate) exceeds the {library} context "
            f"of {lm.n_ctx} tokens; raise it with local?ctx=N (the model allows "
            f"{lm.n_ctx_train or 'more'})")


def already_loaded(loaded: dict[str, Any], source: ModelSource, slots: int,
                   library: str) -> Any | None:
    """The model a backend loaded earlier in this process, if any. The first load fixes the
    slots: a later request for more is warned about (its extra requests wait their turn)."""
    lm = loaded.get(source.identity)
    if lm is not None and slots > lm.slots:
        log.warning("%s model %s was loaded with %d slots; %d requested (requests beyond %d "
                    "wait for a free slot)", library, source.name, lm.slots, slots, lm.slots)
    return lm
