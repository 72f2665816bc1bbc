"""The machine a benchmark ran on, recorded beside its figures: a figure holds for the CPU it
was taken on (model, cores, and the vector flags that matter to the embedded judge)."""

from __future__ import annotations

import os
import platform
import subprocess
from typing import Any


def cpu() -> dict[str, Any]:
    """The machine: model, cores and the vector flags (lscpu)."""
    text = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    info = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    flags = set(info.get("Flags", "").split())
    return {"model": info.get("Model name", "").strip(), "cpus": os.cpu_count(),
            "machine": platform.machine(), "python": platform.python_version(),
            "avx2": "avx2" in flags, "avx512_bf16": "avx512_bf16" in flags,
            "amx": any(f.startswith("amx") for f in flags)}
