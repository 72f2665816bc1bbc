"""The batched sampler of the local provider, on fixed logits (no model needed)."""


def test_row_sampler_draws_from_the_tempered_softmax_and_keeps_greedy_rows() -> None:
    """The Gumbel-max processor: over many seeds a sampled row's argmax follows
    softmax(logits / t); a t = 0 row is left greedy; one seed gives one draw."""
    import math

    import torch

    from judgeaudit.llm.providers.local import _RowSampler

    logits = torch.tensor([2.0, 1.0, 0.0, -1.0])
    t = 0.8
    want = torch.softmax(logits / t, 0)
    n = 4000
    counts = torch.zeros(4)
    for seed in range(n):
        scores = torch.stack([logits.clone(), logits.clone()])
        out = _RowSampler([t, 0.0], [seed, 0])(None, scores)
        counts[int(out[0].argmax())] += 1
        assert int(out[1].argmax()) == 0  # greedy row untouched
    freq = counts / n
    se = torch.sqrt(want * (1 - want) / n)
    assert torch.all((freq - want).abs() < 4 * se + 1e-3), (freq, want)
    a = _RowSampler([t], [7])(None, logits.clone()[None])
    b = _RowSampler([t], [7])(None, logits.clone()[None])
    assert torch.equal(a, b) and not math.isnan(float(a.sum()))
