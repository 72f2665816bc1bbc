"""Summarize the embedded-judge adaptive vs fixed-n audits (issue 16, outcome 4) into
benchmarks/results/adaptive_local.json. Run the two audits first (commands in the output
"commands"; folders /tmp/adl/adaptive and /tmp/adl/fixed, t0/t1/t2 the start times)."""

import json
import sys
from pathlib import Path

A = json.loads(Path("/tmp/adl/adaptive/results.json").read_text())
F = json.loads(Path("/tmp/adl/fixed/results.json").read_text())
flags = Path("/proc/cpuinfo").read_text().split("flags")[1].split("\n")[0].split()
probes = {}
agree = decided = 0
for name, pa in A["probes"].items():
    pf = F["probes"][name]
    ad = pa["adaptive"]
    row = {
        "adaptive": {
            "verdict": pa["verdict"],
            "n_at_stop": ad["n"],
            "rounds": ad["rounds"],
            "interval_at_stop": [round(x, 3) for x in ad["ci"]],
            "evalue": round(ad["evalue"], 3),
            "stop_reason": ad["stop_reason"],
            "calls": ad["calls"],
            "fixed_n_calls_same_max_n": ad["fixed_n_calls"],
        },
        "fixed_n": {
            "verdict": pf["verdict"],
            "n": pf["n"],
            "effect": round(pf["effect"]["value"], 3),
            "ci95": [round(x, 3) for x in pf["effect"]["ci95"]],
            "p": pf.get("p"),
            "q": pf.get("q"),
        },
    }
    if pf["verdict"] in ("biased", "not biased"):
        decided += 1
        agree += pf["verdict"] == pa["verdict"]
    row["same_verdict"] = pf["verdict"] == pa["verdict"]
    probes[name] = row
out = {
    "what": (
        "issue 16 outcome 4: the embedded judge, `judgeaudit audit --judge local --data "
        "builtin:facts --adaptive --max-n 200` beside the fixed-n audit `--n 200` on the "
        "same items (same seed), one cache: the adaptive run first on an empty cache (its "
        "calls are what it costs), then the fixed-n run (its made + cached calls are what "
        "a fixed-n audit costs)"
    ),
    "commands": [
        "judgeaudit audit --judge local --data builtin:facts --adaptive --max-n 200"
        " --out OUT/adaptive --cache C",
        "judgeaudit audit --judge local --data builtin:facts --n 200 --out OUT/fixed --cache C",
    ],
    "judge": A["judge"],
    "backend_note": "local auto -> transformers bf16 on this CPU (AMX)",
    "machine": {
        "cpu": "Intel(R) Xeon(R) Processor, 2 cores",
        "flags": {f: f in flags for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16")},
        "load": "shared with a test-suite run and helper jobs (seconds are not a benchmark)",
    },
    "adaptive": {
        "calls": A["calls"],
        "seconds": round(A["seconds"], 1),
        "rounds": A["adaptive"]["rounds"],
        "round_size": A["adaptive"]["round_size"],
        "stopped_by": A["adaptive"]["stopped_by"],
        "fixed_n_calls_estimate": A["adaptive"]["fixed_n_calls"],
        "calls_ratio": A["adaptive"]["calls_ratio"],
    },
    "fixed_n": {"calls": F["calls"], "seconds": round(F["seconds"], 1)},
    "calls_adaptive_over_fixed": round(
        A["calls"]["made"] / (F["calls"]["made"] + F["calls"]["cached"]), 3
    ),
    "verdict_agreement_where_fixed_decides": f"{agree}/{decided}",
    "probes": probes,
}
Path(sys.argv[1]).write_text(json.dumps(out, indent=1) + "\n")
print(
    json.dumps(
        {
            k: out[k]
            for k in (
                "adaptive",
                "fixed_n",
                "calls_adaptive_over_fixed",
                "verdict_agreement_where_fixed_decides",
            )
        },
        indent=1,
    )
)
for n, r in probes.items():
    print(
        n,
        r["adaptive"]["verdict"],
        r["adaptive"]["n_at_stop"],
        r["adaptive"]["interval_at_stop"],
        "| fixed",
        r["fixed_n"]["verdict"],
        r["fixed_n"]["effect"],
        r["fixed_n"]["ci95"],
    )
