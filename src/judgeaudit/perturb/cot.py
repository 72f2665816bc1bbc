"""Chain-of-thought is a variant of the judge prompt, not of the judged text: the probe judges
with and without step-by-step reasoning and compares accuracy. This module holds the prompt
text for it; `with_cot(template_text)` turns a pairwise template (the format of
judges/templates/*.txt) into its reasoning variant. The reasoning variant cannot use a prefill
that forces the verdict token, so it drops the prefill and asks for a final line the judge
parses: "The better response is Response A" (or B). It needs a generation budget (e.g.
max_tokens 512) and a parser that reads the last such line.
"""

from __future__ import annotations

from judgeaudit.perturb.prompt_format import compose, sections

COT_SUFFIX = (
    "First, think step by step: check each response for correctness, helpfulness and "
    "faithfulness to the instruction, and note any errors. Then, on the last line, write "
    "exactly \"The better response is Response A\" or \"The better response is Response B\"."
)
COT_FINAL_PATTERN = r"The better response is Response ([AB])\W*$"


def with_cot(template_text: str) -> str:
    """The template with its answer instruction replaced by COT_SUFFIX and no prefill."""
    sec = sections(template_text)
    user = sec["user"].rstrip()
    lines = user.splitlines()
    # The last line is the answer-format instruction ("Which response is better? ...").
    if "{response_a}" not in user or "{response_b}" not in user:
        raise ValueError("not a pairwise template: no {response_a}/{response_b} in its user "
                         "section")
    lines[-1] = COT_SUFFIX
    return compose(sec["system"], "\n".join(lines), "")
