"""The base of every parameter-server scheme's frozen parameter record, and its checks.

One record class per scheme (or per scheme variant family, OSP's ``osp``/``osp-s``/``osp-c``)
sits next to its policy (``policies/ps/<scheme>.py``, ``policies/osp/params.py``). A record

* names its scheme in the field ``scheme`` (the field's default is the scheme's name, written
  once; :meth:`PSParams.validate` refuses another name unless the record lists
  :attr:`PSParams.variants`);
* holds the scheme's knobs with their defaults, each written once, and checks them in
  :meth:`PSParams.check`;
* builds its coordinator policy (:meth:`PSParams.make`; :meth:`PSParams.policy` validates
  first), which the runtime and the virtual-time twin both call;
* adds its command-line flags and reads them back (:meth:`PSParams.add_flags`,
  :meth:`PSParams.from_flags`).

The scheme table (:mod:`fl_r2sp.cluster.schemes`) lists the record class in the scheme's row.
"""

from __future__ import annotations

import argparse
import dataclasses
from abc import ABC, abstractmethod
from typing import ClassVar, Self

from fl_r2sp.cluster.policies.common.trace import TracedPolicy


class PSParams(ABC):
    """A parameter-server scheme's knobs (subclasses are frozen dataclasses).

    Attributes
    ----------
    scheme : str
        The scheme's name (the dataclass field's default).
    variants : tuple of str, class attribute, default ()
        Other names the same record runs under (empty: only the default name).
    emulated_compute : bool, class attribute, default True
        Whether the scheme's worker serves ``--compute-model emulated`` (the PS worker loop
        does; a scheme with its own loop that never calibrates sets False, so the setting is
        refused rather than silently ignored).
    """

    scheme: str
    variants: ClassVar[tuple[str, ...]] = ()
    emulated_compute: ClassVar[bool] = True

    @property
    def colocated(self) -> bool:
        """Whether the shards live in the processes of workers 0 .. S-1 (then the job has N
        ranks, not S + N). False but for OSP-C."""
        return False

    def validate(self) -> Self:
        """Check the scheme name and every knob; return ``self`` so calls chain.

        Raises
        ------
        ValueError
            Naming the bad knob, its value and what is allowed.
        """
        default = next(f.default for f in dataclasses.fields(self) if f.name == "scheme")  # type: ignore[arg-type]
        names = self.variants or (default,)
        if self.scheme not in names:
            raise ValueError(f"{type(self).__name__} runs {', '.join(map(str, names))}, "
                             f"not scheme {self.scheme!r}")  # fmt: skip
        self.check()
        return self

    def check(self) -> None:
        """Check the knobs (none by default).

        Raises
        ------
        ValueError
            Naming the bad knob.
        """
        return None  # a record without knobs has nothing to check

    def check_job(self, workers: int, servers: int, momentum: float) -> None:
        """Check the scheme's constraints on the job's shape (none by default).

        Raises
        ------
        ValueError
            If the scheme cannot run ``servers`` PS and ``workers`` workers with ``momentum``.
        """
        return None  # most schemes run on any job shape

    def caveats(self, workers: int) -> list[str]:
        """Warnings about knobs that make the scheme behave like another, which a user may
        still mean (none by default); refusals belong in :meth:`check` / :meth:`check_job`."""
        return []

    def policy(self, num_workers: int, batch_size: int) -> TracedPolicy:
        """Validate, then build the scheme's coordinator policy for ``num_workers`` workers.

        Raises
        ------
        ValueError
            On a bad knob, N < 1 or a batch size < 1.
        """
        return self.validate().make(num_workers, batch_size)

    @abstractmethod
    def make(self, num_workers: int, batch_size: int) -> TracedPolicy:
        """The coordinator policy of these knobs (use :meth:`policy`, which validates)."""

    @classmethod
    def add_flags(cls, group: argparse._ArgumentGroup) -> None:
        """Add the scheme's own flags to ``group`` (none by default)."""
        return None  # a record without knobs has no flags

    @classmethod
    def from_flags(cls, scheme: str, ns: argparse.Namespace) -> Self:
        """The record of ``scheme`` from parsed flags (defaults: no knob flags)."""
        return cls(scheme=scheme)  # type: ignore[call-arg]


def check_int(name: str, value: object, low: int) -> None:
    """Raise ValueError unless ``value`` is an int (not a bool) >= ``low``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")


def check_fraction(name: str, value: object, low_open: bool) -> None:
    """Raise ValueError unless ``value`` is a number in [0, 1] ((0, 1] if ``low_open``)."""
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if ok:
        v = float(value)  # type: ignore[arg-type]
        ok = (v > 0.0 if low_open else v >= 0.0) and v <= 1.0
    if not ok:
        raise ValueError(f"{name} must lie in {'(' if low_open else '['}0, 1], got {value!r}")


class KnoblessParams(PSParams):
    """The record of a scheme without knobs: :meth:`make` builds ``policy_class(N, batch)``.

    Attributes
    ----------
    policy_class : type, class attribute
        The scheme's policy, constructed as ``policy_class(num_workers, batch_size)``.
    """

    policy_class: ClassVar[type[TracedPolicy]]

    def make(self, num_workers: int, batch_size: int) -> TracedPolicy:
        """A ``policy_class`` for ``num_workers`` workers."""
        return self.policy_class(num_workers, batch_size)
