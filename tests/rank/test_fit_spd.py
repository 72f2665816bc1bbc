"""An uncapped `rank` on early, sparse data finishes instead of exiting 2.

50 items, default covariates (length, markdown), --lam auto, seed 0: the refit after the
first 8 comparisons (pairs and singletons: 42 components) exited 2 with "Matrix is not
positive definite" from the sparse Schur solve inside Newton (a block CG that diverged;
stats.bt_posterior._pcg). Through a real loopback OpenAI-shaped server (`fakeserver`) and
the rank CLI, as a user runs it."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

from fakeserver import FakeLLMServer
from typer.testing import CliRunner

from tests.rank import test_rank_not_sent as _not_sent

# the rank CLI and the cleared key variables are test_rank_not_sent's fixtures
app, _no_keys = _not_sent.app, _not_sent._no_keys


def _pool(path: Path, n: int = 50) -> str:
    """The pool the crash was found on: lengths 3..9 words, every third item in bold."""
    path.write_text("\n".join(json.dumps(
        {"id": f"it-{i:02d}", "prompt": "Which answer is better?",
         "response": "word " * (3 + i % 7) + ("**bold** " if i % 3 == 0 else "")
         + f"answer {i}", "quality": float(i)}) for i in range(n)) + "\n")
    return f"jsonl:{path}"


def test_rank_seed0_refits_on_eight_comparisons_without_crashing(app, tmp_path):
    """Exit 0, every comparison made and fitted, both models converged, and no CG solve
    warned of stopping short."""
    items = _pool(tmp_path / "pool.jsonl")
    with FakeLLMServer() as srv, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        spec = (f"openai:m?base_url={srv.openai_url}&api_key=k&logprobs=off"
                "&price_in=10000&price_out=10")
        r = CliRunner().invoke(app, [
            "rank", "--judge", spec, "--items", items, "--budget", "24", "--k", "5",
            "--seed", "0", "--lam", "auto", "--no-cache", "--out", str(tmp_path / "out"),
            "--json"])
    assert r.exit_code == 0, f"rank exited {r.exit_code}: {r.output[-2000:]}"
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    assert doc["n_comparisons"] == 24, doc["n_comparisons"]
    for model in ("naive", "bias_aware"):
        assert doc["models"][model]["converged"] is True, (model, doc["models"][model])
    cg = [str(w.message) for w in caught if "conjugate gradients" in str(w.message)]
    assert not cg, cg
