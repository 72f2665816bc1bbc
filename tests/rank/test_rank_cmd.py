"""`rank` and `rank-eval` through typer's CliRunner on a small app: results.json contents,
the gate, replay of a recorded verdict file built once, and clear errors for bad input."""

import csv
import json

import pytest
import typer
from typer.testing import CliRunner

from judgeaudit.cli.rank_cmd import parse_seeds, register
from judgeaudit.rank.live import ordered_pairs, pair_item
from judgeaudit.rank.pool import load_pool


@pytest.fixture(scope="module")
def app():
    a = typer.Typer()
    register(a)
    return a


def _run(app, args, tmp_path):
    r = CliRunner().invoke(app, [*args, "--cache", str(tmp_path / "cache.sqlite")])
    return r


def test_rank_writes_ranking_biases_and_comparisons(app, tmp_path):
    items = "builtin:controlled?seed=1&n=12&k=3"
    pool = load_pool(items)
    trusted = tmp_path / "trusted.jsonl"
    q = pool.quality
    pairs = [(i, j) for i in range(12) for j in range(12) if q[i] > q[j]][:6]
    trusted.write_text("\n".join(json.dumps({"better": pool.ids[i], "worse": pool.ids[j]})
                                 for i, j in pairs))
    r = _run(app, ["rank", "--judge", "sim?quality=1&length=1&position=0.3", "--items", items,
                   "--budget", "30", "--samples", "300", "--trusted", str(trusted),
                   "--out", str(tmp_path / "o")], tmp_path)
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    assert doc["schema_version"] == 1 and doc["command"] == "rank"
    assert doc["config"]["k"] == 3 and doc["config"]["lam"] == "auto"
    assert len(doc["ranking"]) == 12 and sum(r["in_topk"] for r in doc["ranking"]) == 3
    assert [r["rank"] for r in doc["ranking"]] == list(range(1, 13))
    thetas = [r["theta"] for r in doc["ranking"]]
    assert thetas == sorted(thetas, reverse=True)
    assert all(r["lo"] < r["theta"] < r["hi"] and 0 <= r["p_topk"] <= 1 for r in doc["ranking"])
    assert len(doc["comparisons"]) == doc["n_comparisons"] == 30
    for c in doc["comparisons"]:
        first, second = pool.ids.index(c["first_id"]), pool.ids.index(c["second_id"])
        assert c["order"] == ("12" if first < second else "21") and c["y"] in (0, 0.5, 1)
        assert c["raw"] in ("A", "B")
    ba = doc["models"]["bias_aware"]
    assert set(ba["c"]) == {"length"} and doc["covariates_dropped"] == ["markdown"]
    assert ba["c"]["length"]["planted"] == 1.0 and ba["kappa"]["planted"] == 0.3
    assert ba["kappa"]["lo"] < ba["kappa"]["estimate"] < ba["kappa"]["hi"]
    assert len(doc["models"]["naive"]["topk"]) == 3 and "c" not in doc["models"]["naive"]
    g = doc["gate"]
    assert g["n_trusted"] == 6 and doc["reported_model"] == g["chosen"]
    assert g["decision"] == ("on" if g["enabled"] else "off") and g["reason"]
    assert set(g["bias"]) == {"length"} and len(g["bias_ci"]) == 2
    assert f"gate: correction {g['decision'].upper()}" in r.output
    assert set(doc["recall"]) == {"naive", "bias_aware"} and doc["calls"]["made"] == 30
    out = " ".join(r.output.split())
    for m, v in doc["recall"].items():  # each recall with its interval and n
        from judgeaudit.stats.intervals import wilson

        lo, hi = wilson(round(v * 3), 3)
        assert f"{m} {v:.2f} [{lo:.2f}, {hi:.2f}] ({round(v * 3)} of 3 true top items)" in out, m
    assert doc["run"]["status"] == "ok" and doc["run"]["n_valid"] == 30
    assert "c[length]" in r.output and "kappa" in r.output


def test_rank_eval_with_sim_oracle_on_controlled_pools(app, tmp_path):
    r = _run(app, ["rank-eval", "--oracle", "sim?quality=1&length=1.0&position=0.3",
                   "--items", "builtin:controlled?n=12&k=3", "--budgets", "12,24",
                   "--rules", "topk,random", "--seeds", "3", "--samples", "200",
                   "--out", str(tmp_path / "e")], tmp_path)
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "e" / "results.json").read_text())
    assert doc["pool_per_seed"] and doc["judge_per_seed"] and len(doc["matrices"]) == 3
    for m in ("naive", "bias_aware"):
        for rule in ("topk", "random"):
            for b in ("12", "24"):
                cell = doc["recall"][m][rule][b]
                assert cell["n"] == 3 and 0 <= cell["mean"] <= 1
        assert doc["full_data"][m]["n"] == 3
    assert doc["c"]["length"]["planted"] == 1.0 and 0 <= doc["c"]["length"]["coverage"] <= 1
    assert doc["kappa"]["planted"] == 0.3 and doc["kappa"]["n"] == 3
    assert doc["calls"]["made"] == 3 * 132  # every ordered pair of each pool once
    assert doc["run"]["status"] == "ok" and doc["run"]["n_planned"] == 3 * 132
    assert doc["ablation"] is None  # needs topk and global


def test_rank_eval_replays_a_recorded_verdict_file_built_once(app, tmp_path):
    # a recorded judge for a JSONL pool: long format, one row per ordered pair, keyed by the
    # canonical pair id "<id_lo>|<id_hi>" and the order (lo shown first = "12")
    rows = [{"id": f"r{i}", "prompt": "Q?", "response": "w " * (3 + i % 4), "quality": i}
            for i in range(8)]
    (tmp_path / "pool.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    pool = load_pool(f"jsonl:{tmp_path / 'pool.jsonl'}")
    with open(tmp_path / "verdicts.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["item_id", "order", "verdict"])
        for first, second in ordered_pairs(pool):
            item, lo, _ = pair_item(pool, first, second)
            better_first = pool.items[first].quality > pool.items[second].quality
            w.writerow([item.id, "12" if first == lo else "21", "A" if better_first else "B"])
    r = _run(app, ["rank-eval", "--oracle", f"replay:{tmp_path / 'verdicts.csv'}",
                   "--items", f"jsonl:{tmp_path / 'pool.jsonl'}", "--k", "2",
                   "--budgets", "10,20", "--rules", "topk,global", "--seeds", "0-3",
                   "--covariates", "length", "--samples", "200",
                   "--out", str(tmp_path / "e")], tmp_path)
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "e" / "results.json").read_text())
    assert not doc["pool_per_seed"] and len(doc["matrices"]) == 1
    assert doc["calls"]["made"] == 56 and doc["n_invalid"] == 0
    assert doc["matrices"][0]["full_data"] == {"naive": 1.0, "bias_aware": 1.0}
    assert "planted" not in doc["c"]["length"] and doc["seeds"] == [0, 1, 2, 3]
    assert set(doc["ablation"]) == {"10", "20"}


@pytest.mark.parametrize("args, msg", [
    (["rank", "--judge", "sim", "--rule", "best"], "unknown rule(s) best"),
    (["rank", "--judge", "sim", "--budget", "100000"], "--budget must be in 1..870"),
    (["rank", "--judge", "sim", "--covariates", "lenght"], "unknown covariate 'lenght'"),
    (["rank", "--judge", "sim", "--lam", "-1"], "--lam: expected 'auto' or a positive"),
    (["rank", "--judge", "nosuch:x"], "judge 'nosuch:x'"),
    (["rank-eval", "--seeds", "x"], "--seeds: expected a count"),
    (["rank-eval", "--budgets", "10,a"], "--budgets: expected comma-separated integers"),
])
def test_bad_input_exits_2_with_a_message(app, tmp_path, args, msg):
    r = _run(app, args, tmp_path)
    assert r.exit_code == 2 and msg in r.output.replace("\n", " "), r.output


def test_rank_eval_needs_true_quality(app, tmp_path):
    (tmp_path / "p.jsonl").write_text('{"id": "a", "prompt": "p", "response": "x"}\n'
                                      '{"id": "b", "prompt": "p", "response": "y"}\n')
    r = _run(app, ["rank-eval", "--items", f"jsonl:{tmp_path / 'p.jsonl'}"], tmp_path)
    assert r.exit_code == 2 and "true quality unknown" in r.output


def test_parse_seeds():
    assert parse_seeds("3") == [0, 1, 2]
    assert parse_seeds("2-4") == [2, 3, 4]
    assert parse_seeds("5,1") == [5, 1]


def test_bias_terms_say_when_their_numbers_are_the_priors(app, tmp_path):
    """An item-level covariate is confounded with quality: with a strong planted length bias
    the empirical-Bayes tau collapsed and rank printed c[length] = 0.000 [-0.013, 0.013]
    against 3 planted, with nothing to say the prior, not the judge, made it. Position,
    which both orders identify, is measured from the data."""
    def run(judge, *extra):
        out = tmp_path / judge.replace("?", "_").replace("&", "_")
        r = _run(app, ["rank", "--judge", judge, "--items", "builtin:controlled", "--k", "5",
                       "--budget", "300", "--samples", "100", *extra, "--out", str(out)],
                 tmp_path)
        assert r.exit_code == 0, r.output
        return json.loads((out / "results.json").read_text()), " ".join(r.output.split())

    doc, out = run("sim?length=3", "--hierarchical")
    ba = doc["models"]["bias_aware"]
    assert ba["c"]["length"]["from_prior"] and ba["kappa"]["from_prior"]
    # the terms' fit (at the evidence's lam) learned its own tau; both collapsed
    assert ba["c"]["length"]["prior_sd"] == ba["tau_terms"] < 0.1 and ba["tau"] < 0.1
    notes = " ".join(doc["notes"])
    assert "mostly the prior's (tau learned by --hierarchical)" in notes
    assert "empirical Bayes set tau to" in notes and "not evidence of no bias" in notes
    assert "assumption that quality does not track the covariate" in notes
    assert "note: c[length] and kappa: the prior, not the comparisons, gives most" in out
    html = (tmp_path / "sim_length=3" / "report.html").read_text()
    assert "mostly the prior" in html and "not evidence of no bias" in html
    from judgeaudit.result import Result  # and --json says it (a script saw no warning)

    summary = Result.from_document(doc).summary()
    assert summary["biases"]["c[length]"]["from_prior"] and summary["notes"] == doc["notes"]

    doc, _ = run("sim?length=0&position=1")  # position is identified by the two orders
    ba = doc["models"]["bias_aware"]
    assert not ba["kappa"]["from_prior"] and ba["kappa"]["lo"] > 0
    assert ba["kappa"]["se"] < 0.5 * ba["kappa"]["prior_sd"]


def test_control_characters_in_item_ids_are_shown_not_acted_on(app, tmp_path):
    """An id's ESC sequence recoloured the terminal and a right-to-left override reversed the
    line; both, and NUL, went raw into report.html. They are shown as escapes."""
    ids = ["a\x1b[31mRED\x1b[0m\x00z", "\u202eevil", "ok\x1b]0;pwned\x07"]
    pool = tmp_path / "ctl.jsonl"
    pool.write_text("".join(json.dumps({"id": x, "prompt": "p", "response": "r " * (i + 1),
                                        "quality": float(3 - i)}) + "\n"
                            for i, x in enumerate(ids)))
    r = _run(app, ["rank", "--judge", "sim", "--items", f"jsonl:{pool}", "--k", "1",
                   "--budget", "6", "--samples", "100", "--out", str(tmp_path / "o")], tmp_path)
    assert r.exit_code == 0, r.output
    html = (tmp_path / "o" / "report.html").read_text()
    for text in (r.output, html):
        assert not any(ch in text for ch in "\x1b\x00\x07\u202e")
    assert "a\\x1b[31mRED" in r.output and "\\u202eevil" in html


def test_a_prompt_group_no_bigger_than_k_is_said(app, tmp_path):
    """A group of 3 at k = 3 gave its best 2 (a top set never holds a whole group) without a
    word, under a line saying top-3."""
    pool = tmp_path / "groups.jsonl"
    pool.write_text("".join(
        json.dumps({"id": f"{g}{i}", "prompt": f"prompt {g}", "response": f"a {i} " + "z " * i,
                    "quality": float(i)}) + "\n" for g, n in (("PA", 8), ("PB", 3))
        for i in range(n)))
    r = _run(app, ["rank", "--judge", "sim", "--items", f"jsonl:{pool}", "--k", "3", "--budget",
                   "60", "--samples", "100", "--out", str(tmp_path / "o")], tmp_path)
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    assert sum(i.startswith("PB") for i in doc["models"]["naive"]["topk"]) == 2
    assert any("1 prompt group of at most k = 3 items ('prompt PB': 3 items)" in n
               for n in doc["notes"])


def test_rank_eval_reads_a_bare_csv_pool_and_names_small_groups(app, tmp_path):
    """rank-eval refused a bare pool.csv ('kind must be a word', rank took it) and said
    nothing of a group no bigger than k."""
    pool = tmp_path / "groups.csv"
    pool.write_text("id;prompt;response;quality\n" + "".join(
        f"{g}{i};prompt {g};a {i} {'z ' * i};{i}\n" for g, n in (("PA", 8), ("PB", 3))
        for i in range(n)))
    r = _run(app, ["rank-eval", "--oracle", "sim", "--items", str(pool), "--k", "3",
                   "--budgets", "30", "--rules", "topk", "--seeds", "2", "--samples", "50",
                   "--out", str(tmp_path / "o")], tmp_path)
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    assert any("1 prompt group of at most k = 3 items ('prompt PB': 3 items)" in n
               for n in doc["notes"])
