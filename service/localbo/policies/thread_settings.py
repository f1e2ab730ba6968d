"""GPyTorch's and linear_operator's settings, made per thread.

Their settings (``gpytorch.settings.fast_pred_var``, ``cg_tolerance``, ``linear_operator.settings.*``...)
are class attributes that context managers set on entry and restore on exit. Two threads inside such
contexts at once restore each other's values, so a posterior computed while another study plans takes
another code path and differs in the last bits (measured: the predictive mean of a SingleTaskGP in 10
of 10 concurrent runs; 0 of 10 with this module). Here every read and write of a setting goes to the
calling thread's own copy, falling back to the class attribute (the library's default, or a value set
at import as BoTorch does), so each plan computes exactly what it would alone.

Imported by ``localbo.policies``; it patches the three base classes of both libraries once.
"""

from __future__ import annotations

import threading
from typing import Any

import gpytorch.settings
import linear_operator.settings
import torch

_local = threading.local()
_MISSING = object()
_DTYPE_ATTRS = {
    torch.float: "_global_float_value",
    torch.double: "_global_double_value",
    torch.half: "_global_half_value",
}


def _get(cls: type, attr: str) -> Any:
    values: dict[tuple[type, str], Any] = getattr(_local, "values", {})
    value = values.get((cls, attr), _MISSING)
    return getattr(cls, attr) if value is _MISSING else value


def _set(cls: type, attr: str, value: Any) -> None:
    if not hasattr(_local, "values"):
        _local.values = {}
    _local.values[(cls, attr)] = value


def _flag_init(self: Any, state: bool = True) -> None:
    self.prev = _get(type(self), "_state")
    self.state = state


def _dtype_value(cls: type, dtype: Any) -> Any:
    if torch.is_tensor(dtype):
        dtype = dtype.dtype
    if dtype not in _DTYPE_ATTRS:
        raise RuntimeError(f"Unsupported dtype for {cls.__name__}.")
    return _get(cls, _DTYPE_ATTRS[dtype])


def _dtype_set(cls: type, float_value: Any, double_value: Any, half_value: Any) -> None:
    for dtype, value in zip(_DTYPE_ATTRS, (float_value, double_value, half_value), strict=True):
        if value is not None:
            _set(cls, _DTYPE_ATTRS[dtype], value)


def _per_thread(module: Any) -> None:
    flag, value, dtype_value = module._feature_flag, module._value_context, module._dtype_value_context
    flag.is_default = classmethod(lambda cls: _get(cls, "_state") is None)
    flag.on = classmethod(lambda cls: cls._default if cls.is_default() else _get(cls, "_state"))
    flag._set_state = classmethod(lambda cls, state: _set(cls, "_state", state))
    flag.__init__ = _flag_init
    value.value = classmethod(lambda cls: _get(cls, "_global_value"))
    value._set_value = classmethod(lambda cls, v: _set(cls, "_global_value", v))
    dtype_value.value = classmethod(_dtype_value)
    dtype_value._set_value = classmethod(_dtype_set)


for _module in (linear_operator.settings, gpytorch.settings):
    if not getattr(_module, "_localbo_per_thread", False):
        _per_thread(_module)
        _module._localbo_per_thread = True
