"""Terminal formatting of results (`cli.format`)."""


def test_a_flag_value_never_reads_as_its_threshold():
    """0.551 against 0.55 printed '0.55>0.55'."""
    from judgeaudit.cli.format import _flag_text

    assert _flag_text(0.551, 0.55, True) == "0.551>0.55"
    assert _flag_text(0.62, 0.55, True) == "0.62>0.55"
    assert _flag_text(0.55, 0.55, False) == "0.55<=0.55"


def test_the_panel_table_gives_each_column_its_own_n_and_the_invalid_verdicts():
    """One n column showed the position effect's 98 beside rates over 100, and PaLM2's 4
    invalid verdicts were not shown."""
    import io

    from rich.console import Console

    from judgeaudit.cli.format import panel_table

    row = {"judge": "replay:v.csv?judge=PaLM2",
           "position_effect": {"value": 0.051, "ci95": [0.005, 0.092], "n": 98},
           "position_consistency": {"value": 0.8, "ci95": [0.71, 0.87], "n": 100},
           "accuracy": {"value": 0.83, "ci95": [0.75, 0.89], "n": 100}, "n_invalid": 4}
    out = io.StringIO()
    Console(file=out, width=200).print(panel_table({"ranking": [row]}))
    text = out.getvalue()
    assert "(98)" in text and "80.0% (100)" in text and "83.0% (100)" in text
    assert "judge=PaLM2" in text and "invalid verdicts" in text and "│ 4 " in text


def test_the_audit_table_keeps_n_and_both_bounds_in_an_80_column_terminal():
    """At 80 columns the row was cut: n read '…', each interval lost its upper bound, q and
    MDE were cut and 'left out' was hidden (the demo's own summary)."""
    import io

    from rich.console import Console

    from judgeaudit.cli.format import audit_table

    probe = {"effect": {"value": 0.48, "ci95": [0.38, 0.58]}, "n": 30, "q": 0.00213,
             "mde": 0.15, "verdict": "underpowered", "dropped": {"no label": 2},
             "flag": {"value": 0.9, "threshold": 0.7, "exceeds": True}}
    res = {"judge": "local", "data": "builtin:facts",
           "probes": {name: probe for name in ("verbosity", "authority", "injection")}}
    for width in (80, 200):
        out = io.StringIO()
        Console(file=out, width=width).print(audit_table(res, width))
        text = out.getvalue()
        assert "…" not in text, (width, text)
        assert all(s in text for s in ("+0.48", "[+0.38, +0.58]", "30", "0.002", "0.15",
                                       "underpowered", "0.90>0.70", "no label 2")), text
        assert max(len(line) for line in text.splitlines()) <= width


def _audit_doc(by: bool = False):
    """An audit result with the widest cells the table meets: long probe names, every
    verdict, an unchecked flag, several reasons left out, a q in scientific notation."""
    def probe(verdict, n, q, flag, dropped, rows=()):
        return {"effect": {"value": -0.48, "ci95": [-0.58, -0.38]}, "n": n, "q": q,
                "mde": 0.15, "verdict": verdict, "flag": flag, "dropped": dropped,
                "breakdown": {"rows": list(rows)}}

    row = {"value": "chemistry", "effect": {"value": 0.1, "ci95": [-0.52, 0.72]}, "n": 57,
           "n_items": 58, "p": 0.0123}
    probes = {
        "format_sensitivity": probe("underpowered", 1234, 2.1e-05,
                                    {"value": 0.9, "threshold": 0.7, "exceeds": True},
                                    {"no label": 2, "unparseable": 17}, [row] if by else []),
        "refinement_aware": probe("not_biased", 40, 0.5,
                                  {"value": 0.0, "threshold": 0.7, "exceeds": None}, {}),
        "verbosity": probe("biased", 40, 0.001, {}, {}),
        "position": probe("run_failed", 0, None, {}, {}),
        "self_preference": {"effect": {"value": None, "ci95": [None, None]}, "n": 0,
                            "q": None, "mde": None, "verdict": "not_run", "dropped": {}},
    }
    return {"judge": "sim:biased?seed=0", "data": "builtin:facts", "probes": probes,
            **({"by": "topic"} if by else {})}


def _render(res, width):
    import io

    from rich.console import Console

    from judgeaudit.cli.format import audit_table

    out = io.StringIO()
    Console(file=out, width=width).print(audit_table(res, width))
    return out.getvalue()


def test_the_audit_table_never_cuts_a_word_or_number_in_a_narrow_terminal():
    """At 60 columns rich squeezed the table and cut the verdict 'underpowered' into
    'underp' / 'owered' (and the flag '0.80>0' / '.70'): every layout must keep each word
    and number on one line, at 40, 60, 80 and a wide terminal alike."""
    whole = ["format_sensitivity", "refinement_aware", "self_preference", "verbosity",
             "position", "underpowered", "not_biased", "biased", "run_failed", "not_run",
             "-0.48", "[-0.58, -0.38]", "1234", "2.1e-05", "0.001", "0.15", "0.90>0.70",
             "unchecked", "(n=0)", "no label 2", "unparseable 17"]
    for width in (40, 60, 80, 200):
        text = _render(_audit_doc(), width)
        lines = text.splitlines()
        assert "…" not in text, (width, text)
        assert max(len(line) for line in lines) <= width, (width, text)
        missing = [w for w in whole if not any(w in line for line in lines)]
        assert not missing, (width, missing, text)


def test_the_by_breakdown_never_cuts_a_word_or_number_in_a_narrow_terminal():
    """The --by table was squeezed the same way: at 40 columns 'verbosity' read 'ver…' and
    every effect '+0.…'."""
    whole = ["format_sensitivity", "chemistry", "+0.10", "[-0.52, +0.72]", "57", "58",
             "0.012"]
    for width in (40, 60, 80, 200):
        text = _render(_audit_doc(by=True), width)
        lines = text[text.index("effect by topic"):].splitlines()
        assert "…" not in text, (width, text)
        assert max(len(line) for line in text.splitlines()) <= width, (width, text)
        missing = [w for w in whole if not any(w in line for line in lines)]
        assert not missing, (width, missing, text)


def test_an_estimate_without_an_interval_shows_its_value_in_every_table():
    """fmt_est did 100 * None on an interval [None, None] (the panel's agreement row calls it
    directly; only evaluate's table guarded it): reviewer t-review."""
    from judgeaudit.cli.format import fmt_est

    assert fmt_est({"value": 0.5, "ci95": [None, None], "n": 1}) == ("50.0%", "", "1")
    assert fmt_est({"value": 0.5, "ci95": None, "n": 1}, pct=False) == ("0.500", "", "1")
    assert fmt_est({"value": 0.25, "ci95": [0.1, 0.4], "n": 9}) == ("25.0%", "[10.0, 40.0]", "9")
