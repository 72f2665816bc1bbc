"""Reading the text of a file a user gave: the data loaders' files and the replay provider's
verdict files. Datasets often ship compressed (`items.jsonl.gz`): gzip, bzip2 and xz files
are opened by their first bytes, whatever their name, and `data_suffix` names the format
under the compression suffix. The text is UTF-8, a byte-order mark dropped; a byte that is
not UTF-8 is named by line and column. A neutral module: it imports nothing of ours, so
`data` and `llm` both use it.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import zlib
from pathlib import Path

BOM = b"\xef\xbb\xbf"
# The first bytes of each compression, its name and how to open it as a stream.
COMPRESSIONS = ((b"\x1f\x8b", "gzip", lambda f: gzip.GzipFile(fileobj=f)),
                (b"BZh", "bzip2", bz2.BZ2File), (b"\xfd7zXZ\x00", "xz", lzma.LZMAFile))
COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz")
# The most a compressed file may expand to (a file that expands without end, a
# "decompression bomb", must not fill the memory): far above any judge dataset's size.
MAX_DECOMPRESSED = 4 << 30


class TextProblem(ValueError):
    """A file whose text cannot be read: the line (None: the whole file) and what is wrong;
    each caller words it as its own error (file, line, problem)."""

    def __init__(self, line: int | None, problem: str):
        super().__init__(problem if line is None else f"line {line}: {problem}")
        self.line, self.problem = line, problem


def data_suffix(path: str | Path) -> str:
    """The suffix that names the format, lower case: `.jsonl` for `items.jsonl.gz`."""
    suffixes = [s.lower() for s in Path(path).suffixes]
    if suffixes and suffixes[-1] in COMPRESSED_SUFFIXES:
        suffixes.pop()
    return suffixes[-1] if suffixes else ""


def decompressed(data: bytes, limit: int = MAX_DECOMPRESSED) -> bytes:
    """`data` as it was before compression when its first bytes say gzip, bzip2 or xz, else
    unchanged; a damaged or cut-off archive, or one that expands past `limit` bytes, raises
    TextProblem."""
    for magic, name, opener in COMPRESSIONS:
        if data.startswith(magic):
            try:
                with opener(io.BytesIO(data)) as f:
                    out = f.read(limit + 1)
            except (OSError, EOFError, ValueError, zlib.error, lzma.LZMAError) as exc:
                raise TextProblem(None, f"a {name} file that cannot be decompressed ({exc}); "
                                  "is it complete?") from None
            if len(out) > limit:
                raise TextProblem(None, f"a {name} file that expands to more than "
                                  f"{limit:,} bytes; decompress it yourself if it is meant "
                                  "to be that large")
            return out
    return data


def decode_text(data: bytes) -> str:
    """A file's bytes as text: decompressed (`decompressed`), UTF-8, a leading byte-order
    mark dropped. Bytes that are not UTF-8 raise TextProblem naming the line and the column
    counted in characters (UTF-16 is named as such)."""
    data = decompressed(data)
    if data.startswith(BOM):
        data = data[len(BOM):]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        off = exc.start
        line = data.count(b"\n", 0, off) + 1
        start = data.rfind(b"\n", 0, off) + 1
        col = len(data[start:off].decode("utf-8", errors="replace")) + 1
        if off < 2 and data[:2] in (b"\xff\xfe", b"\xfe\xff"):
            raise TextProblem(line, "not valid UTF-8: the file looks like UTF-16; save it as "
                              "UTF-8") from None
        raise TextProblem(line, f"not valid UTF-8 (byte 0x{data[off]:02x} at column {col}); "
                          "save the file as UTF-8") from None
