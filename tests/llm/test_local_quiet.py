"""`local?backend=transformers` loads its model without transformers' own output on stderr:
no raw tqdm bars ("Loading weights", "Converting and de-quantizing GGUF tensors"), no load
report or tokenizer warnings among judgeaudit's progress; errors still show, and under
--verbose the warnings do. No model is loaded: transformers' loaders are replaced by fakes
that make the noise the real ones make, through the same channels (transformers' loggers,
its tqdm switch, the plain tqdm of its GGUF reader, Python warnings)."""

from __future__ import annotations

import logging
import warnings
from types import SimpleNamespace

import pytest

transformers = pytest.importorskip("transformers")
pytest.importorskip("torch")

from transformers.utils import logging as hf_logging  # noqa: E402

from judgeaudit.llm import local_model as lm  # noqa: E402


def _noise(stage: str) -> None:
    """What transformers prints while it loads, by the channels it uses."""
    hf_log = hf_logging.get_logger("transformers.modeling_utils")
    hf_log.warning(f"Qwen2ForCausalLM LOAD REPORT from: {stage}")
    for _ in hf_logging.tqdm(range(3), desc=f"Loading weights ({stage})"):
        pass
    warnings.warn(f"`torch_dtype` is deprecated ({stage})", FutureWarning, stacklevel=2)
    hf_log.error(f"a real error ({stage})")


class _Fake:
    def __init__(self, stage: str):
        self.stage, self.config = stage, SimpleNamespace()

    def eval(self) -> _Fake:
        return self

    def save_pretrained(self, path: str) -> None:
        pass


@pytest.fixture
def hf_state(monkeypatch, capfd):
    """transformers' logging as a fresh process has it, restored afterwards; judgeaudit's
    logging at its default (WARNING: no --verbose). Its handler writes to the stderr of now
    (it kept the one of when transformers was imported, which capfd does not see)."""
    import sys

    hf_logging.get_logger("transformers")  # its handler is made on first use
    for h in logging.getLogger("transformers").handlers:
        if type(h) is logging.StreamHandler:  # not pytest's own log capture
            monkeypatch.setattr(h, "stream", sys.stderr)
    was_level, was_bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_warning()
    hf_logging.enable_progress_bar()
    ja = logging.getLogger("judgeaudit")
    monkeypatch.setattr(ja, "level", logging.WARNING)
    monkeypatch.setattr(lm, "_LOADED", {})
    yield
    hf_logging.set_verbosity(was_level)
    (hf_logging.enable_progress_bar if was_bars else hf_logging.disable_progress_bar)()


def _fake_loaders(monkeypatch, tmp_path, gguf_bar: bool = False):
    def tokenizer(*_a, **_k):
        _noise("tokenizer")
        return _Fake("tokenizer")

    def model(*_a, **_k):
        if gguf_bar:  # as modeling_gguf_pytorch_utils does, by its module's `tqdm`
            from transformers import modeling_gguf_pytorch_utils as g

            for _ in g.tqdm(range(3), desc="Converting and de-quantizing GGUF tensors..."):
                pass
        _noise("model")
        return _Fake("model")

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", tokenizer)
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", model)
    monkeypatch.setattr(lm, "ensure_converted", lambda source: tmp_path)


def test_loading_prints_no_bars_or_warnings_but_errors(hf_state, monkeypatch, tmp_path,
                                                       capfd):
    _fake_loaders(monkeypatch, tmp_path)
    loaded = lm.load("qwen-0.5b", "bf16")
    assert loaded.model.stage == "model"
    err = capfd.readouterr().err
    assert "Loading weights" not in err and "LOAD REPORT" not in err, err
    assert "is deprecated" not in err, err
    assert "a real error (tokenizer)" in err and "a real error (model)" in err
    # and the generation warnings that come during the calls, after the load
    assert hf_logging.get_verbosity() == logging.ERROR
    assert not hf_logging.is_progress_bar_enabled()


def test_converting_a_gguf_prints_no_bar(hf_state, monkeypatch, tmp_path, capfd):
    from transformers import modeling_gguf_pytorch_utils as g

    bar = g.tqdm
    _fake_loaders(monkeypatch, tmp_path, gguf_bar=True)
    lm._convert_gguf(tmp_path / "m.gguf", tmp_path / "out")
    err = capfd.readouterr().err
    assert "Converting and de-quantizing" not in err and "LOAD REPORT" not in err, err
    assert "a real error (model)" in err
    assert g.tqdm is bar  # put back


def test_verbose_shows_the_warnings(hf_state, monkeypatch, tmp_path, capfd, caplog):
    monkeypatch.setattr(logging.getLogger("judgeaudit"), "level", logging.INFO)
    _fake_loaders(monkeypatch, tmp_path)
    with caplog.at_level(logging.INFO, logger="judgeaudit.llm.local"):
        lm.load("qwen-0.5b", "bf16")
    err = capfd.readouterr().err
    assert "LOAD REPORT" in err  # transformers' own warnings, under --verbose
    assert any("is deprecated" in r.getMessage() for r in caplog.records)


def test_a_warnings_filter_error_still_raises(hf_state, monkeypatch, tmp_path):
    _fake_loaders(monkeypatch, tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        with pytest.raises(FutureWarning):
            lm.load("qwen-0.5b", "bf16")
