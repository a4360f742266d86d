"""Fluid network model: links with capacities, flows sharing them max-min fairly.

A *flow* moves ``size`` bytes across a set of named links. Each flow first
pays its fixed ``overhead`` (latency / serialization) **before** any byte
moves; during the overhead it uses no bandwidth. Then its rate is its max-min
fair share (:mod:`.maxmin`) over all moving flows, recomputed only when the set
of moving flows changes (a flow starts moving, completes or is cancelled), so
completion times are exact, not time-stepped. While each flow shares at most
one of its links with other flows (a star: the server link), the rates are kept
as per-link processor-sharing / FIFO queues in ``O(log n)`` per change
(:mod:`.ps_fastpath`), falling back to the water-filling otherwise
(:mod:`.waterfill_state`); :mod:`.engine` switches between the two.

A link with discipline ``"fcfs"`` serves one flow at a time in the order
flows reached it (the end of their overhead; ties by flow id): the head flow
gets the link's capacity (capped by its other links' fair shares), the others
wait with rate 0. This models a server that serializes and sends one model at
a time. Nothing in :class:`Network` is specific to clients and servers;
:func:`star_network` builds the federated topology from plain links.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ._linkrecorder import LinkRecorder
from .engine import Engine
from .profiles import Profile

Discipline = Literal["fair", "fcfs"]


@dataclass(frozen=True)
class FlowInfo:
    """What is known about a flow. ``end`` is ``None`` while it is in flight."""

    fid: int
    start: float
    overhead: float
    size: float
    links: tuple[str, ...]
    tag: Any
    end: float | None
    cancelled: bool = False


_new_object = object.__new__


def _flow_info(
    fid: int,
    rec: tuple[float, float, float, tuple[str, ...], Any],
    end: float | None,
    cancelled: bool,
) -> FlowInfo:
    # Same object as FlowInfo(...), built without the frozen dataclass's eight
    # object.__setattr__ calls: flow_info() runs once per completion in run loops.
    info = _new_object(FlowInfo)
    info.__dict__.update(
        fid=fid,
        start=rec[0],
        overhead=rec[1],
        size=rec[2],
        links=rec[3],
        tag=rec[4],
        end=end,
        cancelled=cancelled,
    )
    return info


class Network:
    """Links and flows in virtual time.

    Parameters
    ----------
    record : bool or iterable of str, default False
        Links whose aggregate rate history is kept for :meth:`trace`
        (``True`` = every link). Recording costs time on every rate change.
    keep_finished : bool, default True
        Keep records of finished flows (needed by :meth:`concurrency` and by
        :meth:`flow_info` long after completion). If False, a finished flow's
        record stays readable until the *next* :meth:`advance` call after the
        one that reported it, then is dropped: memory stays bounded in long runs.
    fast_path : bool, default True
        Serve each link as an exact processor-sharing (fair) or FIFO (fcfs)
        queue while every flow shares at most one of its links with other
        flows and the result equals the max-min allocation (``O(log n)`` per
        change); otherwise, and always if False, re-run the water-filling over
        all flows on each change. Results agree up to float rounding.
    """

    def __init__(
        self,
        record: bool | Iterable[str] = False,
        keep_finished: bool = True,
        fast_path: bool = True,
    ) -> None:
        self._names: list[str] = ["<pad>"]
        self._index: dict[str, int] = {}
        self._ids_cache: dict[tuple[str, ...], tuple[int, ...]] = {}
        self._min_cap: dict[tuple[int, ...], float] = {}
        self._state = Engine(fast_path)
        # fid -> (start, overhead, size, links, tag); FlowInfo is built on demand.
        self._flows: dict[int, tuple[float, float, float, tuple[str, ...], Any]] = {}
        self._ends: dict[int, float] = {}
        self._cancelled: set[int] = set()
        self._next_fid = 0
        self._keep = keep_finished
        self._unreported: list[tuple[int, float]] = []
        self._to_forget: list[int] = []
        self._version = 0
        self._cache: tuple[int, tuple[float, int] | None] | None = None
        self._record_all = record is True
        self._recorder = LinkRecorder()
        self._record_names = set() if isinstance(record, bool) else set(record)
        self._state.set_recorder(self._recorder.observe, self._recorder.observe_loads)

    # -- topology ------------------------------------------------------------
    def add_link(self, name: str, capacity: float, discipline: Discipline = "fair") -> None:
        """Add a link of ``capacity`` bytes/s (``inf`` allowed) and discipline fair/fcfs.

        Raises
        ------
        ValueError
            On a duplicate name, a non-positive/NaN capacity or an unknown discipline.
        """
        if name in self._index:
            raise ValueError(f"link {name!r} already exists; link names must be unique")
        if not capacity > 0:
            raise ValueError(f"link {name!r}: capacity must be > 0 bytes/s, got {capacity!r}")
        if discipline not in ("fair", "fcfs"):
            raise ValueError(
                f"link {name!r}: discipline must be 'fair' or 'fcfs', got {discipline!r}"
            )
        self._index[name] = len(self._names)
        self._names.append(name)
        watched = self._record_all or name in self._record_names
        if watched:
            self._recorder.watch(self._index[name])
        self._state.add_link(float(capacity), discipline == "fcfs", watched)
        self._version += 1

    @property
    def links(self) -> tuple[str, ...]:
        """Names of all links, in creation order."""
        return tuple(self._names[1:])

    def capacity(self, link: str) -> float:
        """Capacity of ``link`` in bytes/s."""
        return float(self._state.cap[self._link_ids([link])[0]])

    def _link_ids(self, links: Sequence[str]) -> tuple[int, ...]:
        # Flows reuse a few link tuples (pull_links(i), push_links(i)): memoize them.
        ids = self._ids_cache.get(links) if isinstance(links, tuple) else None
        if ids is None:
            ids = self._resolve(links)
            if isinstance(links, tuple):
                self._ids_cache[links] = ids
        return ids

    def _resolve(self, links: Sequence[str]) -> tuple[int, ...]:
        if isinstance(links, str) or len(links) == 0:
            raise ValueError(f"a flow needs a non-empty sequence of link names, got {links!r}")
        try:
            ids = tuple(self._index[name] for name in links)
        except KeyError as err:
            raise ValueError(
                f"unknown link {err.args[0]!r}; known links: {self.links[:6]}..."
            ) from None
        if len(set(ids)) != len(ids):
            raise ValueError(f"flow lists a link twice: {list(links)}")
        return ids

    # -- flows ---------------------------------------------------------------
    @property
    def now(self) -> float:
        """Time up to which the network state has been advanced."""
        return self._state.t

    def start_flow(
        self, now: float, size: float, links: Sequence[str], overhead: float = 0.0, tag: Any = None
    ) -> int:
        """Start a transfer of ``size`` bytes at ``now`` and return its flow id.

        The ``overhead`` (seconds, default 0) is paid once, before bytes move.
        If ``now`` is later than :attr:`now`, the network is advanced first and
        any flows completing meanwhile are returned by the next :meth:`advance`.

        Raises
        ------
        ValueError
            If ``now`` is earlier than :attr:`now`, ``size`` or ``overhead`` is
            negative or not finite, or a link is unknown.
        """
        if not (math.isfinite(size) and size >= 0):
            raise ValueError(f"flow size must be a finite number of bytes >= 0, got {size!r}")
        if not (math.isfinite(overhead) and overhead >= 0):
            raise ValueError(f"flow overhead must be finite seconds >= 0, got {overhead!r}")
        ids = self._ids_cache.get(links) if isinstance(links, tuple) else None
        if ids is None:
            ids = self._link_ids(links)
        state = self._state
        if now != state.t:  # same instant: no catch-up, so many starts share one recompute
            self._catch_up(now)
        fid = self._next_fid
        self._next_fid += 1
        size = float(size)
        self._flows[fid] = (float(now), float(overhead), size, tuple(links), tag)
        if overhead > 0 or size == 0:
            state.add_pending(now + overhead, fid, size, ids)
        else:
            state.activate(fid, size, ids)
        self._version += 1
        return fid

    def _catch_up(self, now: float) -> None:
        if now < self._state.t:
            raise ValueError(
                f"cannot act at time {now!r}: the network is already at {self._state.t!r}"
            )
        self._unreported += self._finish(self._state.run(now))

    def _finish(self, done: list[tuple[int, float]]) -> list[tuple[int, float]]:
        ends = self._ends
        for fid, end in done:  # FlowInfo is built lazily by flow_info (cheaper here)
            ends[fid] = end
        return done

    def cancel_flow(self, fid: int) -> None:
        """Stop flow ``fid`` at the current network time (no-op if already finished).

        Raises
        ------
        KeyError
            If no such flow was ever started (or it was forgotten).
        """
        if self.flow_info(fid).end is not None:
            return
        self._state.cancel(fid)
        self._ends[fid] = self._state.t
        self._cancelled.add(fid)
        self._version += 1

    def flow_info(self, fid: int) -> FlowInfo:
        """Record of flow ``fid`` (start, end if done, size, links, tag)."""
        try:
            rec = self._flows[fid]
        except KeyError:
            raise KeyError(
                f"unknown flow id {fid}: never started, or finished with keep_finished=False"
            ) from None
        return _flow_info(fid, rec, self._ends.get(fid), fid in self._cancelled)

    def next_completion(self) -> tuple[float, int] | None:
        """``(time, fid)`` of the earliest completion if no flow is added or cancelled.

        Overhead phases ending first are taken into account (on a copy of the
        state). Ties are broken by flow id. ``None`` when nothing is in flight.
        """
        if self._unreported:
            return self._unreported[0][1], self._unreported[0][0]
        if self._cache is not None and self._cache[0] == self._version:
            return self._cache[1]
        result = self._state.next_completion()
        self._cache = (self._version, result)
        return result

    def advance(self, to: float) -> list[tuple[int, float]]:
        """Move time to ``to``; return ``(fid, completion_time)`` of the flows that
        finished at or before ``to``, in completion order (ties by flow id).

        Raises
        ------
        ValueError
            If ``to`` is earlier than :attr:`now`.
        """
        state = self._state
        if to < state.t:
            self._catch_up(to)  # raises
        done = state.run(to)  # self._catch_up(to), inlined
        ends = self._ends
        for fid, end in done:
            ends[fid] = end
        if self._unreported:
            done = self._unreported + done
            self._unreported = []
        self._version += 1
        if not self._keep:
            flows, ends = self._flows, self._ends
            for fid in self._to_forget:
                flows.pop(fid, None)
                ends.pop(fid, None)
                self._cancelled.discard(fid)
            self._to_forget = [fid for fid, _ in done]
        return done

    def in_flight(self) -> int:
        """Flows started and not yet reported by :meth:`advance` (overhead phase included)."""
        return self._state.count() + len(self._unreported)

    def uncontended_time(self, size: float, links: Sequence[str], overhead: float = 0.0) -> float:
        """Lower bound on a flow's duration: ``overhead + size / min capacity``."""
        ids = self._ids_cache.get(links) if isinstance(links, tuple) else None
        if ids is None:
            ids = self._link_ids(links)
        slowest = self._min_cap.get(ids)
        if slowest is None:  # capacities never change once added: memoize per link set
            slowest = self._min_cap[ids] = float(self._state.cap[list(ids)].min())
        return float(overhead) + float(size) / slowest

    # -- observations --------------------------------------------------------
    def trace(self, link: str, interval: float, until: float) -> tuple[np.ndarray, np.ndarray]:
        """Bytes carried by ``link`` in each ``interval`` from 0 to ``until``.

        Returns bin start times and bytes per bin (exact integration of the
        piecewise-constant rate). Only for links recorded (see ``record``).
        """
        if not (interval > 0 and until > 0):
            raise ValueError(f"interval and until must be > 0, got {interval!r}, {until!r}")
        idx = self._link_ids([link])[0]
        return self._recorder.trace(idx, interval, until, link, self._state.t)

    def concurrency(self, link: str) -> tuple[np.ndarray, np.ndarray]:
        """Step function of the number of flows in flight on ``link``.

        ``counts[i]`` holds from ``times[i]`` until ``times[i+1]``; a flow counts
        from its start (overhead phase included) until it completes or is
        cancelled. Needs ``keep_finished=True``.
        """
        self._link_ids([link])
        deltas: dict[float, int] = {}
        for fid in self._flows:
            info = self.flow_info(fid)
            if link in info.links:
                deltas[info.start] = deltas.get(info.start, 0) + 1
                if info.end is not None:
                    deltas[info.end] = deltas.get(info.end, 0) - 1
        times = np.array(sorted(deltas), dtype=float)
        counts = np.cumsum([deltas[t] for t in times]).astype(np.int64)
        return times, counts


SERVER_EGRESS = "server-egress"
SERVER_INGRESS = "server-ingress"


def pull_links(i: int) -> tuple[str, str]:
    """Links a model pull by client ``i`` crosses: server egress, then its downlink."""
    return (SERVER_EGRESS, f"c{i}-down")


def push_links(i: int) -> tuple[str, str]:
    """Links an update push by client ``i`` crosses: its uplink, then server ingress."""
    return (f"c{i}-up", SERVER_INGRESS)


def star_network(
    n_clients: int,
    profile: Profile,
    record: bool | Iterable[str] = (SERVER_EGRESS, SERVER_INGRESS),
    keep_finished: bool = True,
    fast_path: bool = True,
) -> Network:
    """One server, ``n_clients`` clients, full duplex (separate links each way).

    Links: ``server-egress``, ``server-ingress`` (disciplines from the profile),
    ``c{i}-down`` and ``c{i}-up`` for ``i`` in ``range(n_clients)`` (fair).

    Parameters
    ----------
    n_clients : int
        Number of clients (>= 1).
    profile : Profile
        Capacities and disciplines.
    record : bool or iterable of str, default the two server links
        Links whose byte trace is kept (see :class:`Network`).
    keep_finished : bool, default True
        See :class:`Network`.
    fast_path : bool, default True
        See :class:`Network`.
    """
    if n_clients < 1:
        raise ValueError(f"a star network needs at least 1 client, got {n_clients}")
    net = Network(record=record, keep_finished=keep_finished, fast_path=fast_path)
    net.add_link(SERVER_EGRESS, profile.server_egress, profile.egress_discipline)
    net.add_link(SERVER_INGRESS, profile.server_ingress, profile.ingress_discipline)
    for i in range(n_clients):
        net.add_link(f"c{i}-down", profile.client_down)
        net.add_link(f"c{i}-up", profile.client_up)
    return net
