"""Reading a file a user gave: the data loaders' files and the replay provider's verdict
files. Datasets often ship compressed (`items.jsonl.gz`): gzip, bzip2 and xz files are
opened by their first bytes, whatever their name, and `data_suffix` names the format under
the compression suffix. The text is UTF-8, a byte-order mark dropped; a byte that is not
UTF-8 is named by line and column. CSV tables (`read_csv`) come as spreadsheets write them:
Excel in many European locales separates fields with ";", a .tsv (or a copy from a
spreadsheet) with tabs; the header line says which (`delimiter_of`), and every row is checked
against the header. A neutral module: it imports nothing of ours, so `data`, `llm` and
`rank` all use it.
"""

from __future__ import annotations

import bz2
import csv
import gzip
import io
import json
import lzma
import re
import zlib
from pathlib import Path
from typing import Any

BOM = b"\xef\xbb\xbf"
# The first bytes of each compression, its name and how to open it as a stream.
COMPRESSIONS = ((b"\x1f\x8b", "gzip", lambda f: gzip.GzipFile(fileobj=f)),
                (b"BZh", "bzip2", bz2.BZ2File), (b"\xfd7zXZ\x00", "xz", lzma.LZMAFile))
COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz")
# The most a compressed file may expand to (a file that expands without end, a
# "decompression bomb", must not fill the memory): far above any judge dataset's size.
MAX_DECOMPRESSED = 4 << 30


class TextProblem(ValueError):
    """A file whose text or table cannot be read: the line (None: the whole file) and what is wrong;
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


# The field separators a header line is read for, the first winning ties.
DELIMITERS = (",", ";", "\t", "|")

Record = dict[str, str]


def delimiter_of(text: str) -> str:
    """The separator the header line (the first that is not blank) uses most, outside quoted
    fields; "," when it has none of `DELIMITERS` (a one-column file)."""
    header = next((line for line in text.splitlines() if line.strip()), "")
    counts = dict.fromkeys(DELIMITERS, 0)
    quoted = False
    for ch in header:
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in counts:
            counts[ch] += 1
    best = max(DELIMITERS, key=lambda d: counts[d])  # max keeps the first of equals
    return best if counts[best] else ","


def read_csv(text: str) -> tuple[list[str], list[tuple[int, Record]]]:
    """(header, [(line the row starts on, {column: value})]) of a CSV text whose separator is
    its header's (`delimiter_of`), or the one an Excel "sep=;" first line names. Blank lines
    are skipped; a header naming a column twice, a row with more or fewer fields than the
    header, an unclosed quote (strict: it must not swallow the rows after it), no header or
    no rows raise TextProblem."""
    first, _, rest = text.partition("\n")
    named = first.strip().lower()
    skipped = 0
    if named.startswith("sep=") and len(named) == 5:  # Excel's separator line
        sep, text, skipped = first.strip()[4], rest, 1
    else:
        sep = delimiter_of(text)
    # Python's default field limit (131,072 characters) refused long responses (a long code
    # answer or a document), which nothing else here limits
    csv.field_size_limit(max(csv.field_size_limit(), 2**31 - 1))
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=sep, strict=True)
    header: list[str] | None = None
    rows: list[tuple[int, Record]] = []
    end = skipped
    try:
        for cells in reader:
            start, end = end + 1, reader.line_num + skipped
            if not cells or (len(cells) == 1 and not cells[0].strip()):
                continue  # a blank line
            if header is None:
                header = cells
                twice = sorted({c for c in header if header.count(c) > 1})
                if twice:
                    raise TextProblem(start, f"column(s) {', '.join(map(repr, twice))} appear "
                                     "more than once in the header")
                continue
            if len(cells) != len(header):
                more = "more" if len(cells) > len(header) else "fewer"
                shown = ", ".join(header) if len(header) <= 12 else f"{', '.join(header[:12])}, ..."
                raise TextProblem(start, f"{len(cells)} fields, {more} than the header's "
                                 f"{len(header)} ({shown}; fields separated by {sep!r})")
            rows.append((start, dict(zip(header, cells, strict=True))))
    except csv.Error as exc:
        raise TextProblem(end + 1, f"malformed CSV in the record starting on this line: {exc}"
                         ) from None
    if header is None:
        raise TextProblem(None, "empty file; expected a CSV header line")
    if not rows:
        raise TextProblem(None, "no rows after the header line")
    return header, rows


class NotFinite(ValueError):
    """NaN or Infinity in a JSON text: Python's reader takes them, JSON has no such number."""


class KeyTwice(ValueError):
    """A key given twice in one JSON object: Python's reader keeps the last silently."""


def _refuse_constant(name: str) -> Any:
    raise NotFinite(name)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise KeyTwice(k)
        out[k] = v
    return out


def strict_json(text: str, unique: bool = True) -> Any:
    """`json.loads` refusing what JSON is not: NaN/Infinity (NotFinite) and, with `unique`, a
    key given twice in one object (KeyTwice). The data loaders and the replay provider both
    read with it, so a recorded verdict given twice in one record is refused as a data
    record's field is (the replay copy of this reader kept the last). Syntax errors stay
    json.JSONDecodeError, nesting past the limit RecursionError: each caller words them."""
    return json.loads(text, parse_constant=_refuse_constant,
                      object_pairs_hook=_unique_keys if unique else None)


# Characters that act on a terminal or reorder the text around them instead of showing: C0
# and C1 controls (but tab, newline and CR), DEL, bidi overrides and isolates, lone surrogates.
# The noncharacters U+FFFE and U+FFFF are shown the same way: XML 1.0 cannot carry them.
_ACTING = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e"
                     "\u2066-\u2069\ud800-\udfff\ufffe\uffff]")


def visible(text: str) -> str:
    """Untrusted text (an item id, a judge's answer) with its acting characters shown as
    escapes (ESC as \\x1b, a right-to-left override as \\u202e): raw, an id in a data file
    recoloured the terminal, set its title or reversed the line, and put NUL into reports."""
    return _ACTING.sub(lambda m: (f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                                  else f"\\u{ord(m.group()):04x}"), text)
