"""Agreement and disagreement sets of a judge against human labels (HUB-J, Setting).

For judge m with consensus verdict w (both orders; orders that disagree are a tie) and the
human majority label y_H (1 or 2):
- D_agr(m): w == y_H (the judge picks the human-preferred r+);
- D_dis(m): w == 3 - y_H (the judge picks the human-rejected r-);
- neutral: ties, order-inconsistent and invalid verdicts (counted, in neither set).
Items whose human majority is a tie are not in either set. Multi-annotator data keeps an item
only when at least half of its annotators give the majority label (`min_agreement`, default
0.5; 1.0 = unanimous). The consensus disagreement set over judges is the intersection of
their D_dis.

Recorded single-order verdicts (PandaLM's GPT-3.5 and PandaLM-7B files) are converted to the
`replay` long format (item_id, order, verdict) by `convert_pandalm_verdicts`, then read back
through `judgeaudit.llm.providers.replay.load_index`, so they pass the same parsing as any
replayed judge; with one order there is no tie from order disagreement.
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judgeaudit.data.schema import PairwiseItem

Winner = int | None  # 1, 2, 0 = tie / order-inconsistent, None = invalid


def annotator_share(item: PairwiseItem) -> float:
    """Share of annotators who gave the item's (majority) label; 1.0 without annotators."""
    labels = item.annotator_labels
    if not labels or item.label is None:
        return 1.0
    return sum(1 for x in labels if x == item.label) / len(labels)


def human_filter(items: Iterable[PairwiseItem], min_agreement: float = 0.5
                 ) -> list[PairwiseItem]:
    """Items with a decisive human label (1 or 2) given by at least `min_agreement` of the
    annotators."""
    return [it for it in items if it.label in (1, 2) and annotator_share(it) >= min_agreement]


def human_filter_counts(items: Iterable[Any], min_agreement: float = 0.5,
                        used: int | None = None) -> dict[str, Any]:
    """What `human_filter` kept of the pairwise items loaded and why each other item was left
    out: `tie` (the human label is a tie), `no_label`, `annotator_split` (the majority label
    was given by fewer than `min_agreement` of the annotators). `used`: the items the run
    took of those kept (--limit / --pool), when fewer. The kept count was shown alone
    ("decisive human label (842)" of 945 loaded; mitigate's 82 tie-labelled items of 492
    vanished from every output)."""
    pairs = [it for it in items if isinstance(it, PairwiseItem)]
    tie = sum(1 for it in pairs if it.label == 0)
    none = sum(1 for it in pairs if it.label is None)
    split_ = sum(1 for it in pairs if it.label in (1, 2) and annotator_share(it) < min_agreement)
    kept = len(pairs) - tie - none - split_
    out: dict[str, Any] = {"loaded": len(pairs), "kept": kept, "min_agreement": min_agreement,
                           "left_out": {"tie": tie, "no_label": none,
                                        "annotator_split": split_}}
    if used is not None and used < kept:
        out["used"] = used
    return out


def human_filter_text(c: Mapping[str, Any]) -> str:
    """`human_filter_counts` in words, for the terminal: "items: 492 loaded, 410 with a
    decisive human label (left out: 82 tie labels, 0 without a label, 0 with annotators
    split below --min-agreement 0.5)"."""
    lo = c.get("left_out") or {}
    used = f"; {c['used']} of them used" if c.get("used") is not None else ""
    return (f"items: {c['loaded']} loaded, {c['kept']} with a decisive human label (left out: "
            f"{lo.get('tie', 0)} tie labels, {lo.get('no_label', 0)} without a label, "
            f"{lo.get('annotator_split', 0)} with annotators split below --min-agreement "
            f"{c.get('min_agreement', 0.5):g}){used}")


@dataclass
class Split:
    judge: str
    agree: list[str] = field(default_factory=list)
    disagree: list[str] = field(default_factory=list)
    neutral: list[str] = field(default_factory=list)   # tie or order-inconsistent
    invalid: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)   # no verdict for the item

    def sizes(self) -> dict[str, int]:
        return {"agree": len(self.agree), "disagree": len(self.disagree),
                "neutral": len(self.neutral), "invalid": len(self.invalid),
                "missing": len(self.missing)}

    def as_dict(self) -> dict[str, Any]:
        return {"judge": self.judge, "sizes": self.sizes()}


def split(judge: str, items: Sequence[PairwiseItem], winners: Mapping[str, Winner]) -> Split:
    """Sort human-labelled items into agreement / disagreement / neutral for one judge."""
    s = Split(judge)
    for it in items:
        if it.label not in (1, 2):
            continue
        if it.id not in winners:
            s.missing.append(it.id)
            continue
        w = winners[it.id]
        if w is None:
            s.invalid.append(it.id)
        elif w == 0:
            s.neutral.append(it.id)
        elif w == it.label:
            s.agree.append(it.id)
        else:
            s.disagree.append(it.id)
    return s


def consensus(splits: Sequence[Split], which: str = "disagree") -> list[str]:
    """Ids in `which` ("disagree" or "agree") for every judge, in the first judge's order."""
    if not splits:
        return []
    rest = [set(getattr(s, which)) for s in splits[1:]]
    return [i for i in getattr(splits[0], which) if all(i in r for r in rest)]


# ---- recorded PandaLM-testset verdicts -------------------------------------------------------

PANDALM_JUDGES: dict[str, tuple[str, str]] = {
    # name: (file, result field)
    "gpt-3.5-turbo": ("gpt-3.5-turbo-testset-v1.json", "gpt_result"),
    "pandalm-7b": ("pandalm-7b-testset-v1.json", "pandalm_result"),
}


def _pandalm_verdict(v: Any) -> str:
    """Original numbering "1"/"2", "tie", or "" (unparseable, e.g. GPT-3.5's "garbage")."""
    s = str(v).strip() if v is not None else ""
    if s in ("1", "2"):
        return s
    if s.lower() in ("0", "tie"):
        return "tie"
    return ""


def convert_pandalm_verdicts(folder: str | Path, out_dir: str | Path) -> dict[str, Path]:
    """Write each recorded judge of the PandaLM test set as a replay long-format CSV
    (item_id, order, verdict; order "12" only: the files hold one presentation order, response1
    shown first). Returns {judge name: csv path}."""
    src, out = Path(folder), Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, (fname, key) in PANDALM_JUDGES.items():
        path = src / fname
        try:
            rows = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ValueError(f"{path}: cannot read recorded verdicts ({exc})") from None
        if not isinstance(rows, list):
            raise ValueError(f"{path}: expected a JSON list of records")
        dest = out / f"{name}.csv"
        with dest.open("w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(["item_id", "order", "verdict"])
            for pos, rec in enumerate(rows):
                if not isinstance(rec, dict) or "idx" not in rec or key not in rec:
                    raise ValueError(f"{path}: record {pos}: expected fields 'idx' and {key!r}")
                w.writerow([f"pandalm:{rec['idx']}", "12", _pandalm_verdict(rec[key])])
        paths[name] = dest
    return paths


def replay_winners(path: str | Path, item_ids: Iterable[str], **filters: str
                   ) -> dict[str, Winner]:
    """Canonical winners from a replay file, through replay's own loader: consensus over the
    recorded orders (disagreeing orders = 0 = tie; unparseable = None)."""
    from judgeaudit.judges.parse import parse_choice
    from judgeaudit.llm.providers.replay import load_index

    idx = load_index(path, dict(filters))
    out: dict[str, Winner] = {}
    for iid in item_ids:
        ws: list[Winner] = []
        for order in ("12", "21"):
            v = idx.verdicts.get((iid, order))
            if v is None:
                continue
            label = "tie" if v == "tie" else parse_choice(v, ("A", "B"), allow_tie=True)
            if label is None:
                ws.append(None)
            elif label == "tie":
                ws.append(0)
            else:
                first = 1 if order == "12" else 2
                ws.append(first if label == "A" else 3 - first)
        if not ws:
            continue
        if any(w is None for w in ws):
            out[iid] = None
        else:
            out[iid] = ws[0] if all(w == ws[0] for w in ws) else 0
    return out


def verdict_winners(verdicts: Iterable[Any]) -> dict[str, Winner]:
    """{item_id: winner} from judgeaudit.judges PairwiseVerdicts."""
    return {v.item_id: v.winner for v in verdicts}


def summary(splits: Sequence[Split], n_items: int, min_agreement: float) -> dict[str, Any]:
    cons_dis = consensus(splits, "disagree")
    cons_agr = consensus(splits, "agree")
    return {
        "n_items": n_items,
        "min_annotator_agreement": min_agreement,
        "per_judge": {s.judge: s.sizes() for s in splits},
        "consensus_disagree": len(cons_dis),
        "consensus_agree": len(cons_agr),
    }


def label_counts(items: Iterable[PairwiseItem]) -> dict[str, int]:
    c = Counter(str(it.label) for it in items)
    return dict(sorted(c.items()))


__all__ = ["PANDALM_JUDGES", "Split", "annotator_share", "consensus",
           "convert_pandalm_verdicts", "human_filter", "human_filter_counts",
           "human_filter_text", "label_counts", "replay_winners",
           "split", "summary", "verdict_winners"]
