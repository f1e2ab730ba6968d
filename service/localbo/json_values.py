"""Free-form JSON from users (metadata, policy configs, spaces, params, ids, reasons): what may be stored.

What is stored must read back the same on SQLite and on Postgres and encode as UTF-8 JSON for every
later reader, or one request breaks a study (or the list of studies) for everyone. So every request
body is checked once, before anything is stored: nesting at most ``MAX_DEPTH`` levels; strings and
keys valid Unicode (no lone UTF-16 surrogate such as ``"\\udc80"``) without NUL characters (Postgres
cannot store them); numbers finite (no NaN, Infinity or ``1e999``) and integers within a float's range.
``readable`` is the other side: a row stored before these checks is shown degraded, never a 500.
"""

from __future__ import annotations

import json
import math
from typing import Any

MAX_DEPTH = 32
MAX_FREE_FORM_BYTES = 64 * 1024  # metadata and policy_config, as JSON


def unstorable_text(text: str) -> str | None:
    """Why a string cannot be stored, or None."""
    if "\x00" in text:
        return "NUL characters (\\u0000) cannot be stored; expected text without them"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "expected valid Unicode text; a lone UTF-16 surrogate (such as \\udc80) is not"
    return None


def unstorable_number(value: int | float) -> str | None:
    if isinstance(value, float):
        return None if math.isfinite(value) else f"expected a finite number, got {value}"
    try:
        float(value)
    except OverflowError:
        return "expected a number within the range of a float (about ±1.8e308)"
    return None


def field_path(where: tuple[Any, ...] | list[Any]) -> str:
    """A field's name in a 4xx: ``constraints[0].metric``, list positions in brackets, keys after dots."""
    out = ""
    for part in where:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def find_problem(value: Any, where: tuple[Any, ...] = (), max_depth: int = MAX_DEPTH) -> tuple[str, str] | None:
    """The first place (``metadata.a[3]``) where ``value`` cannot be stored and why, or None.

    Iterative (a hostile body may nest thousands of levels); keys are named with ``ascii()`` when they
    are the problem, so the answer itself is always valid JSON.
    """
    stack: list[tuple[Any, tuple[Any, ...], int]] = [(value, where, 0)]
    while stack:
        item, at, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth >= max_depth:
                return field_path(at) or "body", f"nested deeper than {max_depth} levels"
            if isinstance(item, dict):
                for key, child in item.items():
                    problem = unstorable_text(key) if isinstance(key, str) else "expected string keys"
                    if problem:
                        return field_path(at) or "body", f"key {ascii(key)}: {problem}"
                    stack.append((child, (*at, key), depth + 1))
            else:
                stack.extend((child, (*at, i), depth + 1) for i, child in enumerate(item))
        elif isinstance(item, str):
            problem = unstorable_text(item)
            if problem:
                return field_path(at) or "body", problem
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, int | float):
            problem = unstorable_number(item)
            if problem:
                return field_path(at) or "body", problem
        else:
            return field_path(at) or "body", f"expected a JSON value, got {type(item).__name__}"
    return None


def find_problem_in_body(body: Any) -> tuple[str, str] | None:
    """``find_problem`` for each field of a request body, its depth counted from the field."""
    if not isinstance(body, dict):
        return None  # not an object: the model's own validation says what was expected
    for key, value in body.items():
        problem = find_problem(value, (key,)) if isinstance(key, str) else None
        if problem is not None:
            return problem
        text_problem = unstorable_text(key) if isinstance(key, str) else None
        if text_problem is not None:
            return "body", f"key {ascii(key)}: {text_problem}"
    return None


def size_problem(value: Any, limit: int = MAX_FREE_FORM_BYTES) -> str | None:
    """Why a (storable) value is too large to keep on a study row, or None."""
    size = len(json.dumps(value, separators=(",", ":")).encode())
    return f"expected at most {limit} bytes of JSON, got {size}" if size > limit else None


def readable(value: Any, max_depth: int = MAX_DEPTH, depth: int = 0) -> Any:
    """A copy that encodes as JSON for every reader: lone surrogates escaped as text, non-finite
    numbers and anything nested deeper than ``max_depth`` as null. For rows stored before the checks."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict | list) and depth >= max_depth:
        return None
    if isinstance(value, dict):
        return {readable(str(k)): readable(v, max_depth, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [readable(v, max_depth, depth + 1) for v in value]
    return value
