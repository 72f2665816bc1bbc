"""Reading a CSV file a user made: the data loaders' tables and the replay provider's
verdict files. Spreadsheets write more than commas: Excel in many European locales separates
fields with ";", and a .tsv (or a copy from a spreadsheet) with tabs; the header line says
which (`delimiter_of`). Every row is checked against the header, and a problem names the
line it is on. A neutral module: it imports nothing of ours, so `data` and `llm` both use it.
"""

from __future__ import annotations

import csv
import io

# The field separators a header line is read for, the first winning ties.
DELIMITERS = (",", ";", "\t", "|")

Record = dict[str, str]


class CsvProblem(ValueError):
    """A CSV file that cannot be read as a table: the line (None: the whole file) and what is
    wrong; each caller words it as its own error (file, line, problem)."""

    def __init__(self, line: int | None, problem: str):
        super().__init__(problem if line is None else f"line {line}: {problem}")
        self.line, self.problem = line, problem


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
    no rows raise CsvProblem."""
    first, _, rest = text.partition("\n")
    named = first.strip().lower()
    skipped = 0
    if named.startswith("sep=") and len(named) == 5:  # Excel's separator line
        sep, text, skipped = first.strip()[4], rest, 1
    else:
        sep = delimiter_of(text)
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
                    raise CsvProblem(start, f"column(s) {', '.join(map(repr, twice))} appear "
                                     "more than once in the header")
                continue
            if len(cells) != len(header):
                more = "more" if len(cells) > len(header) else "fewer"
                shown = ", ".join(header) if len(header) <= 12 else f"{', '.join(header[:12])}, ..."
                raise CsvProblem(start, f"{len(cells)} fields, {more} than the header's "
                                 f"{len(header)} ({shown}; fields separated by {sep!r})")
            rows.append((start, dict(zip(header, cells, strict=True))))
    except csv.Error as exc:
        raise CsvProblem(end + 1, f"malformed CSV in the record starting on this line: {exc}"
                         ) from None
    if header is None:
        raise CsvProblem(None, "empty file; expected a CSV header line")
    if not rows:
        raise CsvProblem(None, "no rows after the header line")
    return header, rows
