"""Hostile clients: a client-side behaviour knob for robustness tests and experiments.

Run-config keys ``attack`` and ``attack-fraction``. The attack acts on the
reply of an honestly trained job, on the client side (``ClientRuntime.run``
and the batched executor), so it behaves the same in-process, under
``flwr run`` and in a real deployment. Grammar of ``attack``::

    none | TERM ("+" TERM)*        TERM = KIND ["(" NUMBER ")"] ["@" ID ("," ID)*]

=============  ==================================================  ===========
kind           what the client sends (``start`` = model it got)     default arg
=============  ==================================================  ===========
``sign-flip``  ``start - (w - start)``: its delta negated           (none)
``scale(k)``   ``start + k (w - start)``: its delta times k          1000
``huge(v)``    every weight equal to v (finite in float32)          1e30
``examples(n)``  honest weights, ``num-examples`` reported as n     1e9
``nan``        honest weights with the first one NaN (fuzzing)      (none)
``shape(k)``   honest weights with k zeros appended (k < 0: the     1
               last |k| cut off): a vector the model cannot take
=============  ==================================================  ===========

``nan`` and ``shape`` are fuzz kinds for the chaos run (``scripts/chaos.py``):
admission must reject them (``non-finite``, ``shape``) whatever the transport.

A term with ``@ids`` hits those partition ids; a term without hits the
seeded draw of ``round(attack-fraction * N)`` clients (the same draw for
every such term, a pure function of the seed), so ``attack = "sign-flip"``
with ``attack-fraction = 0.25`` makes a quarter of the clients flip signs.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import Literal, get_args

import numpy as np

from fl_r2sp.fl.protocol import Job, Reply

AttackKind = Literal["sign-flip", "scale", "huge", "examples", "nan", "shape"]
ATTACK_KINDS: tuple[str, ...] = get_args(AttackKind)
_DEFAULT_ARG = {
    "sign-flip": None,
    "scale": 1000.0,
    "huge": 1e30,
    "examples": 1e9,
    "nan": None,
    "shape": 1.0,
}
#: Kinds that take no number.
_NO_ARG = ("sign-flip", "nan")
_TERM = re.compile(r"^\s*([a-z-]+)\s*(?:\(\s*([^()]*?)\s*\))?\s*(?:@\s*([0-9,\s]+))?\s*$")
#: Seed stream of the attacker draw (the SGD stream is 11, fl_r2sp.fl.clients.runtime).
_ATTACK_STREAM = 12


@dataclass(frozen=True)
class Attack:
    """One term of the ``attack`` spec.

    Attributes
    ----------
    kind : {"sign-flip", "scale", "huge", "examples", "nan", "shape"}
    arg : float or None
        Its number (see the module table for defaults).
    ids : tuple of int or None
        Explicit partition ids; None = the ``attack-fraction`` draw.
    """

    kind: AttackKind
    arg: float | None
    ids: tuple[int, ...] | None

    def apply(self, job: Job, reply: Reply) -> Reply:
        """The reply as this attack rewrites it (error replies pass unchanged)."""
        if not reply.ok:
            return reply
        assert reply.weights is not None
        if self.kind == "examples":
            return replace(reply, num_examples=int(self.arg or 0))
        if self.kind == "huge":
            return replace(reply, weights=np.full_like(reply.weights, self.arg, np.float32))
        if self.kind in ("nan", "shape"):
            return replace(reply, weights=_fuzz(reply.weights, self.kind, int(self.arg or 0)))
        start = np.asarray(job.weights, dtype=np.float64)
        delta = np.asarray(reply.weights, dtype=np.float64) - start
        factor = -1.0 if self.kind == "sign-flip" else float(self.arg or 0.0)
        return replace(reply, weights=(start + factor * delta).astype(np.float32))


def parse_attack(spec: str) -> tuple[Attack, ...]:
    """Parse an ``attack`` spec (module docstring); ``"none"`` or ``""`` gives ``()``.

    Raises
    ------
    ValueError
        Naming the bad term and the grammar.
    """
    if spec.strip().lower() in ("", "none"):
        return ()
    return tuple(_term(t) for t in spec.split("+"))


def _term(text: str) -> Attack:
    how = (
        "expected KIND[(NUMBER)][@ID,ID...] with KIND one of "
        + ", ".join(ATTACK_KINDS)
        + ", terms joined by '+'"
    )
    m = _TERM.match(text)
    if m is None or m.group(1) not in ATTACK_KINDS:
        raise ValueError(f"invalid run config attack term {text.strip()!r}: {how}")
    kind, raw, ids = m.group(1), m.group(2), m.group(3)
    if kind in _NO_ARG and raw:
        raise ValueError(
            f"invalid run config attack term {text.strip()!r}: {kind} takes no argument"
        )
    try:
        arg = float(raw) if raw else _DEFAULT_ARG[kind]
    except ValueError:
        raise ValueError(f"invalid run config attack term {text.strip()!r}: {how}") from None
    if arg is not None and not math.isfinite(arg):
        raise ValueError(
            f"invalid run config attack term {text.strip()!r}: the number must "
            "be finite (non-finite updates are another test)"
        )
    if kind == "huge" and arg is not None and abs(arg) > float(np.finfo(np.float32).max):
        raise ValueError(
            f"invalid run config attack term {text.strip()!r}: huge(v) needs "
            "|v| <= 3.4e38 (finite in float32)"
        )
    if kind == "shape" and (arg is None or arg != int(arg) or arg == 0):
        raise ValueError(
            f"invalid run config attack term {text.strip()!r}: shape(k) needs a non-zero "
            "integer k (elements appended; negative: cut off)"
        )
    cids = tuple(int(i) for i in ids.replace(" ", "").split(",") if i) if ids else None
    return Attack(kind, arg, cids)  # type: ignore[arg-type]


def _fuzz(weights: np.ndarray, kind: str, k: int) -> np.ndarray:
    """``weights`` with the first entry NaN (``nan``) or ``k`` zeros appended / cut (``shape``)."""
    out = np.array(weights, dtype=np.float32, copy=True)
    if kind == "nan":
        out[:1] = np.nan
        return out
    return np.concatenate([out, np.zeros(k, np.float32)]) if k > 0 else out[: out.size + k]


def drawn_attackers(seed: int, num_clients: int, fraction: float) -> frozenset[int]:
    """The ``round(fraction * num_clients)`` clients of the seeded draw (a pure function)."""
    count = int(round(fraction * num_clients))
    if count <= 0:
        return frozenset()
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, _ATTACK_STREAM])))
    return frozenset(int(c) for c in rng.permutation(num_clients)[:count])


@dataclass(frozen=True)
class AttackPlan:
    """Which client runs which attacks in one run.

    Parameters
    ----------
    terms : tuple of Attack
        From :func:`parse_attack`.
    drawn : frozenset of int
        The clients of the ``attack-fraction`` draw.
    """

    terms: tuple[Attack, ...] = ()
    drawn: frozenset[int] = frozenset()

    @classmethod
    def of(cls, spec: str, fraction: float, seed: int, num_clients: int) -> AttackPlan:
        """The plan of run-config values ``attack``, ``attack-fraction``, ``seed``, N.

        Raises
        ------
        ValueError
            On a bad spec or an id outside ``0..num_clients-1``.
        """
        terms = parse_attack(spec)
        for term in terms:
            bad = [c for c in term.ids or () if not 0 <= c < num_clients]
            if bad:
                raise ValueError(
                    f"invalid run config attack={spec!r}: ids {bad} outside 0..{num_clients - 1}"
                )
        return cls(terms, drawn_attackers(seed, num_clients, fraction))

    def attackers(self) -> frozenset[int]:
        """Every client that runs at least one term."""
        out = set()
        for term in self.terms:
            out |= set(term.ids) if term.ids is not None else set(self.drawn)
        return frozenset(out)

    def apply(self, job: Job, reply: Reply) -> Reply:
        """``reply`` after every term that hits ``job.cid``, in spec order."""
        for term in self.terms:
            hit = term.ids if term.ids is not None else self.drawn
            if job.cid in hit:
                reply = term.apply(job, reply)
        return reply
