"""Runs under ``torchrun``: every rank runs pytest; ranks agree on timed regions; rank 0 reports.

The ranks talk through the key-value store of the default process group (the one ``torchrun``'s
env:// rendezvous sets up), not through collectives: a store wait can watch for a failure posted
by another rank and give up after a bounded time, where a barrier or all-reduce would hang until
the backend's own timeout (30 minutes by default) and then say nothing about who failed.

    timed round on every rank:  agree("start") -> start timer -> calls -> stop timer -> t_rank
                                 round time = max over ranks of t_rank  (the slowest rank sets the pace)
    throughput:                  items per call x world size / round time

Every rank sees the same round times, so warm-up, calibration and verdicts decide identically
and every rank makes the same number of calls: no rank is left waiting in a collective.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any, final

from pytest_accel.engine.devices.base import RegionTimer

__all__ = ["Coordinator", "DistributedTimer", "RankFailure", "World", "world_from_environment"]

# How often a waiting rank polls the store; small next to any round (>= 20 ms).
_POLL_SECONDS = 0.002
_BACKENDS = {"cpu": "gloo", "cuda": "nccl", "hpu": "hccl"}


class RankFailure(Exception):
    """Another rank failed, died or hung: the message names it."""


@final
@dataclass(frozen=True)
class World:
    """This process's place in the job, from torchrun's environment variables."""

    rank: int
    world_size: int
    local_rank: int
    local_world_size: int

    def placement(self, cpu_threads: int | None, cores: int) -> tuple[int, int]:
        """(torch threads on the CPU, device index) of this rank: one accelerator per local rank; ranks on
        the CPU share the host's ``cores``, half of them split evenly, unless the run set ``cpu_threads``."""
        return cpu_threads or max(1, cores // 2 // self.local_world_size), self.local_rank


def world_from_environment() -> World | None:
    """The job this process belongs to, or None when it runs alone (WORLD_SIZE unset or 1)."""
    size = int(os.environ.get("WORLD_SIZE", "1"))
    if size <= 1:
        return None
    return World(
        int(os.environ["RANK"]),
        size,
        int(os.environ.get("LOCAL_RANK", "0")),
        int(os.environ.get("LOCAL_WORLD_SIZE", "1")),
    )


@final
class Coordinator:
    """Agreement between ranks through the process group's store, with failures and a deadline."""

    def __init__(self, world: World, store: Any, timeout_seconds: float) -> None:
        self.world = world
        self._store = store
        self._timeout = timeout_seconds
        self._sequence: dict[str, int] = {}

    @classmethod
    def start(cls, world: World, device_kind: str, timeout_seconds: float) -> Coordinator:
        """Join (or reuse) the default process group: gloo on CPU, nccl on CUDA, hccl on Gaudi."""
        import datetime

        import torch.distributed as dist

        if not dist.is_initialized():
            if device_kind == "hpu":
                import habana_frameworks.torch.distributed.hccl  # noqa: F401  (registers the hccl backend)
            dist.init_process_group(_BACKENDS[device_kind], timeout=datetime.timedelta(seconds=timeout_seconds))
        # The default group's store: set up by the env:// rendezvous, shared by every rank.
        store = dist.distributed_c10d._get_default_store()
        return cls(world, store, timeout_seconds)

    def _key(self, scope: str, what: str) -> str:
        count = self._sequence.get(f"{scope}/{what}", 0)
        self._sequence[f"{scope}/{what}"] = count + 1
        return f"accel/{scope}/{what}/{count}"

    def post_failure(self, scope: str, message: str) -> None:
        """Tell every rank that this one failed in ``scope`` (a test id)."""
        self._store.set(f"accel/{scope}/failed", f"rank {self.world.rank}: {message}")

    def _failure(self, scope: str) -> str | None:
        key = f"accel/{scope}/failed"
        if self._store.check([key]):
            return bytes(self._store.get(key)).decode()
        return None

    def exchange(self, scope: str, what: str, value: str) -> list[str]:
        """Post ``value``, wait for every rank's, return them by rank; raises RankFailure on failure or timeout."""
        key = self._key(scope, what)
        self._store.set(f"{key}/{self.world.rank}", value)
        keys = [f"{key}/{rank}" for rank in range(self.world.world_size)]
        deadline = time.monotonic() + self._timeout
        while not self._store.check(keys):
            failure = self._failure(scope)
            if failure is not None:
                raise RankFailure(f"{scope}: {failure}")
            if time.monotonic() > deadline:
                missing = [rank for rank, k in enumerate(keys) if not self._store.check([k])]
                raise RankFailure(
                    f"{scope}: rank(s) {missing} did not reach '{what}' within {self._timeout:.0f} s "
                    "(killed, hung, or running other tests)"
                )
            time.sleep(_POLL_SECONDS)
        return [bytes(self._store.get(k)).decode() for k in keys]


@final
class DistributedTimer:
    """A region timer whose regions start together on all ranks and last as long as the slowest rank's."""

    __slots__ = ("_coordinator", "_inner", "_metric", "_test")

    def __init__(self, inner: RegionTimer, coordinator: Coordinator, test: str, metric: str) -> None:
        self._inner = inner
        self._coordinator = coordinator
        self._test = test  # failures are posted per test: a failure anywhere in it ends the wait
        self._metric = metric

    def start(self) -> None:
        """Wait for every rank, then start this rank's clock."""
        self._coordinator.exchange(self._test, f"{self._metric}:start", "")
        self._inner.start()

    def stop(self) -> float:
        """This rank's time, then the maximum over ranks (identical on every rank)."""
        mine = self._inner.stop()
        times = self._coordinator.exchange(self._test, f"{self._metric}:stop", repr(mine))
        return max(float(value) for value in times)
