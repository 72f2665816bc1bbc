"""Read the metadata (key/value header) of a GGUF file, in pure Python.

The `gguf` package's reader maps every tensor and wraps each of the ~300,000 tokenizer strings
of a Qwen model in numpy views: about 30 s on the 2-core development machine. The llamacpp
backend needs only the header (tokenizer vocabulary, merges, special token ids, chat
template), which this reader parses in well under a second and without touching the tensor
data. Little-endian GGUF v2 and v3 (every file llama.cpp writes today).
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any, BinaryIO

MAGIC = b"GGUF"
# GGUF value types: id -> (struct format, size) for fixed-size scalars
_SCALARS = {
    0: ("<B", 1), 1: ("<b", 1), 2: ("<H", 2), 3: ("<h", 2), 4: ("<I", 4), 5: ("<i", 4),
    6: ("<f", 4), 7: ("<?", 1), 10: ("<Q", 8), 11: ("<q", 8), 12: ("<d", 8),
}
_STRING, _ARRAY = 8, 9
# Typed arrays read in one call (array module type codes)
_ARRAY_CODES = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 10: "Q", 11: "q",
                12: "d"}


class GGUFError(ValueError):
    """Not a GGUF file, or a truncated / unsupported one."""


class _Reader:
    def __init__(self, f: BinaryIO, path: Path):
        self.f = f
        self.path = path

    def read(self, n: int) -> bytes:
        b = self.f.read(n)
        if len(b) != n:
            raise GGUFError(f"{self.path}: truncated GGUF header")
        return b

    def scalar(self, vtype: int) -> Any:
        fmt, size = _SCALARS[vtype]
        return struct.unpack(fmt, self.read(size))[0]

    def string(self) -> str:
        (n,) = struct.unpack("<Q", self.read(8))
        if n > 1 << 30:
            raise GGUFError(f"{self.path}: implausible string length {n}")
        return self.read(n).decode("utf-8", errors="replace")

    def value(self, vtype: int) -> Any:
        if vtype == _STRING:
            return self.string()
        if vtype == _ARRAY:
            etype, count = struct.unpack("<IQ", self.read(12))
            if etype in _ARRAY_CODES:
                import array

                a = array.array(_ARRAY_CODES[etype])
                a.frombytes(self.read(count * a.itemsize))
                return a.tolist()
            if etype == 7:
                return [bool(b) for b in self.read(count)]
            return [self.value(etype) for _ in range(count)]
        if vtype in _SCALARS:
            return self.scalar(vtype)
        raise GGUFError(f"{self.path}: unknown GGUF value type {vtype}")


def read_metadata(path: str | Path) -> dict[str, Any]:
    """All key/value pairs of a GGUF file's header, plus `GGUF.version` and
    `GGUF.tensor_count`. Raises GGUFError for anything that is not a readable GGUF."""
    path = Path(path)
    with open(path, "rb") as f:
        r = _Reader(f, path)
        magic = f.read(4)
        if magic != MAGIC:
            raise GGUFError(f"{path}: not a GGUF file (starts with {magic!r}, expected b'GGUF')")
        (version,) = struct.unpack("<I", r.read(4))
        if version not in (2, 3):
            raise GGUFError(f"{path}: GGUF version {version} is not supported (2 or 3)")
        n_tensors, n_kv = struct.unpack("<QQ", r.read(16))
        meta: dict[str, Any] = {"GGUF.version": version, "GGUF.tensor_count": n_tensors}
        for _ in range(n_kv):
            key = r.string()
            (vtype,) = struct.unpack("<I", r.read(4))
            meta[key] = r.value(vtype)
    return meta


def write_gguf(path: str | Path, meta: dict[str, Any], payload: bytes = b"") -> Path:
    """Write a minimal GGUF v3 file with `meta` (str, int, float, bool and lists of str/int)
    and no tensors, followed by `payload`: tiny stand-ins for tests."""
    path = Path(path)

    def s(x: str) -> bytes:
        b = x.encode()
        return struct.pack("<Q", len(b)) + b

    def val(v: Any) -> tuple[int, bytes]:
        if isinstance(v, bool):
            return 7, struct.pack("<?", v)
        if isinstance(v, int):
            return (4, struct.pack("<I", v)) if 0 <= v < 1 << 32 else (11, struct.pack("<q", v))
        if isinstance(v, float):
            return 6, struct.pack("<f", v)
        if isinstance(v, str):
            return _STRING, s(v)
        if isinstance(v, list):
            etype = val(v[0])[0] if v else _STRING
            body = b"".join(val(x)[1] for x in v)
            return _ARRAY, struct.pack("<IQ", etype, len(v)) + body
        raise TypeError(f"cannot write {type(v).__name__} to GGUF")

    out = bytearray(MAGIC + struct.pack("<IQQ", 3, 0, len(meta)))
    for k, v in meta.items():
        t, b = val(v)
        out += s(k) + struct.pack("<I", t) + b
    path.write_bytes(bytes(out) + payload)
    return path
