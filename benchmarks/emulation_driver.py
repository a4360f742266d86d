"""Compact timing-only federated driver over the emulation engine (no training).

Clients loop: pull the model, compute ``iterations x seconds/iteration`` plus
an injected delay, push the update. Clients form ``n_groups`` groups (1 group
= BSP). A group's round ends when ``collect`` of its current-round updates
have arrived; the group then applies, in strict round-robin order and at
least ``T / n_groups`` after the previous application (T = EMA, weight 0.1,
of group round times; BSP: no gap), and releases its collected members (they
pull the new model at once). A straggler whose update arrives after its
group's round closed pulls the latest model immediately and joins the round in
progress. Used by ``bench_emulation.py`` and ``check_paper_ec2.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from fl_r2sp.emulation import EventQueue, get_profile, make_delay, pull_links, push_links, star_network

COMPUTE_DONE, APPLY = 1, 0  # event priorities: an application before a compute end at the same t


@dataclass
class RunStats:
    """Durations collected by :class:`TimingRun`."""

    pulls: list[float] = field(default_factory=list)
    pushes: list[float] = field(default_factory=list)
    rounds: list[float] = field(default_factory=list)
    applications: int = 0
    events: int = 0
    end_time: float = 0.0


class TimingRun:
    """One timing-only run; call :meth:`run` with the number of group applications."""

    def __init__(self, n_clients: int, n_groups: int, collect: int, profile: str, model_bytes: float,
                 iterations: int = 100, model: str = "cnn", delay: str = "lognormal(mu=-2,sigma=1)",
                 seed: int = 0, fast_path: bool = True) -> None:
        prof = get_profile(profile)
        self.net = star_network(n_clients, prof, record=(), keep_finished=False, fast_path=fast_path)
        self.q = EventQueue()
        self.delay = make_delay(delay)
        self.compute = iterations * prof.iteration_seconds(model)
        self.size, self.overhead, self.seed, self.collect = model_bytes, prof.overhead, seed, collect
        self.n_groups = n_groups
        self.group = [c % n_groups for c in range(n_clients)]
        self.job = [0] * n_clients
        self.job_round = [0] * n_clients  # group round a client's current job belongs to
        self.g_round = [0] * n_groups
        self.g_released = [0.0] * n_groups
        self.g_collected: list[list[int]] = [[] for _ in range(n_groups)]
        self.ready: dict[int, float] = {}
        self.turn, self.last_apply, self.t_est = 0, -math.inf, 0.0
        self.apply_pending = False
        self.stats = RunStats()

    def _pull(self, cid: int, t: float) -> None:
        self.job_round[cid] = self.g_round[self.group[cid]]
        self.net.start_flow(t, self.size, pull_links(cid), self.overhead, ("pull", cid, t))

    def _on_flow_done(self, tag: tuple[str, int, float], t: float) -> None:
        kind, cid, start = tag
        if kind == "pull":
            self.stats.pulls.append(t - start)
            busy = self.compute + self.delay.sample_for(self.seed, cid, self.job[cid])
            self.q.push(t + busy, COMPUTE_DONE, cid, cid)
            return
        self.stats.pushes.append(t - start)
        self.job[cid] += 1
        g = self.group[cid]
        if self.job_round[cid] != self.g_round[g] or g in self.ready:
            self._pull(cid, t)  # straggler: latest model at once
            return
        self.g_collected[g].append(cid)
        if len(self.g_collected[g]) == self.collect:
            self.stats.rounds.append(t - self.g_released[g])
            self.t_est = self.stats.rounds[-1] if len(self.stats.rounds) == 1 else (
                0.9 * self.t_est + 0.1 * self.stats.rounds[-1])
            self.ready[g] = t
            self._schedule_turn(t)

    def _schedule_turn(self, t: float) -> None:
        if self.turn in self.ready and not self.apply_pending:
            self.apply_pending = True
            gap = self.t_est / self.n_groups if self.n_groups > 1 else 0.0
            self.q.push(max(t, self.last_apply + gap), APPLY, self.turn, -1 - self.turn)

    def _apply(self, g: int, t: float) -> None:
        del self.ready[g]
        self.apply_pending = False
        self.last_apply = t
        self.stats.applications += 1
        self.g_round[g] += 1
        self.g_released[g] = t
        members, self.g_collected[g] = self.g_collected[g], []
        for cid in members:
            self._pull(cid, t)
        self.turn = (self.turn + 1) % self.n_groups
        self._schedule_turn(t)

    def run(self, applications: int) -> RunStats:
        """Release every client at t=0 and run until ``applications`` group applications."""
        for cid in range(len(self.group)):
            self._pull(cid, 0.0)
        while self.stats.applications < applications:
            nxt = self.net.next_completion()
            ev = self.q.peek()
            if nxt is not None and (ev is None or nxt[0] <= ev.time):
                for fid, t in self.net.advance(nxt[0]):
                    self.stats.events += 1
                    self._on_flow_done(self.net.flow_info(fid).tag, t)
                continue
            ev = self.q.pop()
            self.stats.events += 1
            for _fid, t in self.net.advance(ev.time):  # completions at exactly ev.time
                self.stats.events += 1
                self._on_flow_done(self.net.flow_info(_fid).tag, t)
            if ev.payload >= 0:
                self.net.start_flow(ev.time, self.size, push_links(ev.payload), self.overhead,
                                    ("push", ev.payload, ev.time))
            else:
                self._apply(-1 - ev.payload, ev.time)
        self.stats.end_time = self.net.now
        return self.stats


def summarize(stats: RunStats) -> dict[str, float]:
    """Average pull, push and group-round time in seconds."""
    return {"pull": float(np.mean(stats.pulls)), "push": float(np.mean(stats.pushes)),
            "round": float(np.mean(stats.rounds))}
