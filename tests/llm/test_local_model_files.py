"""Assembly and verification of the local model's part files, on small fake parts (no torch).

The fake parts are real packages written to tmp_path and imported through sys.path, so the
same import + get_part_path() route as the PyPI parts is exercised."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import pytest

from judgeaudit.llm import local_model as lm

PART_BYTES = [b"GGUF" + bytes(range(256)) * 3, b"second part \x00\x01" * 50, b"tail"]


def _write_parts(root: Path, prefix: str, blobs: list[bytes]) -> None:
    for i, blob in enumerate(blobs, start=1):
        pkg = root / f"{prefix}{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "data" / f"part{i:02d}.bin").write_bytes(blob)
        (pkg / "__init__.py").write_text(
            "import os\n"
            "def get_part_path():\n"
            f"    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "
            f"'data', 'part{i:02d}.bin')\n"
        )


@pytest.fixture
def fake_preset(tmp_path, monkeypatch):
    """A preset of three fake parts, importable as fakepart_<n>_part1..3."""
    prefix = f"fakepart_{os.getpid()}_{abs(hash(str(tmp_path))) % 10**8}_part"
    _write_parts(tmp_path / "site", prefix, PART_BYTES)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    whole = b"".join(PART_BYTES)
    preset = lm.Preset(
        name="fake",
        description="test parts",
        modules=tuple(f"{prefix}{i}" for i in range(1, 4)),
        distributions=tuple(f"fake-part{i}==1.0" for i in range(1, 4)),
        sha256=hashlib.sha256(whole).hexdigest(),
        size=len(whole),
        gguf_name="fake.gguf",
    )
    monkeypatch.setitem(lm.PRESETS, "fake", preset)
    monkeypatch.setenv("JUDGEAUDIT_MODEL_CACHE", str(tmp_path / "cache"))
    yield preset
    for m in preset.modules:
        sys.modules.pop(m, None)


def test_assemble_concatenates_parts_in_order_and_verifies(fake_preset, tmp_path):
    out = lm.assemble(fake_preset, tmp_path / "cache")
    assert out.read_bytes() == b"".join(PART_BYTES)
    assert out.suffix == ".gguf"
    # nothing half-written is left next to it
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [out.name]
    assert lm.verify_parts(fake_preset) == fake_preset.sha256


def test_wrong_hash_is_refused_and_leaves_no_file(fake_preset, tmp_path, monkeypatch):
    bad = lm.Preset(**{**fake_preset.__dict__, "sha256": "0" * 64})
    with pytest.raises(lm.ModelFilesError) as ei:
        lm.assemble(bad, tmp_path / "cache")
    msg = str(ei.value)
    assert fake_preset.sha256 in msg  # the hash actually found
    assert "0" * 64 in msg            # the hash expected
    assert "pip install 'judgeaudit[local]'" in msg
    assert list((tmp_path / "cache").iterdir()) == []


def test_wrong_size_is_refused_naming_both_sizes(fake_preset, tmp_path):
    bad = lm.Preset(**{**fake_preset.__dict__, "size": fake_preset.size + 1})
    with pytest.raises(lm.ModelFilesError, match=f"{fake_preset.size:,} bytes, expected"):
        lm.assemble(bad, tmp_path / "cache")


def test_corrupted_part_changes_the_hash_and_is_refused(fake_preset, tmp_path):
    p = tmp_path / "site" / fake_preset.modules[1] / "data" / "part02.bin"
    data = bytearray(p.read_bytes())
    data[5] ^= 0xFF  # same size, different bytes
    p.write_bytes(bytes(data))
    with pytest.raises(lm.ModelFilesError, match="sha256 of the assembled parts is"):
        lm.verify_parts(fake_preset)


def test_missing_part_package_is_named(fake_preset, tmp_path):
    import shutil

    shutil.rmtree(tmp_path / "site" / fake_preset.modules[1])
    with pytest.raises(lm.ModelFilesError) as ei:
        lm.part_paths(fake_preset)
    msg = str(ei.value)
    assert "part 2/3" in msg and "fake-part2==1.0" in msg and fake_preset.modules[1] in msg
    assert "pip install 'judgeaudit[local]'" in msg


def test_missing_part_data_file_is_named(fake_preset, tmp_path):
    victim = tmp_path / "site" / fake_preset.modules[2] / "data" / "part03.bin"
    victim.unlink()
    with pytest.raises(lm.ModelFilesError, match=r"part 3/3 .*data file .*part03\.bin"):
        lm.part_paths(fake_preset)


def test_resolve_presets_paths_and_unknown_names(tmp_path):
    src = lm.resolve("qwen-1.5b")
    assert src.kind == "preset" and src.identity.endswith(lm.PRESETS["qwen-1.5b"].sha256)
    assert lm.resolve("").name == lm.DEFAULT_PRESET
    g = tmp_path / "m.gguf"
    g.write_bytes(b"GGUF")
    assert lm.resolve(str(g)).kind == "gguf"
    with pytest.raises(lm.ModelFilesError, match="no such file or directory"):
        lm.resolve(str(tmp_path / "absent.gguf"))
    with pytest.raises(lm.ModelFilesError, match="no config.json"):
        lm.resolve(str(tmp_path))
    other = tmp_path / "weights.bin"
    other.write_bytes(b"x")
    with pytest.raises(lm.ModelFilesError, match="not a .gguf"):
        lm.resolve(str(other))


def test_dir_identity_changes_when_weights_change(tmp_path):
    d = tmp_path / "hf"
    d.mkdir()
    (d / "config.json").write_text("{}")
    (d / "model.safetensors").write_bytes(b"a")
    first = lm.resolve(str(d)).identity
    (d / "model.safetensors").write_bytes(b"bb")
    assert lm.resolve(str(d)).identity != first


def test_converted_dir_is_reused_only_with_a_matching_marker(fake_preset, tmp_path, monkeypatch):
    """ensure_converted skips the (torch) conversion when a complete, matching conversion
    exists, and rebuilds a directory whose marker is for other weights."""
    src = lm.resolve("fake")
    calls: list[Path] = []

    def fake_convert(gguf: Path, out: Path) -> None:
        assert gguf.read_bytes() == b"".join(PART_BYTES)  # verified bytes reach the converter
        out.mkdir()
        (out / "config.json").write_text("{}")
        calls.append(gguf)

    monkeypatch.setattr(lm, "_convert_gguf", fake_convert)
    d = lm.ensure_converted(src)
    assert json.loads((d / "judgeaudit-source.json").read_text())["identity"] == src.identity
    # the verified GGUF is kept (the llamacpp backend's input), under its preset name
    assert calls[0] == lm.gguf_path(fake_preset) and calls[0].exists()
    assert lm.ensure_converted(src) == d and len(calls) == 1
    (d / "judgeaudit-source.json").write_text(json.dumps({"identity": "other", "version": 1}))
    assert lm.ensure_converted(src) == d and len(calls) == 2
    leftovers = [p.name for p in d.parent.iterdir() if p.name.startswith(".")]
    assert leftovers == []


def test_dtype_resolution():
    assert lm.resolve_dtype("fp32") == "fp32"
    assert lm.resolve_dtype("bfloat16") == "bf16"
    assert lm.resolve_dtype(None) in {"bf16", "fp32"}
    with pytest.raises(ValueError, match="expected fp32 or bf16"):
        lm.resolve_dtype("int8")


def test_decode_parameters_are_validated_and_part_of_the_cache_key():
    """In bf16 the decode modes can give different greedy texts (see generation.json), so a
    cached output of one mode must never be served for another; an explicit default keys the
    same as the default, and runtime parameters stay out of the key."""
    from judgeaudit.llm.providers.local import LocalProvider

    def ident(model: str, **params: str) -> dict:
        return LocalProvider(model, {"backend": "transformers", **params}).cache_identity()

    base = ident("qwen-0.5b")
    assert base == ident("qwen-0.5b", decode="lookup", lookup_k="10")
    assert base == ident("qwen-0.5b", threads="1", prefix_cache="off")
    assert "decode" not in base  # the default (lookup, k=10, chosen by the benchmark) keeps
    assert LocalProvider("qwen-0.5b", {"backend": "transformers"}).decode == "lookup"  # keys
    plain, k5 = ident("qwen-0.5b", decode="plain"), ident("qwen-0.5b", lookup_k="5")
    assert (plain["decode"], k5["decode"]) == ("plain", "lookup:k=5")
    assert len({str(base), str(plain), str(k5)}) == 3
    assert plain == ident("qwen-0.5b", decode="plain", lookup_k="5")  # k unused when plain
    assisted = ident("qwen-1.5b", decode="assisted")
    assert assisted["decode"] == "assisted:qwen-0.5b" and assisted != ident("qwen-1.5b")
    with pytest.raises(ValueError, match=r"decode='beam': expected one of lookup, plain, assisted"):
        LocalProvider("qwen-0.5b", {"decode": "beam"})
    with pytest.raises(ValueError, match="which is this model itself"):
        LocalProvider("qwen-0.5b", {"decode": "assisted"})  # the draft would be the model
    with pytest.raises(ValueError, match="lookup_k='0'"):
        LocalProvider("qwen-0.5b", {"lookup_k": "0"})


def test_busy_cores_sees_a_process_that_keeps_a_core_busy():
    """The auto thread count subtracts cores in use right now (/proc/stat over a short
    window), so a CPU hog started a moment ago counts, unlike in the lagging load average."""
    import subprocess
    import time

    if not Path("/proc/stat").exists():
        pytest.skip("no /proc/stat here")
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)
        assert lm.busy_cores(window=0.5) >= 0.6
    finally:
        hog.kill()
        hog.wait()


def test_gen_batch_is_validated_keys_apart_and_raises_concurrency():
    from judgeaudit.llm.providers.local import LocalProvider

    one = LocalProvider("qwen-0.5b", {})
    four = LocalProvider("qwen-0.5b", {"gen_batch": "4"})
    assert one.cache_identity() == LocalProvider("qwen-0.5b", {"gen_batch": "1"}).cache_identity()
    assert four.cache_identity() != one.cache_identity()
    assert (one.default_concurrency, four.default_concurrency) == (1, 4)
    with pytest.raises(ValueError, match="gen_batch='0'"):
        LocalProvider("qwen-0.5b", {"gen_batch": "0"})


@pytest.mark.parametrize(("model", "params", "said"), [
    ("qwen-7b", {}, "unknown local model 'qwen-7b': not a preset"),
    ("/nonexistent/model.gguf", {}, "no such file or directory"),
    ("qwen-0.5b", {"threads": "abc"}, "threads='abc': expected a whole number"),
    ("qwen-0.5b", {"threads": "0"}, "threads='0': must be at least 1"),
    ("qwen-0.5b", {"ctx": "-5"}, "ctx='-5': at least 256 tokens"),
])
def test_a_bad_model_or_setting_is_bad_input_before_the_run(model, params, said):
    """An unknown preset raised ModelFilesError, reported as a bug in judgeaudit with a
    traceback and exit 3; threads and ctx were read when the model loaded, after the run had
    begun. Both are ValueErrors (exit 2) when the judge is made."""
    from judgeaudit.llm.providers.local import LocalProvider

    with pytest.raises(ValueError, match=said):
        LocalProvider(model, params)


# ---- the kept GGUF -----------------------------------------------------------------------------


def test_ensure_gguf_keeps_the_verified_file_and_trusts_it_until_it_changes(fake_preset,
                                                                              monkeypatch):
    src = lm.resolve("fake")
    path = lm.ensure_gguf(src)
    assert path == lm.gguf_path(fake_preset) and path.read_bytes() == b"".join(PART_BYTES)
    marker = json.loads(path.with_name(path.name + ".verified.json").read_text())
    assert marker["sha256"] == fake_preset.sha256
    # a second call trusts the marker: no hashing, no assembling
    hashed: list[Path] = []
    real_hash = lm._hash_file
    monkeypatch.setattr(lm, "_hash_file", lambda p: hashed.append(p) or real_hash(p))
    monkeypatch.setattr(lm, "assemble", lambda *a: pytest.fail("assembled again"))
    assert lm.ensure_gguf(src) == path and hashed == []
    # touched but the same bytes: hashed once more, kept, trusted again
    os.utime(path, ns=(1, 1))
    assert lm.ensure_gguf(src) == path and hashed == [path]
    assert lm.ensure_gguf(src) == path and hashed == [path]


def test_ensure_gguf_replaces_a_kept_file_that_is_not_the_presets(fake_preset, caplog):
    src = lm.resolve("fake")
    path = lm.ensure_gguf(src)
    data = bytearray(path.read_bytes())
    data[7] ^= 0xFF
    path.write_bytes(bytes(data))  # same size, new mtime, wrong bytes
    assert lm.ensure_gguf(src) == path
    assert path.read_bytes() == b"".join(PART_BYTES)  # reassembled from the parts
    assert "is not model 'fake'" in caplog.text
    with pytest.raises(lm.ModelFilesError, match="is not model 'fake'"):
        lm.verify_file(Path(str(path) + ".verified.json"), fake_preset)
    assert sorted(p.name for p in path.parent.iterdir() if not p.name.endswith(".lock")) == [
        "fake.gguf", "fake.gguf.verified.json"]


def test_ensure_gguf_of_a_user_file_is_the_file_and_a_directory_is_refused(tmp_path):
    g = tmp_path / "mine.gguf"
    g.write_bytes(b"GGUF")
    assert lm.ensure_gguf(lm.resolve(str(g))) == g.resolve()
    d = tmp_path / "hf"
    d.mkdir()
    (d / "config.json").write_text("{}")
    with pytest.raises(lm.ModelFilesError, match="not a GGUF file"):
        lm.ensure_gguf(lm.resolve(str(d)))


# ---- the backend choice ------------------------------------------------------------------------

AVX2 = {"avx", "avx2", "fma", "f16c", "bmi2", "sse4_2"}


@pytest.fixture
def no_record(tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGEAUDIT_MODEL_CACHE", str(tmp_path / "models"))
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)


def _flags(monkeypatch, flags: set[str], machine: str = "x86_64",
           installed: tuple[str, ...] = ("llamacpp",)):
    monkeypatch.setattr(lm, "cpu_flags", lambda: set(flags))
    monkeypatch.setattr(lm.platform, "machine", lambda: machine)
    monkeypatch.setattr(lm, "installed", lambda backend: backend in installed)


def test_auto_backend_follows_the_cpu_flags(no_record, monkeypatch):
    src = lm.resolve("qwen-1.5b")
    _flags(monkeypatch, AVX2)
    assert lm.choose_backend(None, src)[0] == "llamacpp"
    assert lm.choose_backend("auto", src)[0] == "llamacpp"
    # AMX tiles: transformers bf16 (measured 1.3x / 3x ik there)
    _flags(monkeypatch, AVX2 | {"avx512f", "avx512_bf16", "amx_bf16", "amx_tile"})
    backend, why = lm.choose_backend("auto", src)
    assert backend == "transformers" and "AMX" in why
    # AVX512-BF16 without AMX (AMD Zen 4): the integer backend, measured as fast there
    _flags(monkeypatch, AVX2 | {"avx512f", "avx512_bf16"})
    backend, why = lm.choose_backend("auto", src)
    assert backend == "llamacpp" and "without AMX" in why
    assert lm.resolve_dtype(None) == "bf16"  # transformers, when asked for, still runs bf16
    # ONEDNN_MAX_CPU_ISA capping torch below AMX makes an AMX CPU count as one without
    _flags(monkeypatch, AVX2 | {"avx512f", "avx512_bf16", "amx_bf16", "amx_tile"})
    for isa, backend in (("AVX512_CORE_BF16", "llamacpp"), ("AVX2", "llamacpp"),
                         ("AVX512_CORE_AMX", "transformers"), ("DEFAULT", "transformers")):
        monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", isa)
        assert lm.choose_backend("auto", src)[0] == backend, isa
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    assert "no bf16 units" in lm.choose_backend("auto", src)[1]
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA")
    # a CPU the AVX2 wheel cannot run, or no xllamacpp: transformers
    _flags(monkeypatch, {"sse4_2", "avx"})
    backend, why = lm.choose_backend("auto", src)
    assert backend == "transformers" and "cannot run" in why
    _flags(monkeypatch, AVX2, installed=())
    backend, why = lm.choose_backend("auto", src)
    assert backend == "transformers" and "not installed" in why
    # ik before llamacpp on x86_64 where both are installed (measured faster there)
    _flags(monkeypatch, AVX2, installed=("ik", "llamacpp"))
    backend, why = lm.choose_backend("auto", src)
    assert backend == "ik" and "ik_llama.cpp" in why
    _flags(monkeypatch, AVX2 | {"amx_bf16"}, installed=("ik", "llamacpp"))
    assert lm.choose_backend("auto", src)[0] == "transformers"
    # ARM: NEON (asimd) suffices, and only llamacpp is taken there (ik unmeasured on ARM)
    _flags(monkeypatch, {"fp", "asimd", "asimddp"}, machine="aarch64",
           installed=("ik", "llamacpp"))
    assert lm.choose_backend("auto", src)[0] == "llamacpp"


def test_explicit_backend_dtype_and_directories(no_record, monkeypatch, tmp_path):
    src = lm.resolve("qwen-0.5b")
    _flags(monkeypatch, AVX2)
    assert lm.choose_backend("transformers", src) == ("transformers", "requested")
    assert lm.choose_backend("LlamaCpp", src)[0] == "llamacpp"
    backend, why = lm.choose_backend("auto", src, ("dtype",))
    assert backend == "transformers" and "dtype" in why
    assert lm.choose_backend("ik", src) == ("ik", "requested")
    with pytest.raises(ValueError, match="expected auto, transformers, ik, llamacpp"):
        lm.choose_backend("gpu", src)
    d = tmp_path / "hf"
    d.mkdir()
    (d / "config.json").write_text("{}")
    assert lm.choose_backend("auto", lm.resolve(str(d)))[0] == "transformers"
    for backend in ("llamacpp", "ik"):
        with pytest.raises(ValueError, match="transformers model directory"):
            lm.choose_backend(backend, lm.resolve(str(d)))


def test_auto_skips_llamacpp_for_a_gguf_whose_tokenizer_it_cannot_rebuild(no_record,
                                                                         monkeypatch, tmp_path):
    from judgeaudit.llm.gguf_meta import write_gguf

    _flags(monkeypatch, AVX2)
    ok = write_gguf(tmp_path / "q.gguf", {"tokenizer.ggml.model": "gpt2",
                                          "tokenizer.ggml.pre": "qwen2",
                                          "tokenizer.ggml.tokens": ["a"],
                                          "tokenizer.ggml.merges": ["a a"]})
    assert lm.choose_backend("auto", lm.resolve(str(ok)))[0] == "llamacpp"
    other = write_gguf(tmp_path / "l.gguf", {"tokenizer.ggml.model": "llama"})
    backend, why = lm.choose_backend("auto", lm.resolve(str(other)))
    assert backend == "transformers" and "'llama'" in why


def test_a_recorded_measurement_decides_auto_on_the_same_machine_only(no_record, monkeypatch):
    src = lm.resolve("qwen-1.5b")
    _flags(monkeypatch, AVX2)
    path = lm.record_backend_choice("transformers", {"s_per_verdict": {"transformers": 1.0}})
    backend, why = lm.choose_backend("auto", src)
    assert backend == "transformers" and str(path) in why
    # another CPU (other flags) does not match the record: back to the flag rule
    _flags(monkeypatch, AVX2 | {"avx512f"})
    assert lm.choose_backend("auto", src)[0] == "llamacpp"
    # a record of llamacpp is not followed where xllamacpp is missing
    _flags(monkeypatch, AVX2, installed=())
    lm.record_backend_choice("llamacpp", {})
    assert lm.choose_backend("auto", src)[0] == "transformers"
    # a record of llamacpp is followed where ik is installed too (the measurement wins)
    _flags(monkeypatch, AVX2, installed=("ik", "llamacpp"))
    assert lm.choose_backend("auto", src)[0] == "llamacpp"
    with pytest.raises(ValueError):
        lm.record_backend_choice("gpu", {})
    # a bf16 CPU's record is not followed with torch capped below bf16 (the AVX2-only kind
    # emulated): that is another machine for the choice
    _flags(monkeypatch, AVX2 | {"amx_bf16"}, installed=("ik",))
    lm.record_backend_choice("transformers", {})
    assert "measured" in lm.choose_backend("auto", src)[1]
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    assert lm.choose_backend("auto", src) == (
        "ik", "no bf16 units: ik_llama.cpp runs the quantized weights as integers")
    # ... and capped below AMX only (AVX512_CORE_BF16): another machine too, by the flag rule
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX512_CORE_BF16")
    _flags(monkeypatch, AVX2 | {"avx512_bf16", "amx_bf16"}, installed=("ik",))
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA")
    lm.record_backend_choice("transformers", {})
    assert "measured" in lm.choose_backend("auto", src)[1]
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX512_CORE_BF16")
    backend, why = lm.choose_backend("auto", src)
    assert backend == "ik" and "without AMX" in why


def test_provider_backend_parameter_and_cache_identity(no_record, monkeypatch):
    """The backend is in the key: llamacpp keys carry it (and the weights' sha256); a
    transformers key is the one made before backends existed. Transformers-only settings
    are refused with backend=llamacpp."""
    from judgeaudit.llm.providers.local import LocalProvider

    _flags(monkeypatch, AVX2)

    def ident(**params: str) -> dict:
        return LocalProvider("qwen-1.5b", params).cache_identity()

    sha = lm.PRESETS["qwen-1.5b"].sha256
    auto, llama, torch_ = ident(), ident(backend="llamacpp"), ident(backend="transformers")
    assert auto == llama and llama["backend"] == "llamacpp" and llama["weights"] == f"sha256:{sha}"
    assert "backend" not in torch_ and torch_["weights"] == f"sha256:{sha}"
    assert torch_ != llama and torch_ == ident(backend="transformers", decode="lookup")
    assert llama == ident(threads="1", ctx="4096", prefix_cache="off")  # runtime only
    assert ident(gen_batch="4") != llama
    assert LocalProvider("qwen-1.5b", {"gen_batch": "4"}).default_concurrency == 4
    assert LocalProvider("qwen-1.5b", {"backend": "llamacpp", "decode": "plain"}).backend \
        == "llamacpp"
    for backend in ("llamacpp", "ik"):
        for k, v in (("dtype", "fp32"), ("decode", "lookup"), ("lookup_k", "5")):
            with pytest.raises(ValueError, match=f"{k}='{v}' is a transformers setting"):
                LocalProvider("qwen-1.5b", {"backend": backend, k: v})
    ik = ident(backend="ik")
    assert ik["backend"] == "ik" and ik["weights"] == llama["weights"] and ik != llama
    _flags(monkeypatch, AVX2, installed=("ik", "llamacpp"))
    assert ident() == ik  # auto took ik: its key is an explicit ik's
    # with auto, a transformers-only setting means transformers
    for k, v in (("dtype", "fp32"), ("decode", "assisted"), ("lookup_k", "5")):
        assert LocalProvider("qwen-1.5b", {k: v}).backend == "transformers"
    assert LocalProvider("qwen-1.5b", {"decode": "plain"}).backend == "ik"


def _cheap_convert(gguf: Path, out: Path) -> None:
    """Stands in for `_convert_gguf`: the real conversion loads torch and transformers and
    dequantizes the weights (about a minute, several GB), too heavy for the suite; what is
    tested here is when the conversion runs and what is said before it, not the conversion."""
    out.mkdir()
    (out / "config.json").write_text("{}")


def test_a_first_time_conversion_is_announced_once_on_stderr(fake_preset, monkeypatch, capsys):
    """backend=transformers converted the weights on first use for about a minute without a
    word (it looked like a hang); now one line on stderr says what and that it happens once,
    and nothing is said when the converted copy is already there."""
    monkeypatch.setattr(lm, "_convert_gguf", _cheap_convert)
    src = lm.resolve("fake")
    assert lm.needs_conversion(src)  # an empty model cache (tmp_path/cache)
    d = lm.ensure_converted(src)
    out, err = capsys.readouterr()
    assert out == ""  # stdout stays the command's (--json prints one object there)
    # the GGUF it converts is assembled first, which says so too (its own line)
    assert err.splitlines() == [lm.conversion_notice(src),
                                lm.assembly_notice(src.preset, lm.gguf_path(src.preset))]
    assert err.startswith("converting the embedded judge's weights (fake) for "
                          "backend=transformers (once, about a minute")
    assert not lm.needs_conversion(src) and (d / "config.json").is_file()
    assert lm.ensure_converted(src) == d
    assert capsys.readouterr() == ("", "")  # the converted copy: silent
    # a conversion of other weights (a stale marker) is converted again, and said again
    (d / "judgeaudit-source.json").write_text(json.dumps({"identity": "other", "version": 1}))
    assert lm.needs_conversion(src)
    lm.ensure_converted(src)
    assert capsys.readouterr().err.count("converting") == 1


def test_a_model_that_needs_no_conversion_is_not_announced(fake_preset, tmp_path, monkeypatch,
                                                           capsys):
    """A transformers model directory loads as it is: never converted, never announced."""
    monkeypatch.setattr(lm, "_convert_gguf", _cheap_convert)
    d = tmp_path / "hf"
    d.mkdir()
    (d / "config.json").write_text("{}")
    src = lm.resolve(str(d))
    assert not lm.needs_conversion(src)
    assert lm.ensure_converted(src) == d.resolve()
    assert capsys.readouterr().err == ""
    gguf = tmp_path / "own.gguf"  # a user's own GGUF: named, and no promise of a minute
    gguf.write_bytes(b"GGUF")
    own = lm.resolve(str(gguf))
    assert lm.needs_conversion(own)
    assert lm.conversion_notice(own).startswith(
        f"converting the weights of {gguf.resolve()} for backend=transformers (once, a minute "
        "or more")
