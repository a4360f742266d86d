"""Which Flower node serves which partition, kept up to date during the run.

Node ids are random per SuperNode start; the stable name of a client is the
``partition-id`` each node reports when asked (a ``query`` message). At start
:meth:`PartitionMap.refresh` is called until every expected partition
answered (or a bounded wait ends); during a wall-clock run the transport calls
it again every second or so. Each call reads the SuperLink's *online* node
set (``Grid.get_node_ids`` returns only nodes whose heartbeat is current),
asks nodes it has not seen yet for their partition id, and settles answers:

* an unknown partition is attached to the node;
* a known partition whose node left the online set is *re-attached* to the
  new node (a restarted SuperNode comes back with a new node id);
* a partition whose node left the online set and came back (heartbeats
  missed, then resumed: same node id) is reported like a re-attachment;
* a known partition whose node is still online is a *duplicate*: the new
  node is refused with a warning, not a crash, and remembered as a claimant
  that takes over if the first node goes offline (a SuperNode killed and
  restarted within the SuperLink's expiry looks exactly like that);
* with a node manifest (secure deployments, :mod:`.node_manifest`) a node may
  claim only the partition bound to its registered key: any other claim is
  refused for good, whoever answered first;
* a node without a query handler (a stock ClientApp: Flower answers "No query
  function registered") is numbered by :meth:`PartitionMap.number_stock`'s rule
  (ascending node id onto the free partition ids) once the start wait ends, and
  at once during the run (it takes over a lost partition). Any other error
  answer at start fails the start at once, naming the node and the error.

A node that does not answer its query within :data:`REQUERY_AFTER` s is asked again with a
new message and reported *silent* (a warning :data:`SILENT` matches, naming the node and
how often it was asked since its last answer). Re-asking covers a query the SuperNode failed
to pull; it cannot help a *wedged* SuperNode: Flower 1.42's SuperNode handles one message
at a time and, when a ClientApp's reply upload failed (its task token refused after a
"database is locked" HTTP 500 from a busy SuperLink), waits forever for the reply's
objects, pulling nothing more. Only a restart helps that node; a supervisor
(``scripts/chaos.py --restart-silent``) does it on the warning, and the restarted node
(a new node id) is asked like any newcomer. Queries to nodes that left the online set are
not awaited (the start's wait would otherwise last its whole ``node-wait``).

Detection latency of a lost node: a SuperNode sends a heartbeat every
~24 s (Flower 1.42: 0.8 x the 30 s interval, +-10 %); the SuperLink marks it
offline once ``online_until = last heartbeat + 2 x 30 s`` passes, i.e. 36-60 s
after a hard kill. A SuperNode stopped with SIGTERM/SIGINT deactivates itself
and leaves the online set at once.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Mapping
from typing import Any

from flwr.serverapp import Grid

from fl_r2sp.fl.flower.node_manifest import Binding, refusal
from fl_r2sp.fl.flower.records import number
from fl_r2sp.fl.flower.retry import RetryPolicy, call_with_retry

log = logging.getLogger("fl_r2sp")

#: The error a Flower 1.42 ClientApp without ``@app.query()`` answers a query with (a stock
#: ClientApp, as Flower's templates write it): such a node is *unnumbered*, not failed.
NO_QUERY_HANDLER = re.compile(r"No query function registered")

#: Seconds after which a partition query without an answer is asked again.
REQUERY_AFTER = 120.0
#: The warning about a node that left a query unanswered for REQUERY_AFTER s: group 1 is
#: the node id, group 2 how many queries it was sent since its last answer.
SILENT = re.compile(r"node (\d+) is silent: (\d+) partition queries unanswered")


class PartitionMap:
    """{partition id: node id} of the online nodes, with re-attachment.

    Parameters
    ----------
    grid : Grid
        The ServerApp's grid.
    expected : int
        ``num-partitions`` (0 = unknown: no range or count checks).
    make_query : callable
        Node id -> the partition query message for it.
    retry : RetryPolicy (default: RetryPolicy())
        Retries of the SuperLink calls.
    bindings : mapping of int to Binding, or None (default: None)
        The node manifest (:mod:`.node_manifest`): a node may serve only the partition bound
        to its node id (its registered key); None = any node may claim any partition.
    """

    def __init__(
        self,
        grid: Grid,
        expected: int,
        make_query: Callable[[int], Any],
        retry: RetryPolicy | None = None,
        bindings: Mapping[int, Binding] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.grid = grid
        self.clock = clock
        self.expected = int(expected)
        self.make_query = make_query
        self.retry = retry if retry is not None else RetryPolicy()
        self.bindings = bindings
        #: Nodes refused by the manifest: node id -> (partition claimed, why).
        self.refused: dict[int, tuple[int, str]] = {}
        self.node_of: dict[int, int] = {}
        self.online: set[int] = set()
        #: While starting, a node told another num-partitions stops the run (ValueError).
        self.strict = True
        #: How the start wait ended (for the missing-partitions message).
        self.waited = ""
        self._asked: dict[str, int] = {}  # query message id -> node id
        self._asked_at: dict[int, float] = {}  # node -> when its latest query went out
        self._seen: set[int] = set()  # nodes asked (answered or not)
        self._asks: dict[int, int] = {}  # node -> queries sent since its last answer
        self._claims: dict[int, int] = {}  # refused node -> the partition it claims
        #: Nodes without a query handler (stock ClientApps), numbered by :meth:`number_stock`.
        self.stock: set[int] = set()
        self._spares: set[int] = set()  # stock nodes with no free partition id (yet)

    def refresh(self) -> list[int]:
        """Read the online set, ask new nodes, settle answers and claims.

        Returns
        -------
        list of int
            Partitions that got a new node in this call (first attachments included).
        """
        ids = call_with_retry(lambda: list(self.grid.get_node_ids()), "get_node_ids", self.retry)
        was_lost = self.lost()
        self.online = set(ids)
        for node in {n for n in self._asked.values() if n not in self.online}:
            self._forget_queries(node)  # gone: not awaited; asked again if it comes back
            self._seen.discard(node)
        # A node that missed heartbeats (a starved machine) comes back online with its own id.
        back = sorted(p for p in was_lost if self.node_of[p] in self.online)
        new = sorted(n for n in self.online if n not in self._seen)
        silent = self._silent()
        if new or silent:
            self._ask(new + silent)
        return back + self.read_answers() + self._settle_claims()

    def _silent(self) -> list[int]:
        """Nodes whose latest query is REQUERY_AFTER s old, each reported (:data:`SILENT`).

        Flower 1.42's SuperNode drops a message it failed to pull (HTTP 500 on a SuperLink
        "database is locked", seen with 32 nodes at load 30) and never answers it: a new
        message reaches it. A wedged SuperNode answers none (module docstring).
        """
        now = self.clock()
        silent = sorted(n for n, t in self._asked_at.items() if now - t > REQUERY_AFTER)
        for node in silent:
            log.warning(
                "node %d is silent: %d partition queries unanswered, the latest for %.0f s; "
                "asking again with a new message (a SuperNode that stays silent is wedged: "
                "restart it)",
                node,
                self._asks.get(node, 0),
                now - self._asked_at[node],
            )
        return silent

    def _ask(self, nodes: list[int]) -> None:
        msgs = [self.make_query(n) for n in nodes]
        pushed = call_with_retry(
            lambda: list(self.grid.push_messages(msgs)), "partition query", self.retry
        )
        for mid, node in zip(pushed, nodes, strict=True):
            if mid:
                self._asked[mid] = node
                self._asked_at[node] = self.clock()
                self._asks[node] = self._asks.get(node, 0) + 1
                self._seen.add(node)

    def read_answers(self) -> list[int]:
        """Pull the answers to the queries asked so far; the partitions they attached."""
        if not self._asked:
            return []
        replies = call_with_retry(
            lambda: list(self.grid.pull_messages(list(self._asked))),
            "partition answers",
            self.retry,
        )
        attached: list[int] = []
        for reply in replies:
            node = self._asked.pop(reply.metadata.reply_to_message_id, None)
            if node is not None:
                self._forget_queries(node)  # answered: its other queries are not awaited
                attached += self._answer(node, reply)
        return attached

    def _forget_queries(self, node: int) -> None:
        self._asked_at.pop(node, None)
        self._asks.pop(node, None)
        for mid in [m for m, n in self._asked.items() if n == node]:
            del self._asked[mid]

    def lost(self) -> set[int]:
        """Partitions whose node is not in the online set of the last refresh."""
        return {p for p, n in self.node_of.items() if n not in self.online}

    def pending(self) -> int:
        """Queries asked and not answered yet."""
        return len(self._asked)

    def _answer(self, node: int, reply: Any) -> list[int]:
        if reply.has_error():
            reason = str(reply.error.reason)
            if NO_QUERY_HANDLER.search(reason):
                self.stock.add(node)  # a stock ClientApp: numbered by the fallback rule
                return [] if self.strict else self._number_one(node)
            if self.strict:  # at start: name the cause now, not after node-wait
                raise RuntimeError(
                    f"node {node} answered the partition query with an error: {reason.strip()}"
                )
            log.warning("node %d failed the partition query: %s", node, reason)
            self._seen.discard(node)  # ask again at the next refresh
            return []
        answer = reply.content["config"]
        pid = int(number(answer, "partition-id"))
        told = int(number(answer, "num-partitions", 0))
        if self.expected and told and told != self.expected:
            text = (
                f"the nodes were started with num-partitions={told} but the run config "
                f"says num-partitions={self.expected}: make them equal (in simulation pass "
                f'--run-config "num-partitions={told}" or num-supernodes={self.expected})'
            )
            if self.strict:
                raise ValueError(text)
            log.warning("node %d refused: %s", node, text)
            return []
        if self.expected and not 0 <= pid < self.expected:
            log.warning(
                "node %d refused: partition-id=%d outside [0, num-partitions=%d)",
                node,
                pid,
                self.expected,
            )
            return []
        return self._claim(node, pid)

    def _claim(self, node: int, pid: int) -> list[int]:
        if self.bindings is not None:
            why = refusal(self.bindings, node, pid)
            if why is not None:  # never attached, never a claimant: it gets no work at all
                if node not in self.refused:
                    log.warning("node %d refused, no work for it: %s", node, why)
                self.refused[node] = (pid, why)
                return []
        holder = self.node_of.get(pid)
        if holder == node:
            return []
        if holder is not None and holder in self.online:
            log.warning(
                "node %d reports partition-id=%d, which live node %d already serves: refused "
                "(it takes over if node %d goes offline); give each SuperNode its own id",
                node,
                pid,
                holder,
                holder,
            )
            self._claims[node] = pid
            return []
        if holder is not None:
            log.warning("partition %d re-attached: node %d (was %d, offline)", pid, node, holder)
        self.node_of[pid] = node
        return [pid]

    def unnumbered(self) -> list[int]:
        """Online stock nodes without a partition id yet, sorted by node id."""
        held = set(self.node_of.values())
        return sorted(n for n in self.stock if n in self.online and n not in held)

    def number_stock(self) -> list[int]:
        """Give the unnumbered stock nodes the free partition ids (the fallback rule).

        Rule: in ascending node-id order, each takes the lowest partition id in
        ``0..num-partitions-1`` that no live node serves. Sorted ids, not the order of
        first contact: the answers' arrival order varies with load, the set of node ids
        does not, so a given set of nodes always gets the same numbering. Node ids are
        random per SuperNode start, though, so across runs the numbering (hence the
        groups ``i % M``, device speeds and delays of each node) changes: a run is
        reproducible only with nodes that answer the query (:mod:`fl_r2sp.fl.flower.timed`
        or the project's ClientApp).

        Returns
        -------
        list of int
            The partition ids given out.

        Raises
        ------
        ValueError
            At start (``strict``), if more stock nodes are online than free partition ids.
        """
        waiting = self.unnumbered()
        free = self._free_ids()
        if self.strict and self.expected and len(waiting) > len(free):
            raise ValueError(
                f"{len(self.online)} nodes are online but num-partitions={self.expected} "
                f"({len(waiting)} without a query handler, {len(free)} partition ids free): "
                f"make them equal (num-supernodes={self.expected} in simulation, or "
                f'--run-config "num-partitions={len(self.online)}")'
            )
        attached: list[int] = []
        for node in waiting:
            attached += self._number_one(node)
        return attached

    def _free_ids(self) -> list[int]:
        """Partition ids no live node serves, ascending (``expected`` 0: the next ones)."""
        live = {p for p, n in self.node_of.items() if n in self.online}
        top = self.expected or (max(self.node_of, default=-1) + 1 + len(self.stock))
        return [p for p in range(top) if p not in live]

    def _number_one(self, node: int) -> list[int]:
        free = self._free_ids()
        if not free:
            if node not in self._spares:
                log.warning(
                    "node %d (no query handler) gets no partition: all num-partitions=%d "
                    "are served; it takes over one that goes offline",
                    node,
                    self.expected,
                )
            self._spares.add(node)
            return []
        self._spares.discard(node)
        log.info("node %d (no query handler) numbered partition %d", node, free[0])
        self.node_of[free[0]] = node
        return [free[0]]

    def _settle_claims(self) -> list[int]:
        attached: list[int] = []
        for node in sorted(self._spares):
            if node not in self.online:
                self._spares.discard(node)
            elif self._free_ids():
                attached += self._number_one(node)
        for node, pid in sorted(self._claims.items()):
            if node not in self.online:
                del self._claims[node]
            elif self.node_of.get(pid) not in self.online:
                del self._claims[node]
                attached += self._claim(node, pid)
        return attached


def discover(
    grid: Grid,
    make_query: Callable[[int], Any],
    expected: int = 0,
    timeout: float = 120.0,
    wait_for_all: bool = False,
    retry: RetryPolicy | None = None,
    poll: float = 0.05,
    grace: float = 0.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    bindings: Mapping[int, Binding] | None = None,
) -> PartitionMap:
    """Ask the connected nodes for their partition ids, for up to ``timeout`` s.

    With ``wait_for_all``, nodes that connect during the wait are asked too
    and the wait ends when ``expected`` partitions answered, or, with
    ``grace > 0`` (``node-grace``), as soon as fewer than ``expected`` nodes
    are online, every query is answered and no node came or went for
    ``grace`` s (nodes missing at start fail the run within seconds instead of
    after ``node-wait``). Without it only the nodes online now are asked, and
    the wait ends when they all answered. A node told another
    ``num-partitions`` raises ``ValueError`` as soon as it answers. The caller
    checks what is missing (:func:`check_found`); ``PartitionMap.waited`` says
    how the wait ended. ``clock`` and ``sleep`` are injectable for tests; ``bindings``
    is the node manifest (:class:`PartitionMap`).
    """
    pmap = PartitionMap(grid, expected, make_query, retry, bindings, clock)
    start = clock()
    deadline = start + timeout
    pmap.waited = f"node-wait={timeout:g} s"
    pmap.refresh()
    state, changed = _state(pmap), start
    while clock() < deadline:
        known = len(pmap.node_of) + len(pmap.unnumbered())
        if not pmap.pending() and (not wait_for_all or known >= expected):
            break
        if wait_for_all and grace > 0 and _stalled(pmap, expected, clock() - changed, grace):
            pmap.waited = f"no node came or went for node-grace={grace:g} s"
            break
        sleep(poll)
        if wait_for_all:
            pmap.refresh()
        else:  # only the nodes online at first: read their answers, ask no one new
            pmap.read_answers()
        if _state(pmap) != state:
            state, changed = _state(pmap), clock()
    pmap.number_stock()
    pmap.strict = False  # from now on a misconfigured newcomer is refused, not fatal
    return pmap


def _state(pmap: PartitionMap) -> tuple[frozenset[int], int]:
    """What counts as progress at start: the online set and the partitions attached."""
    return frozenset(pmap.online), len(pmap.node_of) + len(pmap.stock)


def _stalled(pmap: PartitionMap, expected: int, idle: float, grace: float) -> bool:
    """Fewer nodes than partitions, every query answered, nothing new for ``grace`` s."""
    return len(pmap.online) < expected and not pmap.pending() and idle >= grace


def check_found(
    found: dict[int, int], expected: int, allow_missing: bool, asked: int, waited: str
) -> None:
    """Raise (or warn, with ``allow_missing``) if partitions ``0..expected-1`` are missing.

    Parameters
    ----------
    found : dict[int, int]
        {partition id: node id} of the nodes that answered.
    expected : int
        ``num-partitions`` (0 = unknown: nothing to check).
    allow_missing : bool
        Warn instead of raising (``allow-missing-nodes``).
    asked : int
        How many nodes were online when the wait ended (for the message).
    waited : str
        How the wait ended (``PartitionMap.waited``, for the message).
    """
    missing = sorted(set(range(expected)) - set(found))
    if not missing:
        return
    shown = ", ".join(map(str, missing[:10])) + (" ..." if len(missing) > 10 else "")
    if asked == 0 and not allow_missing:
        raise RuntimeError(
            f"no node connected to the SuperLink (waited until {waited}): start the "
            f"SuperNodes (num-supernodes={expected} in simulation) before or with the run"
        )
    text = (
        f"{len(found)} of num-partitions={expected} partitions answered the partition "
        f"query ({asked} nodes online; waited until {waited}); missing partition ids: {shown}"
    )
    if allow_missing:
        log.warning("%s; allow-missing-nodes=true: the run goes on without them", text)
        return
    raise RuntimeError(
        f"{text}. Start the missing SuperNodes (or num-supernodes={expected} in "
        "simulation), or set allow-missing-nodes=true to run without them"
    )
