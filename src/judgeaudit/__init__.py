"""judgeaudit: audit LLM judges for bias, measure it, and correct for it.

The Python API: every command is a function returning a `Result`, sync (also inside a
running event loop, e.g. Jupyter) with an async twin::

    import judgeaudit
    res = judgeaudit.audit("sim?position=1&seed=0", "builtin:facts", n=30)
    res.report("out/report.html"); print(res.summary())

Commands: `evaluate`, `audit`, `scoring_bias`, `discover`, `quantify`, `mitigate` and their
twins `aevaluate`, `aaudit`, `ascoring_bias`, `adiscover`, `aquantify`, `amitigate`
(`judgeaudit.api`). Types: `Result`, `RunOutcome`, `RunFailed` (`judgeaudit.result`),
`Session`, `Progress` (`judgeaudit.session`), `Estimate` (`judgeaudit.stats.types`).

Names load on first use, so `import judgeaudit` stays cheap. `judgeaudit.audit` is both the
`judgeaudit.audit` package (the battery, the probes) and the `audit` command: calling the
package runs `judgeaudit.api.audit`.
"""

from __future__ import annotations

import importlib
import inspect
import types
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from judgeaudit.api import (
        aaudit,
        adiscover,
        aevaluate,
        amitigate,
        aquantify,
        ascoring_bias,
        audit,
        discover,
        evaluate,
        mitigate,
        quantify,
        scoring_bias,
    )
    from judgeaudit.result import Result, RunFailed, RunOutcome
    from judgeaudit.session import Progress, Session
    from judgeaudit.stats.types import Estimate

_LAZY = {
    **dict.fromkeys(("evaluate", "aevaluate", "aaudit", "scoring_bias", "ascoring_bias",
                     "discover", "adiscover", "quantify", "aquantify", "mitigate",
                     "amitigate"), "judgeaudit.api"),
    **dict.fromkeys(("Result", "RunFailed", "RunOutcome"), "judgeaudit.result"),
    **dict.fromkeys(("Session", "Progress"), "judgeaudit.session"),
    "Estimate": "judgeaudit.stats.types",
}

__all__ = [
    "Estimate", "Progress", "Result", "RunFailed", "RunOutcome", "Session", "__version__",
    "aaudit", "adiscover", "aevaluate", "amitigate", "aquantify", "ascoring_bias", "audit",
    "discover", "evaluate", "mitigate", "quantify", "scoring_bias",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'judgeaudit' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


class _CommandPackage(types.ModuleType):
    """A package that is also a command. `judgeaudit.audit` must stay the package (its
    submodules are imported as `judgeaudit.audit.battery`, and Python binds the package to
    this name whenever it is imported), so the package itself is made callable."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from judgeaudit.api import audit as run

        return run(*args, **kwargs)

    @property
    def __signature__(self) -> inspect.Signature:
        from judgeaudit.api import audit as run

        return inspect.signature(run)


def _callable_audit_package() -> None:
    pkg = importlib.import_module("judgeaudit.audit")  # its __init__ holds only a docstring
    if not isinstance(pkg, _CommandPackage):
        pkg.__class__ = _CommandPackage


_callable_audit_package()
