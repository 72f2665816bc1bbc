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
    assert not calls[0].exists()  # the assembled GGUF is deleted afterwards
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
        return LocalProvider(model, params).cache_identity()

    base = ident("qwen-0.5b")
    assert base == ident("qwen-0.5b", decode="lookup", lookup_k="10")
    assert base == ident("qwen-0.5b", threads="1", prefix_cache="off")
    assert "decode" not in base  # the default (lookup, k=10, chosen by the benchmark) keeps
    assert LocalProvider("qwen-0.5b", {}).decode == "lookup"  # the keys made under it
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
