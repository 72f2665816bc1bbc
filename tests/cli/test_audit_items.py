"""`judgeaudit audit` on real-shaped data: unlabelled and tie-labelled pairs are used where a
probe can use them and counted where not (results.json, terminal, report), --sample/--n,
--by, refusal only when no selected probe can run, and the inverted-labels warning."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from judgeaudit.cli.main import app
from judgeaudit.data import load

runner = CliRunner()


def write_mixed(path: Path, n: int = 60, *, unlabelled: bool = False,
                invert: bool = False) -> tuple[int, int]:
    """builtin:facts as JSONL: every 5th pair without a label, every 7th of the rest
    tie-labelled (or all unlabelled, or labels swapped), a `category` metadata key."""
    n_none = n_tie = 0
    with open(path, "w") as f:
        for i, it in enumerate(load("builtin:facts?seed=2")[:n]):
            d = it.model_dump(exclude_none=True)
            d["metadata"]["category"] = ["geo", "sci", "misc"][i % 3]
            if invert:
                d["label"] = {1: 2, 2: 1}[d["label"]]
            elif unlabelled or i % 5 == 0:
                d.pop("label")
                d.pop("quality", None)
                n_none += 1
            elif i % 7 == 0:
                d["label"] = 0
                d.pop("quality", None)
                n_tie += 1
            f.write(json.dumps(d) + "\n")
    return n_none, n_tie


def run(*args: str):
    return runner.invoke(app, ["audit", *args])


def test_mixed_labels_are_used_and_counted(tmp_path, isolated_cache):
    data = tmp_path / "mixed.jsonl"
    n_none, n_tie = write_mixed(data)
    out = tmp_path / "o"
    res = run("--judge", "sim?quality=1.5&seed=1", "--data", f"jsonl:{data}", "--full",
              "--probes", "position,authority", "--out", str(out))
    assert res.exit_code == 0, res.output
    doc = json.loads((out / "results.json").read_text())
    assert doc["n_items"] == 60 and doc["probes"]["position"]["n"] == 60
    assert doc["dropped"] == {"no_label": n_none, "tie_label": n_tie}
    auth = doc["probes"]["authority"]
    assert auth["dropped"]["no_label"] == n_none and auth["dropped"]["tie_label"] == n_tie
    assert "60 items judged of 60" in res.output
    assert f"no_label {n_none}, tie_label {n_tie}" in res.output
    html = (out / "report.html").read_text()
    assert 'id="dropped-table"' in html and "tie label" in html
    assert "no label: the probe needs to know the better response" in html


def test_n_is_per_probe_and_sample_is_a_seeded_subset(tmp_path, isolated_cache):
    data = tmp_path / "mixed.jsonl"
    write_mixed(data)
    base = ["--judge", "sim?seed=1", "--data", f"jsonl:{data}", "--probes",
            "position,authority"]
    res = run(*base, "--n", "10", "--sample", "10", "--out", str(tmp_path / "x"))
    assert res.exit_code == 2 and "--n and --sample" in res.output
    assert not (tmp_path / "x" / "results.json").exists()
    res = run(*base, "--n", "10", "--out", str(tmp_path / "n"))
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "n" / "results.json").read_text())
    assert doc["probes"]["position"]["n_items"] == 10
    assert doc["probes"]["authority"]["n_items"] == 10
    assert doc["items"]["selection"] == {"kind": "first", "n": 10, "per_probe": True, "of": 60}
    docs = []
    for name in ("s1", "s2"):
        res = run(*base, "--sample", "25", "--seed", "3", "--out", str(tmp_path / name))
        assert res.exit_code == 0, res.output
        docs.append(json.loads((tmp_path / name / "results.json").read_text()))
    assert docs[0]["items"]["selection"]["kind"] == "sample"
    assert docs[0]["items"]["selection"]["n"] == 25 and docs[0]["items"]["given"] == 25
    assert docs[0]["probes"]["position"]["n_items"] == 25
    assert docs[0]["probes"] == docs[1]["probes"]  # same seed, same subset, same numbers
    assert "a random sample of 25 of 60" in res.output


def test_by_field_breakdown_and_unknown_field(tmp_path, isolated_cache):
    data = tmp_path / "mixed.jsonl"
    write_mixed(data)
    out = tmp_path / "o"
    res = run("--judge", "sim?seed=1", "--data", f"jsonl:{data}", "--probes",
              "position,authority", "--by", "category", "--out", str(out))
    assert res.exit_code == 0, res.output
    assert "effect by category" in res.output
    doc = json.loads((out / "results.json").read_text())
    rows = doc["probes"]["position"]["breakdown"]["rows"]
    assert {r["value"] for r in rows} == {"geo", "sci", "misc"}
    assert all("ci95" in r["effect"] and r["n"] > 0 for r in rows)
    html = (out / "report.html").read_text()
    assert "Effect by category" in html
    res = run("--judge", "sim", "--data", f"jsonl:{data}", "--by", "nope", "--out",
              str(tmp_path / "bad"))
    assert res.exit_code == 2
    assert "--by nope" in res.output and "metadata keys:" in res.output
    assert "category" in res.output and "Traceback" not in res.output


def test_refused_only_when_no_selected_probe_can_run(tmp_path, isolated_cache):
    data = tmp_path / "nolabel.jsonl"
    write_mixed(data, 30, unlabelled=True)
    res = run("--judge", "sim", "--data", f"jsonl:{data}", "--probes", "authority,verbosity",
              "--out", str(tmp_path / "x"))
    assert res.exit_code == 2
    assert "no selected probe can run" in res.output
    assert len([ln for ln in res.output.splitlines() if ln.startswith("error")]) == 1
    assert not (tmp_path / "x" / "results.json").exists()
    out = tmp_path / "ok"
    res = run("--judge", "sim?position=1.5&seed=2", "--data", f"jsonl:{data}", "--out",
              str(out))
    assert res.exit_code == 0, res.output
    doc = json.loads((out / "results.json").read_text())
    assert doc["probes"]["position"]["n"] == 30
    assert doc["probes"]["authority"]["n"] == 0
    assert doc["probes"]["authority"]["notes"][0].startswith("not run:")


def test_inverted_labels_warning(tmp_path, isolated_cache):
    data = tmp_path / "inv.jsonl"
    write_mixed(data, 40, invert=True)
    out = tmp_path / "o"
    res = run("--judge", "sim?quality=3&seed=0", "--data", f"jsonl:{data}", "--probes",
              "position", "--out", str(out))
    assert res.exit_code == 0, res.output
    assert "labels may be inverted" in res.output
    doc = json.loads((out / "results.json").read_text())
    assert doc["warnings"] and "inverted" in doc["warnings"][0]
    assert "labels may be inverted" in (out / "report.html").read_text()
