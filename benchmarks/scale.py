"""Scale benchmark: does judgeaudit stay linear on long texts and many items?

Run by hand, one part at a time on a shared machine:
    python benchmarks/scale.py preserve            # answer-preservation checks, 25 KB .. 5 MB
    python benchmarks/scale.py audit               # `judgeaudit audit`, sim judge, 500..5,000
    python benchmarks/scale.py evaluate            # `judgeaudit evaluate`, 2,000..20,000 items
    python benchmarks/scale.py audit --sizes 500   # a quick look at one size
Each part is merged into benchmarks/results/scale.json (other parts are kept).

preserve: `answer_preserved`, `words_preserved` and `final_answer_kept` on a prose-like text of
each size against (a) the same text with one sentence inserted in the middle (a small edit) and
(b) a rewrite that bolds every 7th word and swaps every 11th for a synonym (a large rewrite);
median of 3 runs each.

audit / evaluate: a JSONL of pairwise items with known labels (arithmetic and fact questions
with a right and a wrong answer, like the built-in data, 2-4 sentences each) is generated into
a temp dir, and the CLI runs in a subprocess with the sim judge and a fresh SQLite cache, one
run at a time. Wall time and the child's peak RSS (os.wait4's ru_maxrss) are recorded, with
seconds per item and the linearity ratio (seconds per item at the largest size / at the
smallest: 1.0 = linear; fixed start-up cost pushes it below 1). The child's CPU time (user +
sys) and its ratio are recorded too: on a shared machine they move less than wall time.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

OUT = ROOT / "benchmarks" / "results" / "scale.json"
BIN = ROOT / ".venv" / "bin" / "judgeaudit"
JUDGE = "sim?position=0.5&length=0.5&seed=0"
SIZES = {
    "preserve": (25_000, 250_000, 1_000_000, 5_000_000),
    "audit": (500, 2_000, 5_000),
    "evaluate": (2_000, 8_000, 20_000),
}

# --------------------------------------------------------------------------- machine


def machine() -> dict:
    info: dict = {"date": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
                  "python": platform.python_version(), "cores": os.cpu_count()}
    try:
        cpu = Path("/proc/cpuinfo").read_text()
        model = next((ln.split(":", 1)[1].strip() for ln in cpu.splitlines()
                      if ln.startswith("model name")), None)
        flags = next((ln.split(":", 1)[1].split() for ln in cpu.splitlines()
                      if ln.startswith("flags")), [])
        info["cpu_model"] = model
        info["cpu_flags"] = {f: f in flags for f in ("avx2", "avx512f", "avx512_bf16",
                                                      "amx_bf16")}
    except OSError:
        info["cpu_model"] = platform.processor() or None
    info["loadavg_start"] = list(os.getloadavg())
    try:
        info["git_commit"] = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
            check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        info["git_commit"] = None
    return info


# --------------------------------------------------------------------------- preserve

_WORDS = (
    "the", "of", "and", "to", "in", "is", "that", "it", "for", "on", "with", "as", "was", "by",
    "at", "from", "this", "be", "or", "an", "are", "which", "not", "have", "has", "but", "were",
    "one", "all", "their", "can", "more", "if", "when", "there", "so", "what", "about", "model",
    "answer", "result", "value", "system", "data", "method", "approach", "time", "number",
    "people", "work", "first", "second", "large", "small", "important", "different",
    "following", "using", "based", "shown",
)
_NAMES = ("Canberra", "Walker", "Austen", "Kyoto", "Darwin", "Newton", "Paris", "Lovelace")
_SYN = {"large": "big", "small": "little", "shown": "seen", "important": "key",
        "different": "distinct", "using": "with", "method": "technique", "people": "folk"}


def prose(nbytes: int, seed: int = 0) -> str:
    """Sentences of common words (what makes a word diff quadratic) with names and numbers."""
    rng = random.Random(seed)
    out: list[str] = []
    size = 0
    while size < nbytes:
        ws = rng.choices(_WORDS, k=rng.randint(8, 20))
        if rng.random() < 0.5:
            ws.insert(rng.randrange(1, len(ws)), rng.choice(_NAMES))
        if rng.random() < 0.3:
            ws.insert(rng.randrange(1, len(ws)), str(rng.randint(0, 5000)))
        sent = " ".join(ws)
        sent = sent[0].upper() + sent[1:] + "."
        out.append(sent)
        size += len(sent) + 1
    return " ".join(out)


def _median_time(fn, repeats: int = 3) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def bench_preserve(sizes: tuple[int, ...]) -> dict:
    from judgeaudit.perturb.preserve import answer_preserved, final_answer_kept, words_preserved

    rows = []
    for size in sizes:
        text = prose(size)
        mid = text.index(" ", len(text) // 2)
        small = text[:mid] + " Indeed, this is worth noting." + text[mid:]
        rewrite = " ".join(
            f"**{w}**" if k % 7 == 0 else _SYN.get(w, w) if k % 11 == 0 else w
            for k, w in enumerate(text.split()))
        for case, pert in (("small_edit", small), ("large_rewrite", rewrite)):
            row: dict = {"bytes": len(text), "case": case}
            for name, fn in (
                ("answer_preserved", partial(answer_preserved, text, pert, competitor="Sydney")),
                ("words_preserved", partial(words_preserved, text, pert)),
                ("final_answer_kept", partial(final_answer_kept, text, pert)),
            ):
                sec, res = _median_time(fn)
                row[f"{name}_s"] = round(sec, 4)
                row[f"{name}_ok"] = res[0]  # type: ignore[index]
            rows.append(row)
            print(f"preserve {len(text):>9,} B {case:13s} answer_preserved "
                  f"{row['answer_preserved_s']:.3f} s words {row['words_preserved_s']:.3f} s "
                  f"final {row['final_answer_kept_s']:.3f} s", flush=True)
    out: dict = {"rows": rows, "repeats": 3, "statistic": "median"}
    for case in ("small_edit", "large_rewrite"):
        r = [x for x in rows if x["case"] == case]
        if len(r) > 1:
            out[f"{case}_linearity"] = round(
                (r[-1]["answer_preserved_s"] / r[-1]["bytes"])
                / (r[0]["answer_preserved_s"] / r[0]["bytes"]), 2)
    return out


# --------------------------------------------------------------------------- load

_FACTS = [
    ("What is the capital of Australia?", "the capital of Australia", "Canberra", "Sydney"),
    ("Which planet is known as the Red Planet?", "the Red Planet", "Mars", "Venus"),
    ("Who wrote Pride and Prejudice?", "the author of Pride and Prejudice", "Jane Austen",
     "Charlotte Bronte"),
    ("What is the largest ocean on Earth?", "the largest ocean", "the Pacific", "the Atlantic"),
    ("Which element has the symbol O?", "the element with symbol O", "oxygen", "gold"),
    ("Who painted the Mona Lisa?", "the painter of the Mona Lisa", "Leonardo da Vinci",
     "Michelangelo"),
]


def _arith(rng: random.Random) -> tuple[str, str, str, str, str]:
    a, b = rng.randint(10, 999), rng.randint(10, 999)
    op, right = rng.choice([("+", a + b), ("-", a - b), ("*", a * b)])
    wrong = right + rng.choice([-10, -2, -1, 1, 2, 10])
    expr = f"{a} {op} {b}"

    def resp(v: int) -> str:
        return (f"To work out {expr}, take it one step at a time and check the result. "
                f"{expr} = {v}. The answer is {v}.")

    return f"What is {expr}?", resp(right), resp(wrong), str(right), str(wrong)


def _fact(rng: random.Random) -> tuple[str, str, str, str, str]:
    q, what, right, wrong = rng.choice(_FACTS)

    def resp(v: str) -> str:
        return (f"This is a well-known question. The answer is {v}, which is {what}. "
                f"Many sources agree on this point.")

    return q, resp(right), resp(wrong), right, wrong


def write_items(path: Path, n: int, seed: int = 0) -> None:
    """n labelled pairwise items (data/schema.py PairwiseItem), half arithmetic, half facts,
    the better response first or second at random."""
    rng = random.Random(seed)
    with path.open("w") as f:
        for i in range(n):
            prompt, good, bad, right, wrong = (_arith if i % 2 == 0 else _fact)(rng)
            label = rng.choice((1, 2))
            r1, r2 = (good, bad) if label == 1 else (bad, good)
            f.write(json.dumps({
                "id": f"scale:{i}", "prompt": prompt, "response_1": r1, "response_2": r2,
                "label": label, "quality": [1.0, 0.0] if label == 1 else [0.0, 1.0],
                "metadata": {"answer": right, "wrong_answer": wrong},
            }) + "\n")


def run_child(cmd: list[str], log: Path) -> dict:
    """Run one command; wall seconds, exit code and the child's own peak RSS."""
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    with log.open("w") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, cwd=ROOT,
                                env={**os.environ, "COLUMNS": "120", "NO_COLOR": "1"})
        _, status, usage = os.wait4(proc.pid, 0)
    sec = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    return {"seconds": round(sec, 2), "exit_code": proc.returncode,
            "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
            "cpu_user_s": round(usage.ru_utime, 2), "cpu_sys_s": round(usage.ru_stime, 2),
            "loadavg_1m_before": round(load0, 2)}


def bench_cli(command: str, sizes: tuple[int, ...], keep: Path | None) -> dict:
    rows = []
    with tempfile.TemporaryDirectory(prefix=f"scale-{command}-") as tmp:
        tdir = keep or Path(tmp)
        tdir.mkdir(parents=True, exist_ok=True)
        for n in sizes:
            out = tdir / f"{command}-{n}"
            out.mkdir(exist_ok=True)
            data = out / "items.jsonl"  # exactly n items: the CLI loads a file whole
            write_items(data, n)
            cmd = [str(BIN), command, "--judge", JUDGE, "--data", f"jsonl:{data}",
                   "--out", str(out), "--cache", str(out / "c.sqlite")]
            cmd += ["--n", str(n)] if command == "audit" else ["--limit", str(n)]
            r = run_child(cmd, out / "log.txt")
            res_file = out / "results.json"
            cpu = r["cpu_user_s"] + r["cpu_sys_s"]
            row = {"items": n, **r, "seconds_per_item": round(r["seconds"] / n, 5),
                   "cpu_seconds_per_item": round(cpu / n, 5),
                   "results_json_mb": (round(res_file.stat().st_size / 2**20, 2)
                                       if res_file.exists() else None),
                   "cache_mb": (round((out / "c.sqlite").stat().st_size / 2**20, 2)
                                if (out / "c.sqlite").exists() else None)}
            if res_file.exists():
                res = json.loads(res_file.read_text())
                calls = res.get("calls") or {}
                row["calls_made"] = calls.get("made")
                row["calls_cached"] = calls.get("cached")
                row["reported_seconds"] = res.get("seconds")
            if r["exit_code"] not in (0, 1):
                row["log_tail"] = (out / "log.txt").read_text()[-2000:]
            rows.append(row)
            print(f"{command} {n:>6} items: {r['seconds']:8.2f} s "
                  f"{row['seconds_per_item'] * 1000:7.2f} ms/item "
                  f"peak RSS {r['peak_rss_mb']:7.1f} MB exit {r['exit_code']}", flush=True)
    out_d: dict = {"command": " ".join(
        [command, "--judge", repr(JUDGE), "--data", "jsonl:ITEMS",
         "--n N" if command == "audit" else "--limit N", "--out DIR", "--cache DIR/c.sqlite"]),
        "rows": rows}
    if len(rows) > 1:
        out_d["linearity_ratio"] = round(rows[-1]["seconds_per_item"]
                                         / rows[0]["seconds_per_item"], 2)
        out_d["cpu_linearity_ratio"] = round(rows[-1]["cpu_seconds_per_item"]
                                             / rows[0]["cpu_seconds_per_item"], 2)
        out_d["peak_rss_mb_max"] = max(r["peak_rss_mb"] for r in rows)
    return out_d


# --------------------------------------------------------------------------- main


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("part", choices=("preserve", "audit", "evaluate"))
    ap.add_argument("--sizes", help="comma-separated sizes (default: the part's three/four)")
    ap.add_argument("--keep", type=Path, help="keep the generated data and outputs here")
    ap.add_argument("--no-write", action="store_true", help="print only")
    args = ap.parse_args()
    sizes = (tuple(int(s) for s in args.sizes.split(",")) if args.sizes
             else SIZES[args.part])
    info = machine()
    t0 = time.perf_counter()
    if args.part == "preserve":
        res = bench_preserve(sizes)
    else:
        res = bench_cli(args.part, sizes, args.keep)
    res["machine"] = {**info, "loadavg_end": list(os.getloadavg()),
                      "part_seconds": round(time.perf_counter() - t0, 1)}
    if args.no_write:
        print(json.dumps(res, indent=1))
        return
    doc = json.loads(OUT.read_text()) if OUT.exists() else {}
    doc["about"] = ("benchmarks/scale.py: preservation checks on long texts, `judgeaudit audit` "
                    "and `judgeaudit evaluate` on many items (sim judge); see its docstring")
    doc[args.part] = res
    OUT.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)} [{args.part}]")


if __name__ == "__main__":
    main()
