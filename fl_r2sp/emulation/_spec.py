"""Parsing of model specs such as ``"lognormal(mu=-2,sigma=1)"``."""

from __future__ import annotations

import math
import re

_SPEC = re.compile(r"^\s*([A-Za-z][\w-]*)\s*(?:\((.*)\))?\s*$", re.DOTALL)


def parse_spec(spec: str, what: str) -> tuple[str, dict[str, str]]:
    """Split ``"name(k=v,k=v)"`` into ``(name, {k: v})``; ``"name"`` has no params.

    Raises
    ------
    ValueError
        If the text is not of that form or a key is repeated; ``what`` names
        the kind of model in the message.
    """
    match = _SPEC.match(spec) if isinstance(spec, str) else None
    if match is None:
        raise ValueError(f"malformed {what} spec {spec!r}; expected e.g. 'name(key=value,...)'")
    name, body = match.group(1).lower(), match.group(2)
    params: dict[str, str] = {}
    if body and body.strip():
        for item in body.split(","):
            key, sep, value = item.partition("=")
            key, value = key.strip(), value.strip()
            if not sep or not key or not value:
                raise ValueError(
                    f"malformed parameter {item.strip()!r} in {what} spec {spec!r}; use key=value"
                )
            if key in params:
                raise ValueError(f"parameter {key!r} given twice in {what} spec {spec!r}")
            params[key] = value
    return name, params


class Params:
    """Typed access to parsed parameters, rejecting unknown keys.

    Parameters
    ----------
    spec : str
        The original text, quoted in error messages.
    params : dict of str to str
        As returned by :func:`parse_spec`.
    allowed : iterable of str
        Keys this model accepts.
    """

    def __init__(self, spec: str, params: dict[str, str], allowed: tuple[str, ...]) -> None:
        unknown = sorted(set(params) - set(allowed))
        if unknown:
            raise ValueError(
                f"unknown parameter(s) {unknown} in {spec!r}; allowed: {list(allowed)}"
            )
        self.spec, self.params = spec, params

    def num(
        self, key: str, default: float | None = None, low: float | None = None, strict: bool = False
    ) -> float:
        """Float ``key`` (``default`` if absent), checked ``>= low`` (``> low`` if ``strict``)."""
        if key not in self.params:
            if default is None:
                raise ValueError(f"{self.spec!r} needs parameter {key!r}")
            return default
        try:
            value = float(self.params[key])
        except ValueError:
            raise ValueError(
                f"parameter {key}={self.params[key]!r} in {self.spec!r} is not a number"
            ) from None
        if math.isnan(value) or (low is not None and (value <= low if strict else value < low)):
            bound = f"> {low}" if strict else f">= {low}"
            raise ValueError(f"parameter {key}={value} in {self.spec!r} must be {bound}")
        return value

    def text(self, key: str) -> str:
        """String parameter ``key`` (required)."""
        if key not in self.params:
            raise ValueError(f"{self.spec!r} needs parameter {key!r}")
        return self.params[key]
