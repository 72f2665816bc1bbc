"""How close `--plan-only`'s token estimate (characters / `CHARS_PER_TOKEN`) comes to a real
tokenizer's count. Plans a default audit on each data set given (nothing is sent), then counts
the prompt tokens of every planned request's messages with the Qwen2.5 tokenizer the embedded
judge ships (read from its GGUF file: no download). The chat template's few tokens per
message are not counted by either side.

    python benchmarks/plan_estimate.py --out benchmarks/results/plan_estimate.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
DATA = {
    "builtin:facts": "builtin:facts",
    "llmbar Natural": f"llmbar:{SHARED / 'llmbar'}?subset=LLMBar/Natural",
    "mtbench human": f"mtbench:{SHARED / 'mt_bench'}",
}


def plan(data: str, tmp: Path) -> list[dict]:
    path = tmp / "plan.jsonl"
    env = {**os.environ, "JUDGEAUDIT_CACHE": str(tmp / "c.sqlite")}
    subprocess.run([sys.executable, "-m", "judgeaudit", "--plan-only", str(path), "audit",
                    "--judge", "openai:gpt-4o-mini", "--data", data, "--n", "40",
                    "--out", str(tmp / "out")], check=True, env=env, capture_output=True)
    return [json.loads(line) for line in path.read_text().splitlines()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    from transformers import AutoTokenizer

    from judgeaudit.llm.local_model import PRESETS, gguf_path
    from judgeaudit.llm.plan import CHARS_PER_TOKEN

    gguf = gguf_path(PRESETS["qwen-0.5b"])
    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    rows = {}
    for name, spec in DATA.items():
        if "shared" in spec and not SHARED.exists():
            print(f"{name}: skipped ({SHARED} is absent)")
            continue
        with tempfile.TemporaryDirectory() as d:
            lines = plan(spec, Path(d))
        texts = [m["content"] for ln in lines for m in ln["body"]["messages"]]
        chars = sum(len(t) for t in texts)
        tokens = sum(len(tok.encode(t, add_special_tokens=False)) for t in texts)
        per_request = [sum(len(m["content"]) for m in ln["body"]["messages"])
                       / CHARS_PER_TOKEN
                       / max(1, sum(len(tok.encode(m["content"], add_special_tokens=False))
                                    for m in ln["body"]["messages"]))
                       for ln in lines]
        rows[name] = {
            "requests": len(lines), "characters": chars, "qwen_tokens": tokens,
            "estimated_tokens": round(chars / CHARS_PER_TOKEN),
            "estimate_over_count": round(chars / CHARS_PER_TOKEN / tokens, 3),
            "per_request_ratio_median": round(statistics.median(per_request), 3),
            "per_request_ratio_range": [round(min(per_request), 3),
                                        round(max(per_request), 3)],
        }
        print(name, rows[name])
    doc = {"chars_per_token": CHARS_PER_TOKEN, "tokenizer": "Qwen2.5 (embedded judge GGUF)",
           "note": "estimate_over_count > 1: the plan's estimate is above the real count",
           "data": rows}
    if args.out:
        args.out.write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
