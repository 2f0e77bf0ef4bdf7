"""Symbol attributes: MXNet's hidden keys and ``mx.AttrScope``.

MXNet stores five attribute keys - ``lr_mult``, ``wd_mult``, ``ctx_group``,
``force_mirroring``, ``mirror_stage`` - as hidden keys (``__lr_mult__``), so
that operators do not take them for parameters, and reads them back under
both names. ``mx.AttrScope(ctx_group='dev1')`` adds attributes to every
symbol made inside it.

>>> import minimx as mx
>>> with mx.AttrScope(ctx_group='dev1'):
...     w = mx.sym.Variable('w', lr_mult=2.0)
>>> w.attr('ctx_group'), w.attr('__lr_mult__')
('dev1', '2.0')
"""
from __future__ import annotations

import threading
from collections.abc import Mapping

from .base import MinimxError

HIDDEN_KEYS = ("ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage")


def stored_key(key: str) -> str:
    """The key an attribute is stored under: ``lr_mult`` -> ``__lr_mult__``.

    Like MXNet, refuses ``weight_lr_mult`` and the like (an attribute of an
    operator's input, given to the operator), naming the form that works.
    """
    for hidden in HIDDEN_KEYS:
        if key == hidden:
            return f"__{hidden}__"
        if key.endswith(hidden):
            raise MinimxError(f"setting variable attributes with {key} is deprecated; give it "
                              f"to the variable instead: w = Variable(..., {hidden}=...), then "
                              f"YourOp({key[:-len(hidden)].rstrip('_')}=w)")
    return key


def lookup(attrs: Mapping[str, str], key: str) -> str | None:
    """The value of `key`; a hidden key is found under its plain name too."""
    value = attrs.get(key)
    if value is None and key in HIDDEN_KEYS:
        value = attrs.get(f"__{key}__")
    return value


def listed(attrs: Mapping[str, str]) -> dict[str, str]:
    """The attributes as MXNet lists them: each hidden key also under its plain name."""
    plain = {hidden: attrs[f"__{hidden}__"] for hidden in HIDDEN_KEYS
             if f"__{hidden}__" in attrs}
    return {**attrs, **plain}


class AttributeValueError(MinimxError, ValueError):
    """An attribute value that is not a string (a ValueError, as MXNet raises)."""


class AttrScope:
    """Attributes given to every symbol made inside a ``with`` block; scopes nest.

    Values must be strings, as in MXNet. Attributes given at a call win over
    the scope's.
    """

    _local = threading.local()

    def __init__(self, **kwargs: str) -> None:
        for key, value in kwargs.items():
            if not isinstance(value, str):
                raise AttributeValueError(f"AttrScope: attribute {key}={value!r} must be a "
                                          "string")
        self._attr = dict(kwargs)
        self._old: AttrScope | None = None

    def get(self, attr: Mapping[str, str] | None) -> dict[str, str]:
        """The scope's attributes updated with those given at a call (`attr`)."""
        return {**self._attr, **(attr or {})}

    def __enter__(self) -> AttrScope:
        self._old = current()
        self._attr = self._old.get(self._attr)
        AttrScope._local.current = self
        return self

    def __exit__(self, *exc: object) -> None:
        AttrScope._local.current = self._old


_EMPTY = AttrScope()


def current() -> AttrScope:
    """The innermost active scope (one without attributes outside every ``with``)."""
    return getattr(AttrScope._local, "current", None) or _EMPTY
