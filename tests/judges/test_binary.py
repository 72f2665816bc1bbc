from judgeaudit.data import PointwiseItem
from judgeaudit.judges.binary import BinaryJudge
from judgeaudit.llm import CallFailed, Response

ITEM = PointwiseItem(id="p:1", prompt="2+2?", response="5", quality=0.0)


def test_request_uses_template_labels():
    j = BinaryJudge(client=None, template="binary_yes_no_v1")
    req = j.request(ITEM)
    assert req.choices == ("YES", "NO") and "YES if it is" in req.messages[1].content


def test_read_probs_text_and_invalid():
    j = BinaryJudge(client=None)
    assert j.read("x", Response(text="PASS", probs={"PASS": 0.2, "FAIL": 0.8})).passed is False
    assert j.read("x", Response(text="pass")).passed is True
    assert j.read("x", Response(text="FAIL.")).passed is False
    assert j.read("x", Response(text="It depends")).passed is None
    assert j.read("x", CallFailed("boom", fatal=False)).error == "boom"
