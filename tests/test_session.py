"""`judgeaudit.Session`: one judge per spec, call totals over its judges and commands, the
version and prompt-hash stamps, progress, and closing (the cache only when it opened it)."""

from __future__ import annotations

import asyncio

import pytest

import judgeaudit
from judgeaudit.data import load
from judgeaudit.llm import Cache, RetryPolicy
from judgeaudit.session import Progress, Session, Tracker

SIM = "sim?position=1&seed=0"


async def test_a_spec_makes_one_judge_and_the_session_closes_it(tmp_path):
    async with Session(cache=tmp_path / "c.sqlite") as s:
        a, b = s.judge(SIM), s.judge(SIM)
        other = s.judge("sim?seed=1")
        assert a is b and other is not a
        assert set(s.judges) == {SIM, "sim?seed=1"}
        assert s.cache is not None and s.cache.path == tmp_path / "c.sqlite"
    with pytest.raises(RuntimeError, match="closed"):
        s.judge(SIM)
    await s.aclose()  # idempotent


async def test_cache_choices(tmp_path, isolated_cache):
    assert Session(cache=False).cache is None
    default = Session()
    assert default.cache is not None and default.cache.path == isolated_cache
    await default.aclose()
    given = Cache(tmp_path / "mine.sqlite")
    s = Session(cache=given)
    assert s.cache is given
    await s.aclose()
    assert given.stats().entries == 0  # still open: the session did not own it
    given.close()


async def test_calls_add_up_over_judges_and_stamps_name_the_templates():
    items = load("builtin:facts?limit=4")
    async with Session(cache=False) as s:
        for spec in (SIM, "sim?seed=1"):
            await s.judge(spec).pairwise.judge(items)
        calls = s.calls()
        assert calls["made"] == 2 * 2 * 4 and calls["failed"] == 0
        st = s.stamps()
        assert st["version"] == judgeaudit.__version__
        b = s.judge(SIM)
        assert st["prompt_hashes"][b.public_spec] == {
            "pairwise": {"name": b.pairwise.template.name, "sha256": b.pairwise.template.sha256},
            "rubric": {"name": b.rubric.template.name, "sha256": b.rubric.template.sha256}}
        assert len(b.pairwise.template.sha256) == 64


async def test_each_command_counts_from_zero_and_the_session_keeps_the_totals():
    items = load("builtin:facts?limit=3")
    async with Session(cache=False) as s:
        with s.command():
            await s.judge(SIM).pairwise.judge(items)
        with s.command():
            assert s.judge(SIM).client.stats.made == 0  # moved to the session's totals
            await s.judge(SIM).pairwise.judge(items)
            assert s.judge(SIM).client.stats.made == 6
        assert s.calls()["made"] == 12


async def test_shared_session_between_api_commands(isolated_cache):
    async with Session(cache=False) as s:
        a = await judgeaudit.aevaluate(SIM, "builtin:facts", limit=5, session=s)
        b = await judgeaudit.aevaluate(SIM, "builtin:facts", limit=5, session=s)
        assert a.calls["made"] == b.calls["made"] == 10  # each its own calls
        assert s.calls()["made"] == 20
        assert a.estimates()["accuracy"] == b.estimates()["accuracy"]
        with pytest.raises(ValueError, match="cache.*Session"):
            await judgeaudit.aevaluate(SIM, "builtin:facts", limit=5, session=s, cache=False)


async def test_one_command_at_a_time():
    async with Session(cache=False) as s:
        with s.command(), pytest.raises(RuntimeError, match="one command at a time"), \
                s.command():
            pass


def test_bad_judge_spec_is_a_value_error_with_the_key_masked():
    s = Session(cache=False)
    with pytest.raises(ValueError) as exc:
        s.judge("openai:m?base_url=ftp://nowhere&api_key=sk-SECRET")
    assert "sk-SECRET" not in str(exc.value) and "judge 'openai:m" in str(exc.value)
    with pytest.raises(ValueError, match="unknown|provider"):
        s.judge("nosuchprovider:x")
    asyncio.run(s.aclose())


def test_retry_as_a_number_or_a_policy():
    assert Session(cache=False, retry=0).retry == RetryPolicy(max_retries=0)
    p = RetryPolicy(max_retries=2, base_delay=0.01)
    assert Session(cache=False, retry=p).retry is p
    assert Session(cache=False).retry is None
    for bad in (-1, True, 1.5):
        with pytest.raises(ValueError, match="retry"):
            Session(cache=False, retry=bad)


async def test_judges_get_the_session_settings():
    async with Session(cache=False, concurrency=3, timeout=2.5, retry=1, seed=7) as s:
        c = s.judge(SIM).client
        assert (c.concurrency, c.timeout, c.retry.max_retries) == (3, 2.5, 1)


def test_tracker_reports_every_change():
    seen: list[Progress] = []
    t = Tracker("x", None, seen.append)
    t.add_total(3)
    t.advance()
    t.advance("ignored", "args")
    assert seen == [Progress("x", 0, None), Progress("x", 0, 3), Progress("x", 1, 3),
                    Progress("x", 2, 3)]
    Tracker("silent", 2, None).advance()  # no callback: nothing to call


async def test_progress_reaches_the_callback_with_the_planned_total():
    seen: list[Progress] = []
    await judgeaudit.aevaluate(SIM, "builtin:facts", limit=4, cache=False,
                               progress=seen.append)
    # made: the calls sent so far (all 8: no cache), which a bar's speed and ETA go by
    assert seen[0] == Progress("judging", 0, 8, 0) and seen[-1] == Progress("judging", 8, 8, 8)


async def test_judges_used_records_what_each_judge_resolved_to_without_secrets():
    """A result says what its verdicts were made with beyond the spec: for `local`, the
    backend `auto` resolved to (and why), the dtype, the weights and the CPU, since the same
    spec runs differently on another machine; secrets stay out as in the cache key."""
    import json

    from judgeaudit.llm.local_model import cpu_summary

    async with Session(cache=False) as s:
        s.judge(SIM)
        s.judge("local:qwen-0.5b?backend=transformers&dtype=fp32")
        s.judge("openai:m?base_url=http://user:pw-XYZ@127.0.0.1:9/v1&api_key=sk-SECRET")
        used = s.judges_used()
    assert used[SIM]["provider"] == "sim"
    loc = used["local:qwen-0.5b?backend=transformers&dtype=fp32"]
    assert loc["backend"] == "transformers" and loc["backend_reason"] == "requested"
    assert loc["dtype"] == "fp32" and loc["weights"].startswith("sha256:")
    assert loc["cpu"] == cpu_summary()
    text = json.dumps(used)
    assert "sk-SECRET" not in text and "pw-XYZ" not in text


def test_every_result_records_the_judges_used(isolated_cache):
    res = judgeaudit.evaluate(SIM, "builtin:facts?limit=3")
    used = res["judges_used"]
    assert list(used) == [SIM] and used[SIM]["provider"] == "sim"
    assert used[SIM]["params"]["position"] == 1.0  # the planted bias, as the judge ran it
