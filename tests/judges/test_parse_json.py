"""Verdicts and scores given as a JSON object, and a bare lower-case letter as the whole
answer: read when they name exactly one choice (or score), refused when anything is
ambiguous. The judge's answer is untrusted text: nothing here is coerced."""

import pytest

from judgeaudit.judges.parse import parse_choice, parse_score

FENCE = "```"

# ---- choices --------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ('{"verdict": "A"}', "A"),
    ('{"winner": "B"}', "B"),
    ('{"choice": "A"}', "A"),
    ('{"answer": "B"}', "B"),
    ('{"better": "A"}', "A"),
    ('{"preferred": "B"}', "B"),
    ('{"Better Response": "B"}', "B"),           # key case and spacing normalised
    ('{"final-verdict": "A"}', "A"),
    ('{"verdict": "b"}', "B"),                   # a lower-case letter as the whole value
    ('{"verdict": "Response A"}', "A"),
    ('{"verdict": "[[B]]"}', "B"),
    ('{"verdict": "tie"}', "tie"),
    ('{"verdict": "A", "reason": "B misreads the question"}', "A"),  # other keys ignored
    ('{"reasoning": "A is longer", "winner": "B"}', "B"),
    ('{"verdict": "A", "winner": "A"}', "A"),    # two verdict keys that agree
    (f'{FENCE}json\n{{"verdict": "A"}}\n{FENCE}', "A"),
    (f'{FENCE}\n{{"winner": "B"}}\n{FENCE}', "B"),
    (f'  {FENCE}JSON\n{{\n  "verdict": "B",\n  "why": "shorter"\n}}\n{FENCE}\n', "B"),
    ('<think>A or B? B.</think>\n{"verdict": "B"}', "B"),
    # a bare lower-case letter as the WHOLE answer
    ("a", "A"), ("b", "B"), (" b.", "B"), ("**a**", "A"), ("(b)", "B"), ("a\n", "A"),
    ("[[a]]", "A"), ("'b'", "B"),
])
def test_json_and_bare_lower_case_verdicts_are_read(text, expected):
    assert parse_choice(text, allow_tie=True) == expected


@pytest.mark.parametrize("text", [
    '{"verdict": "A or B"}',                     # names both
    '{"verdict": "Both"}',
    '{"verdict": "C"}',                          # unknown value
    '{"verdict": ""}',
    '{"verdict": null}',
    '{"verdict": true}',
    '{"verdict": 1}',                            # 1 is not a label of an A/B template
    '{"verdict": ["A"]}',
    '{"verdict": {"winner": "A"}}',              # nested: not read
    '{"verdict": "A", "winner": "B"}',           # two verdict keys that conflict
    '{"verdict": "A", "verdict": "B"}',          # one key twice, two verdicts
    '{"verdict": "A", "answer": "I cannot tell"}',  # one verdict key unreadable
    '{"reason": "A is better"}',                 # no verdict-like key
    '{"A": 8, "B": 6}',                          # scores per response, no verdict
    '{}',
    '{"verdict": "A"',                           # broken JSON
    "{'verdict': 'A'}",                          # not JSON
    '{"verdict": "A"}\n{"verdict": "B"}',        # two objects
    f'{FENCE}json\n{{"verdict": "A", "winner": "B"}}\n{FENCE}',
    f'{FENCE}json\n{{"verdict": "A"}}\n{FENCE}\n{FENCE}json\n{{"verdict": "B"}}\n{FENCE}',
    # lower-case letters inside prose stay the article
    "a good answer", "b because it is shorter", "a\nThe first one.", "a or b", "a b",
    "a.b", "ab",
])
def test_ambiguous_json_and_lower_case_prose_are_refused(text):
    assert parse_choice(text, allow_tie=True) is None


def test_a_json_tie_needs_ties_allowed():
    assert parse_choice('{"verdict": "tie"}', allow_tie=False) is None
    assert parse_choice('{"verdict": "tie"}', allow_tie=True) == "tie"


def test_json_reads_the_templates_own_labels():
    assert parse_choice('{"winner": 2}', ("1", "2")) == "2"
    assert parse_choice('{"winner": "1"}', ("1", "2")) == "1"
    assert parse_choice('{"winner": 3}', ("1", "2")) is None
    assert parse_choice('{"winner": 1.0}', ("1", "2")) is None  # a float is no label
    assert parse_choice('{"verdict": "Y"}', ("X", "Y")) == "Y"
    assert parse_choice("y", ("X", "Y")) == "Y"


def test_the_old_forms_read_as_before():
    assert parse_choice("A is better.") == "A"
    assert parse_choice("B\nBecause it is correct.") == "B"
    assert parse_choice("Output (b)") == "B"
    assert parse_choice("A or B") is None


# ---- scores ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "ids", "expected"), [
    ('{"score": 4}', None, 4),
    ('{"score": "4"}', None, 4),
    ('{"Score": "4/5"}', None, 4),
    ('{"rating": 2}', None, 2),
    ('{"grade": 5}', None, 5),
    ('{"final_score": 1}', None, 1),
    ('{"score": 3.5}', None, 3.5),
    ('{"score": 4.0}', None, 4),
    ('{"score": 4, "feedback": "missing units; 2 errors"}', None, 4),
    ('{"score": 4, "rating": 4}', None, 4),
    (f'{FENCE}json\n{{"score": 3}}\n{FENCE}', None, 3),
    ('<think>3 or 4?</think>{"score": 3}', None, 3),
    ('{"score": "B"}', ("E", "D", "C", "B", "A"), 4),
    ('{"score": "iv"}', ("i", "ii", "iii", "iv", "v"), 4),
])
def test_json_scores_are_read(text, ids, expected):
    got = parse_score(text) if ids is None else parse_score(text, ids)
    assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize(("text", "ids"), [
    ('{"score": 6}', None),                      # out of range
    ('{"score": 0}', None),
    ('{"score": 5.5}', None),
    ('{"score": "3/10"}', None),                 # the /N must be the scale's top
    ('{"score": "four"}', None),
    ('{"score": "3 or 4"}', None),
    ('{"score": true}', None),                   # JSON true is not 1
    ('{"score": null}', None),
    ('{"score": [4]}', None),
    ('{"score": 4, "rating": 3}', None),         # two score keys that conflict
    ('{"score": 4, "score": 2}', None),
    ('{"feedback": "4"}', None),                 # no score-like key
    ('{"score": 4', None),
    ('{"score": 3.5}', ("i", "ii", "iii", "iv", "v")),  # decimals need numeric ids
    ('{"score": 1e400}', None),
])
def test_ambiguous_json_scores_are_refused(text, ids):
    assert (parse_score(text) if ids is None else parse_score(text, ids)) is None
