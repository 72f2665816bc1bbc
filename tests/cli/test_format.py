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
