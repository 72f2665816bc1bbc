"""Terminal tables of results: every number with its n and 95% interval."""

from __future__ import annotations

from typing import Any

from rich.table import Table


def est_ci(e: Any, digits: int = 3) -> str:
    """'value [lo, hi]' of an estimate dict, '-' when it has no value."""
    if not isinstance(e, dict) or e.get("value") is None:
        return "-"
    lo, hi = e.get("ci95") or [None, None]
    ci = f" [{lo:.2f}, {hi:.2f}]" if lo is not None and hi is not None else ""
    return f"{e['value']:.{digits}f}{ci}"


def fmt_est(est: dict[str, Any] | None, pct: bool = True) -> tuple[str, str, str]:
    if not est or est.get("value") is None:
        return ("n/a", "", str(est.get("n", 0)) if est else "0")
    v, (lo, hi), n = est["value"], est["ci95"], est["n"]
    if pct:
        return (f"{100 * v:.1f}%", f"[{100 * lo:.1f}, {100 * hi:.1f}]", str(n))
    return (f"{v:.3f}", f"[{lo:.3f}, {hi:.3f}]", str(n))


def evaluate_table(res: dict[str, Any]) -> Table:
    t = Table(title=f"judge {res['judge']} on {res['data']}", title_justify="left")
    t.add_column("metric")
    t.add_column("value", justify="right")
    t.add_column("95% CI", justify="right")
    t.add_column("n", justify="right")
    rows = [
        ("accuracy (invalid = wrong)", res.get("accuracy"), True),
        ("accuracy (valid only)", res.get("accuracy_valid"), True),
        ("position consistency", res.get("position_consistency"), True),
        ("first-position rate", res.get("first_position_rate"), True),
        ("Cohen's kappa vs labels", res.get("cohen_kappa"), False),
        ("invalid verdicts", res.get("invalid_rate"), True),
    ]
    for name, est, pct in rows:
        if est is not None:
            t.add_row(name, *fmt_est(est, pct))
    return t


VERDICT_STYLE = {"biased": "bold red", "not_biased": "green", "underpowered": "yellow",
                 "run_failed": "bold red"}


def _num(x: float | None, fmt: str = "{:.3f}") -> str:
    return "n/a" if x is None else fmt.format(x)


def audit_table(res: dict[str, Any]) -> Table:
    t = Table(title=f"audit of {res['judge']} on {res['data']}", title_justify="left")
    for col, just in [("probe", "left"), ("effect [95% CI]", "right"), ("n", "right"),
                      ("q", "right"), ("MDE", "right"), ("verdict", "left"),
                      ("flag", "left")]:
        t.add_column(col, justify=just, no_wrap=True,  # type: ignore[arg-type]
                     min_width=12 if col == "probe" else None)
    for name, p in res["probes"].items():
        e = p["effect"]
        lo, hi = e["ci95"]
        ci = "" if lo is None else f" [{lo:+.2f}, {hi:+.2f}]"
        flag = p.get("flag") or {}
        ftxt = "" if not flag else (f"{flag['value']:.2f}{'>' if flag['exceeds'] else '<='}"
                                     f"{flag['threshold']:.2f}")
        v = p["verdict"]
        t.add_row(name, _num(e["value"], "{:+.2f}") + ci, str(p["n"]), _num(p["q"], "{:.1g}"),
                  _num(p["mde"], "{:.2f}"), f"[{VERDICT_STYLE[v]}]{v}[/]", ftxt)
    return t


def panel_table(panel: dict[str, Any]) -> Table:
    t = Table(title="judges ranked by position bias", title_justify="left")
    for col in ("#", "judge", "position effect [95% CI]", "consistency", "accuracy", "n"):
        t.add_column(col, no_wrap=col != "judge")
    for i, r in enumerate(panel["ranking"], start=1):
        e = r["position_effect"]
        lo, hi = e["ci95"]
        eff = "n/a" if e["value"] is None else f"{e['value']:+.3f} [{lo:+.3f}, {hi:+.3f}]"
        t.add_row(str(i), r["judge"], eff, fmt_est(r["position_consistency"])[0],
                  fmt_est(r["accuracy"])[0], str(e["n"]))
    return t
