"""The ``c10d`` and ``static`` rendezvous: rounds on a TCPStore the agents share.

Keys live under ``/torchelastic/rdzv/<run_id>/``. Round ``r`` (prefix ``r<r>/``):
each agent ``add``s ``joined`` (its arrival number); the round closes when ``max_nodes``
joined, or ``last_call_timeout`` s after ``min_nodes`` joined: the first closer writes the
node count to ``closed``. Arrival ``i <= count`` gets group rank ``i - 1`` (``static``: its
``--node-rank``). A later arrival asks for a new round (``next = "join"``); an agent whose
workers failed writes ``next = "failure"``; agents watching ``next`` every monitor interval
stop their workers and join round ``r + 1``. ``round`` counts the rounds opened, so a new
agent starts at the newest. ``closed`` at the top level ends the job for every agent.

Group rank 0 serves the workers' store (``MASTER_ADDR:MASTER_PORT``): c10d on a free port
per round, static on ``--master-port`` (the agents' store itself).
"""
from __future__ import annotations

import socket
import time

from ember.distributed.elastic.rendezvous.api import (
    RendezvousClosedError, RendezvousHandler, RendezvousInfo, RendezvousParameters,
    RendezvousStoreInfo, RendezvousTimeoutError)
from ember.distributed.elastic.utils.distributed import (
    create_c10d_store, get_free_port, host_or_join_store, parse_rendezvous_endpoint)

__all__ = ["StoreRendezvousHandler", "create_c10d_handler", "create_static_handler"]

_POLL_S = 0.05


class StoreRendezvousHandler(RendezvousHandler):
    """Round-based rendezvous of ``min_nodes..max_nodes`` agents on ``store``."""

    def __init__(self, backend, store, run_id, min_nodes, max_nodes, is_store_host,
                 node_rank=None, master=None, local_addr=None, join_timeout=600.0,
                 last_call_timeout=30.0):
        self._backend = backend
        self._store = store
        self._run_id = run_id
        self._min_nodes, self._max_nodes = min_nodes, max_nodes
        self.is_store_host = is_store_host
        self._node_rank = node_rank          # static: fixed group rank
        self._master = master                # static: (addr, port) of the workers' store
        self._local_addr = local_addr
        self._join_timeout = join_timeout
        self._last_call_timeout = last_call_timeout
        self._prefix = f"/torchelastic/rdzv/{run_id}"
        self._round = None
        self._worker_store = None            # c10d group rank 0: the workers' store server
        self.round_world_size = 0

    # ---- keys --------------------------------------------------------------------------
    def _key(self, name, rnd=None):
        return f"{self._prefix}/{name}" if rnd is None else f"{self._prefix}/r{rnd}/{name}"

    def _has(self, key):
        return self._store.check([key])

    def _int(self, key):
        return int(self._store.add(key, 0))

    # ---- API ---------------------------------------------------------------------------
    def get_backend(self) -> str:
        return self._backend

    @property
    def use_agent_store(self) -> bool:
        return True

    def get_run_id(self) -> str:
        return self._run_id

    @property
    def round(self):
        return self._round

    def next_rendezvous(self) -> RendezvousInfo:
        deadline = time.monotonic() + self._join_timeout
        rnd = self._int(self._key("round"))
        if self._round is not None:
            rnd = max(rnd, self._round + 1)
        while True:
            self._raise_if_closed()
            arrival = int(self._store.add(self._key("joined", rnd), 1))
            count = self._wait_closed(rnd, deadline)
            if arrival <= count:
                break
            if count < self._max_nodes:              # room for us: ask for a new round
                self.request_next_round("join", rnd)
            else:
                self._wait_next(rnd, deadline)
            rnd += 1
        self._round = rnd
        self.round_world_size = count
        rank = arrival - 1 if self._node_rank is None else self._node_rank
        return RendezvousInfo(self._store, rank, count, self._bootstrap(rnd, rank))

    def _wait_closed(self, rnd, deadline):
        """Block until round ``rnd`` is closed; returns its node count."""
        closed_key, joined_key = self._key("closed", rnd), self._key("joined", rnd)
        min_seen = None
        while not self._has(closed_key):
            joined = self._int(joined_key)
            now = time.monotonic()
            if joined >= self._min_nodes and min_seen is None:
                min_seen = now
            full = joined >= self._max_nodes
            last_call_over = (min_seen is not None and self._min_nodes < self._max_nodes
                              and now - min_seen >= self._last_call_timeout)
            if (full or last_call_over) and \
                    int(self._store.add(self._key("close_votes", rnd), 1)) == 1:
                count = min(self._int(joined_key), self._max_nodes)
                self._store.set(closed_key, str(count))
                break
            if now > deadline:
                raise RendezvousTimeoutError(
                    f"The rendezvous '{self._run_id}' did not complete in "
                    f"{self._join_timeout} s: {joined} of min {self._min_nodes} nodes joined.")
            self._raise_if_closed()
            time.sleep(_POLL_S)
        while True:                        # the closer sets ``closed`` right after its vote
            if self._has(closed_key):
                return int(self._store.get(closed_key))
            time.sleep(_POLL_S)

    def _wait_next(self, rnd, deadline):
        while not self._has(self._key("next", rnd)):
            self._raise_if_closed()
            if time.monotonic() > deadline:
                raise RendezvousTimeoutError(
                    f"The rendezvous '{self._run_id}' is full ({self._max_nodes} nodes); "
                    f"no new round began in {self._join_timeout} s.")
            time.sleep(_POLL_S)

    def _bootstrap(self, rnd, rank) -> RendezvousStoreInfo:
        if self._master is not None:                 # static: the agents' store
            return RendezvousStoreInfo(*self._master)
        key = self._key("master", rnd)
        if rank == 0:
            addr = self._local_addr or socket.getfqdn()
            port = get_free_port()
            self._worker_store = create_c10d_store(addr, port, True)
            self._store.set(key, f"{addr}:{port}")
        addr, _, port = self._store.get(key).decode().rpartition(":")
        return RendezvousStoreInfo(addr, int(port))

    def request_next_round(self, reason: str, rnd=None) -> None:
        """Ask every agent of round ``rnd`` (default: ours) to re-rendezvous."""
        rnd = self._round if rnd is None else rnd
        if int(self._store.add(self._key("next_votes", rnd), 1)) == 1:
            self._store.set(self._key("next", rnd), reason)
            self._store.add(self._key("round"), 1)

    def next_round_reason(self):
        """``"join"``/``"failure"`` once another agent asked for a new round, else None."""
        key = self._key("next", self._round)
        return self._store.get(key).decode() if self._has(key) else None

    def num_nodes_waiting(self) -> int:
        return int(self.next_round_reason() == "join")

    def _raise_if_closed(self):
        if self.is_closed():
            raise RendezvousClosedError(f"The rendezvous '{self._run_id}' is closed.")

    def is_closed(self) -> bool:
        return self._has(self._key("closed"))

    def set_closed(self) -> None:
        self._store.set(self._key("closed"), "1")
        if self.is_store_host:        # let the others read ``closed`` before the store goes
            deadline = time.monotonic() + 5
            while self._int(self._key("closed_acks")) < self.round_world_size - 1 and \
                    time.monotonic() < deadline:
                time.sleep(_POLL_S)

    def ack_closed(self) -> None:
        """Tell the store's host that this agent saw ``closed``."""
        self._store.add(self._key("closed_acks"), 1)

    def exit_barrier(self, timeout: float) -> None:
        """Wait (up to ``timeout`` s) until every node of our round finished; the store's
        host must outlive the others."""
        key = self._key("finished", self._round)
        self._store.add(key, 1)
        deadline = time.monotonic() + timeout
        try:
            while self._int(key) < self.round_world_size and time.monotonic() < deadline:
                if self.is_closed():
                    return
                time.sleep(_POLL_S)
        except Exception:  # noqa: BLE001 - the host left: it saw every node finish
            if self.is_store_host:
                raise

    def shutdown(self) -> bool:
        self._worker_store = None
        return True


def _timeouts(params):
    return dict(join_timeout=params.get_as_int("join_timeout",
                                               params.get_as_int("timeout", 600)),
                last_call_timeout=params.get_as_int("last_call_timeout", 30))


def create_c10d_handler(params: RendezvousParameters) -> StoreRendezvousHandler:
    """c10d: the agent that can bind ``--rdzv-endpoint`` serves the store there."""
    host, port = parse_rendezvous_endpoint(params.endpoint, default_port=29400)
    timeout = params.get_as_int("read_timeout", 60)
    if params.get_as_bool("is_host") is False:
        store, is_host = create_c10d_store(host, port, False, timeout), False
    else:
        store, is_host = host_or_join_store(host, port, timeout)
    return StoreRendezvousHandler("c10d", store, params.run_id, params.min_nodes,
                                  params.max_nodes, is_host, local_addr=params.local_addr,
                                  **_timeouts(params))


def create_static_handler(params: RendezvousParameters) -> StoreRendezvousHandler:
    """static: ``nnodes`` fixed, group rank = ``rank`` (``--node-rank``); node rank 0
    serves the store at ``--master-addr:--master-port``, also the workers' store."""
    if params.min_nodes != params.max_nodes:
        raise ValueError("static rendezvous needs a fixed node count (min_nodes == "
                         f"max_nodes), got {params.min_nodes}:{params.max_nodes}")
    rank = params.get_as_int("rank")
    if rank is None:
        raise ValueError("rank is absent in RendezvousParameters. Try add --node-rank to "
                         "the cmd request")
    host, port = parse_rendezvous_endpoint(params.endpoint, default_port=29500)
    timeout = params.get_as_int("timeout", 600)
    store = create_c10d_store(host, port, rank == 0, timeout)
    return StoreRendezvousHandler("static", store, params.run_id, params.min_nodes,
                                  params.max_nodes, rank == 0, node_rank=rank,
                                  master=(host, port), join_timeout=timeout)
