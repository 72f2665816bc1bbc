"""How `parse_choice` reads LLMBar's raw judge answers, against the winner LLMBar recorded.

The data: ../shared/data/llmbar/raw_results_sample/LLMBar/**/result.json, one folder per
subset, judge and prompting strategy (Vanilla: a bare "Output (a)"; Swap_CoT: a chain of
thought that ends "Therefore, Output (b) is better.", in both orders, then a review of the
two when they disagree). Every answer is read with the default choices ("A", "B"), mapped
back to LLMBar's numbering ("swap = True" shows output_2 first) and counted per folder:

    right    read, and the same as the recorded winner; or not read where LLMBar recorded
             no winner either (two Llama-2 refusals: "I cannot provide a response ..."),
             also counted apart as right_no_winner
    wrong    read, and not the recorded winner (or read where none was recorded)
    invalid  not read (None) where LLMBar recorded a winner: counted, never guessed

Each count comes with n and a 95% Wilson interval. The wrong ones are listed with the end
of their answer, to be looked at.

    python benchmarks/parse_llmbar_cot.py                 # measures the reader installed,
                                                          # written under "after"
    git archive <old> src | tar -x -C /tmp/old
    PYTHONPATH=/tmp/old/src python benchmarks/parse_llmbar_cot.py --key before \
        --reader-commit <old>                             # an older reader, under "before"

Writes benchmarks/results/parse_llmbar_cot.json (other keys in it are kept). Skips, saying
so, when the shared data is absent.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from judgeaudit.judges import parse as parse_module
from judgeaudit.judges.parse import parse_choice
from judgeaudit.stats import rate

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "parse_llmbar_cot.json"
RAW = Path("llmbar") / "raw_results_sample" / "LLMBar"
# Answers read otherwise than recorded that were looked at one by one, and why.
LOOKED_AT = {
    ("Adversarial/GPTInst/GPT-4/Swap_CoT", 41, "swap = True"):
        "the recorded winner is LLMBar's misreading: the review quotes 'Assistant (a) argues "
        "that Output (a) is better because ...' and ends 'Therefore, Output (b) is better.' "
        "(output_1 in this swapped order); LLMBar recorded output_2, the quoted phrase's",
}


def data_dir() -> Path:
    """The shared data: $JUDGEAUDIT_SHARED_DATA, else ../shared/data from the project."""
    env = os.environ.get("JUDGEAUDIT_SHARED_DATA")
    return Path(env) if env else (ROOT / ".." / "shared" / "data").resolve()


def answers(raw: Path) -> list[dict[str, Any]]:
    """Every recorded answer under `raw`: its folder, item index, order key ("swap =
    True"), text and the winner LLMBar recorded ("1"/"2", mapped back to the original
    numbering)."""
    rows: list[dict[str, Any]] = []
    for f in sorted(raw.rglob("result.json")):
        folder = str(f.parent.relative_to(raw))
        for i, item in enumerate(json.loads(f.read_text(encoding="utf-8"))):
            for entry in item["results"]:
                for key, v in entry.items():
                    comp = v["completion"]
                    text = comp[0] if isinstance(comp, list) else comp
                    if isinstance(text, list):
                        text = text[0]
                    rows.append({"folder": folder, "item": i, "order": key, "text": text,
                                 "winner": str(v.get("winner") or "")})
    return rows


def read_winner(text: str, order: str) -> str | None:
    """The winner `parse_choice` reads, in LLMBar's numbering ("1"/"2"), or None."""
    got = parse_choice(text)
    if got is None:
        return None
    swapped = order.strip().endswith("True")
    return {"A": "2", "B": "1"}[got] if swapped else {"A": "1", "B": "2"}[got]


def _share(k: int, n: int) -> dict[str, Any]:
    e = rate(k, n)
    return {"count": k, "n": n, "share": round(e.value, 4) if n else None,
            "ci95": [round(e.ci95[0], 4), round(e.ci95[1], 4)]}


def measure(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per folder and per judge/strategy (e.g. "GPT-4/Swap_CoT"): right / wrong / invalid,
    and the wrong answers themselves."""
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    wrong: list[dict[str, Any]] = []
    for r in rows:
        got = read_winner(r["text"], r["order"])
        if got is None:
            kind = "invalid" if r["winner"] else "right"
        else:
            kind = "right" if got == r["winner"] else "wrong"
        for group in (r["folder"], "ALL " + "/".join(r["folder"].split("/")[-2:])):
            counts[group][kind] += 1
            counts[group]["right_no_winner"] += got is None and not r["winner"]
        if kind == "wrong":
            key = (r["folder"], r["item"], r["order"])
            wrong.append({"folder": r["folder"], "item": r["item"], "order": r["order"],
                          "recorded": r["winner"], "read": got, "end": r["text"][-300:],
                          "note": LOOKED_AT.get(key, "not looked at yet")})
    table = {}
    for group in sorted(counts):
        c = counts[group]
        n = c["right"] + c["wrong"] + c["invalid"]
        table[group] = {k: _share(c[k], n)
                        for k in ("right", "wrong", "invalid", "right_no_winner")}
    return {"folders": table, "wrong_answers": wrong}


def _commit() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                              capture_output=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--key", default="after", help="where in the results file to write")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--reader-commit", default=None,
                    help="the commit of the reader measured (default: the project's HEAD)")
    args = ap.parse_args()
    raw = data_dir() / RAW
    if not raw.is_dir():
        print(f"skipped: LLMBar raw answers absent at {raw} "
              "(set JUDGEAUDIT_SHARED_DATA to the shared data's path)")
        return 0
    rows = answers(raw)
    result = measure(rows)
    result["reader_commit"] = args.reader_commit or _commit()
    result["reader_is_the_projects"] = (Path(parse_module.__file__).resolve()
                                        .is_relative_to(ROOT / "src"))
    for group, c in result["folders"].items():
        if group.startswith("ALL "):
            print(f"{group:28s} n={c['right']['n']:5d}  right {c['right']['count']:5d}  "
                  f"wrong {c['wrong']['count']:3d}  invalid {c['invalid']['count']:4d}")
    doc = json.loads(args.out.read_text()) if args.out.exists() else {}
    doc[args.key] = result
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.out} [{args.key}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
