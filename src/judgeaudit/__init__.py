"""judgeaudit: audit LLM judges for bias, measure it, and correct for it.

The Python API: every command is a function returning a `Result`, sync (also inside a
running event loop, e.g. Jupyter) with an async twin::

    import judgeaudit
    res = judgeaudit.audit("sim?position=1&seed=0", "builtin:facts", n=30)
    res.report("out/report.html"); print(res.summary())

Commands: `evaluate`, `audit`, `scoring_bias`, `discover`, `quantify`, `mitigate`, `rank`,
`rank_eval` and their twins `aevaluate`, `aaudit`, `ascoring_bias`, `adiscover`, `aquantify`,
`amitigate`, `arank`, `arank_eval` (`judgeaudit.api`). Types: `Result`, `RunOutcome`,
`RunFailed` (`judgeaudit.result`), `Session`, `Progress` (`judgeaudit.session`), `Estimate`
(`judgeaudit.stats.types`).

Names load on first use, so `import judgeaudit` stays cheap. `judgeaudit.audit` is both the
`judgeaudit.audit` package (the battery, the probes) and the `audit` command: calling the
package runs `judgeaudit.api.audit`; likewise `judgeaudit.rank` (the ranking package) runs
`judgeaudit.api.rank`.
"""

from __future__ import annotations

import importlib
import inspect
import sys
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
        arank,
        arank_eval,
        ascoring_bias,
        audit,
        discover,
        evaluate,
        mitigate,
        quantify,
        rank,
        rank_eval,
        scoring_bias,
    )
    from judgeaudit.result import Result, RunFailed, RunOutcome
    from judgeaudit.session import Progress, Session
    from judgeaudit.stats.types import Estimate

_LAZY = {
    **dict.fromkeys(("evaluate", "aevaluate", "aaudit", "scoring_bias", "ascoring_bias",
                     "discover", "adiscover", "quantify", "aquantify", "mitigate",
                     "amitigate", "arank", "rank_eval", "arank_eval"),
                    "judgeaudit.api"),
    **dict.fromkeys(("Result", "RunFailed", "RunOutcome"), "judgeaudit.result"),
    **dict.fromkeys(("Session", "Progress"), "judgeaudit.session"),
    "Estimate": "judgeaudit.stats.types",
}

__all__ = [
    "Estimate", "Progress", "Result", "RunFailed", "RunOutcome", "Session", "__version__",
    "aaudit", "adiscover", "aevaluate", "amitigate", "aquantify", "arank", "arank_eval",
    "ascoring_bias", "audit", "discover", "evaluate", "mitigate", "quantify", "rank",
    "rank_eval", "scoring_bias",
]


def __getattr__(name: str) -> Any:
    if name in _COMMAND_PACKAGES:  # the package, made callable when bound (_Judgeaudit)
        return importlib.import_module(f"{__name__}.{name}")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'judgeaudit' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    # __all__ too: the command packages (`rank`) are in neither globals nor _LAZY until used
    return sorted({*globals(), *_LAZY, *__all__})


# Packages that are also commands: `judgeaudit.audit` and `judgeaudit.rank` must stay the
# packages (their submodules are imported as `judgeaudit.rank.run`, and Python binds the
# package to this name whenever it is imported), so the packages themselves are callable.
_COMMAND_PACKAGES = ("audit", "rank")


class _CommandPackage(types.ModuleType):
    """A package that is also a command: calling it runs `judgeaudit.api.<its name>`."""

    def _command(self) -> Any:
        import judgeaudit.api

        return getattr(judgeaudit.api, self.__name__.rpartition(".")[2])

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._command()(*args, **kwargs)

    @property
    def __signature__(self) -> inspect.Signature:
        return inspect.signature(self._command())

    @property  # type: ignore[override]
    def __doc__(self) -> str:  # help(judgeaudit.audit): the command first, then the package
        own = self.__dict__.get("__doc__") or ""
        name = self.__name__.rpartition(".")[2]
        return (f"judgeaudit.{name}{self.__signature__}\n\n{inspect.getdoc(self._command())}"
                f"\n\nThe {self.__name__} package: {own}")


class _Judgeaudit(types.ModuleType):
    """This package: a command package bound here on import (by Python's import system, via
    setattr) becomes callable, however it was first imported."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _COMMAND_PACKAGES and isinstance(value, types.ModuleType):
            _callable(value)
        super().__setattr__(name, value)


def _callable(pkg: types.ModuleType) -> types.ModuleType:
    if not isinstance(pkg, _CommandPackage):
        pkg.__class__ = _CommandPackage
    return pkg


def _callable_packages() -> None:
    sys.modules[__name__].__class__ = _Judgeaudit
    for name in _COMMAND_PACKAGES:
        if f"{__name__}.{name}" in sys.modules:
            _callable(sys.modules[f"{__name__}.{name}"])
    # the audit package's __init__ holds only a docstring: cheap, so bound now; the rank
    # package (numpy, scipy) is bound on first use (`__getattr__`) or first import
    _callable(importlib.import_module("judgeaudit.audit"))


_callable_packages()
