"""The tokenizer and chat template stored in a GGUF file, without torch or transformers.

The llamacpp backend sends llama.cpp token ids, not text, so a prompt is exactly the token
sequence the transformers backend runs, and the choice tokens of a verdict are the same ids.
This module builds the same `tokenizers` object that transformers builds from the GGUF
(transformers.integrations.ggml: byte-level BPE, the pre-tokenizer regex named by
`tokenizer.ggml.pre` and its normalization, control and user-defined tokens as added tokens)
and renders the chat template in the same sandboxed Jinja environment as
`apply_chat_template`. It offers the small part of the Hugging Face tokenizer interface the
local provider uses (`encode`, `decode`, `convert_tokens_to_ids`, `apply_chat_template`,
the special token ids), so the provider's prompt and choice code serves both backends.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

# `tokenizer.ggml.pre` -> (pre-tokenizer split regex, NFC normalization) as transformers builds
# them for that family (qwen2: transformers' Qwen2Tokenizer adds NFC). Only families checked
# against transformers' own conversion are listed; another GGUF tokenizer is refused with a
# pointer to backend=transformers.
PRE_TOKENIZERS: dict[str, tuple[str, bool]] = {
    "qwen2": (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+"
              r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+", True),
}
_CONTROL, _USER_DEFINED = 3, 4  # llama.cpp token types added as special / plain added tokens


class UnsupportedTokenizer(ValueError):
    """The GGUF's tokenizer is not one this module reproduces exactly."""


def tokenizer_supported(meta: dict[str, Any]) -> str | None:
    """None when `GGUFTokenizer` handles this GGUF's tokenizer, else the reason it does not."""
    model = meta.get("tokenizer.ggml.model")
    pre = meta.get("tokenizer.ggml.pre")
    if model != "gpt2":
        return f"tokenizer.ggml.model={model!r} (only byte-level BPE, 'gpt2', is supported)"
    if pre not in PRE_TOKENIZERS:
        return (f"tokenizer.ggml.pre={pre!r} (supported: {', '.join(PRE_TOKENIZERS)})")
    if "tokenizer.ggml.tokens" not in meta or "tokenizer.ggml.merges" not in meta:
        return "no tokenizer.ggml.tokens/merges in the file"
    return None


class GGUFTokenizer:
    """A GGUF's byte-level BPE tokenizer and chat template, Hugging Face style."""

    def __init__(self, meta: dict[str, Any]):
        why = tokenizer_supported(meta)
        if why is not None:
            raise UnsupportedTokenizer(f"GGUF tokenizer not supported by backend=llamacpp: {why}")
        from tokenizers import (
            AddedToken,
            Regex,
            Tokenizer,
            decoders,
            models,
            normalizers,
            pre_tokenizers,
        )

        tokens: list[str] = meta["tokenizer.ggml.tokens"]
        types: list[int] = meta.get("tokenizer.ggml.token_type") or [1] * len(tokens)
        merges = [tuple(m.split(" ", 1)) for m in meta["tokenizer.ggml.merges"]]
        vocab = {t: i for i, t in enumerate(tokens)}
        bpe = models.BPE(vocab=vocab, merges=merges, dropout=None, unk_token=None,
                         continuing_subword_prefix="", end_of_word_suffix="", fuse_unk=False,
                         byte_fallback=False)
        regex, nfc = PRE_TOKENIZERS[meta["tokenizer.ggml.pre"]]
        tk = Tokenizer(bpe)
        if nfc:
            tk.normalizer = normalizers.NFC()
        tk.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(regex),
                                 behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ])
        tk.decoder = decoders.ByteLevel()
        special = [AddedToken(t, special=True, normalized=False)
                   for t, k in zip(tokens, types, strict=True) if k == _CONTROL]
        plain = [AddedToken(t, special=False, normalized=False)
                 for t, k in zip(tokens, types, strict=True) if k == _USER_DEFINED]
        tk.add_special_tokens(special)
        tk.add_tokens(plain)
        self._tk = tk
        self._tokens = tokens
        self.vocab_size = len(tokens)
        self.eos_token_id: int | None = meta.get("tokenizer.ggml.eos_token_id")
        self.bos_token_id: int | None = meta.get("tokenizer.ggml.bos_token_id")
        self.pad_token_id: int | None = meta.get("tokenizer.ggml.padding_token_id")
        self.unk_token_id: int | None = meta.get("tokenizer.ggml.unknown_token_id")
        self.chat_template: str | None = meta.get("tokenizer.chat_template")
        self._template: Any = None

    def _tok(self, i: int | None) -> str | None:
        return self._tokens[i] if i is not None and 0 <= i < len(self._tokens) else None

    @property
    def eos_token(self) -> str | None:
        return self._tok(self.eos_token_id)

    @property
    def bos_token(self) -> str | None:
        return self._tok(self.bos_token_id)

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return self._tk.encode(text, add_special_tokens=add_special_tokens).ids

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        return self._tk.decode(list(ids), skip_special_tokens=skip_special_tokens)

    def convert_tokens_to_ids(self, token: str) -> int | None:
        i = self._tk.token_to_id(token)
        return self.unk_token_id if i is None else i

    def apply_chat_template(self, messages: list[dict[str, str]],
                            add_generation_prompt: bool = False, tokenize: bool = False) -> Any:
        """The chat as text (or ids with tokenize=True), rendered like transformers does."""
        if not self.chat_template:
            raise ValueError("this GGUF has no tokenizer.chat_template")
        if self._template is None:
            self._template = compile_chat_template(self.chat_template)
        text = self._template.render(
            messages=messages, tools=None, documents=None,
            add_generation_prompt=add_generation_prompt,
            bos_token=self.bos_token or "", eos_token=self.eos_token or "",
            pad_token=self._tok(self.pad_token_id) or "",
        )
        return self.encode(text) if tokenize else text


def compile_chat_template(source: str) -> Any:
    """A Jinja template in the environment transformers renders chat templates in
    (sandboxed, trim_blocks, lstrip_blocks, loop controls, its `tojson` and helpers)."""
    import jinja2
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message: str) -> None:
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x: Any, ensure_ascii: bool = False, indent: int | None = None,
               separators: Any = None, sort_keys: bool = False) -> str:
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    return env.from_string(source)
