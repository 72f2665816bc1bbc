"""Items (pydantic), the SPEC grammar, and dataset loaders registered by kind."""

from judgeaudit.data.registry import DataError, available, load, register_loader
from judgeaudit.data.schema import Item, Label, PairwiseItem, PointwiseItem
from judgeaudit.spec import Spec, parse_spec

__all__ = [
    "DataError", "Item", "Label", "PairwiseItem", "PointwiseItem", "Spec", "available", "load",
    "parse_spec", "register_loader",
]
