"""Terminal formatting of results (`cli.format`)."""


def test_a_flag_value_never_reads_as_its_threshold():
    """0.551 against 0.55 printed '0.55>0.55'."""
    from judgeaudit.cli.format import _flag_text

    assert _flag_text(0.551, 0.55, True) == "0.551>0.55"
    assert _flag_text(0.62, 0.55, True) == "0.62>0.55"
    assert _flag_text(0.55, 0.55, False) == "0.55<=0.55"
