"""``Join``: a context manager for training with uneven inputs across ranks.

Each iteration, every rank that still has inputs calls ``Join.notify_join_context`` (an
all-reduce of 1) before its collectives. A rank that ran out of inputs leaves the ``with``
body and loops in ``__exit__``: it all-reduces 0 to learn how many ranks are still active
and, while some are, runs its joinables' ``main_hook`` (which shadows the collectives the
active ranks run in one iteration). When every rank has joined, each runs ``post_hook``
with ``is_last_joiner`` (true for the ranks that joined in the final round).
"""
from __future__ import annotations

from abc import ABC, abstractmethod

__all__ = ["JoinHook", "Joinable", "Join"]


class JoinHook:
    """What a joinable does once its rank has joined: ``main_hook()`` once per iteration in
    which some rank is still active, ``post_hook(is_last_joiner)`` once all have joined."""

    def main_hook(self) -> None:
        pass

    def post_hook(self, is_last_joiner: bool) -> None:
        pass


class _JoinConfig:
    __slots__ = ("enable", "throw_on_early_termination", "is_first_joinable")

    def __init__(self, enable, throw_on_early_termination, is_first_joinable):
        self.enable = enable
        self.throw_on_early_termination = throw_on_early_termination
        self.is_first_joinable = is_first_joinable

    @staticmethod
    def construct_disabled_join_config():
        return _JoinConfig(False, False, False)


class Joinable(ABC):
    """A class whose instances take part in ``Join``: ``join_hook(**kwargs)`` gives its
    JoinHook, ``join_device`` and ``join_process_group`` where the join all-reduces run."""

    @abstractmethod
    def __init__(self):
        super().__init__()
        self._join_config = _JoinConfig.construct_disabled_join_config()

    @abstractmethod
    def join_hook(self, **kwargs) -> JoinHook:
        ...

    @property
    @abstractmethod
    def join_device(self):
        ...

    @property
    @abstractmethod
    def join_process_group(self):
        ...


class Join:
    """``with Join([ddp_model, optimizer, ...]):`` — ranks may run different numbers of
    iterations; ``throw_on_early_termination`` instead raises on every rank as soon as one
    rank runs out of inputs. Extra keyword arguments go to every ``join_hook``."""

    def __init__(self, joinables, enable=True, throw_on_early_termination=False, **kwargs):
        if len(joinables) == 0:
            raise ValueError("The join context manager requires at least one joinable")
        self._joinables = list(joinables)
        self._join_hooks = [j.join_hook(**kwargs) for j in self._joinables]
        self._enable = enable
        self._throw_on_early_termination = throw_on_early_termination
        self._set_joinable_configs()
        self._extract_dist_info()

    def _set_joinable_configs(self):
        for i, joinable in enumerate(self._joinables):
            joinable._join_config = _JoinConfig(self._enable,
                                                self._throw_on_early_termination, i == 0)

    def _extract_dist_info(self):
        """All joinables must share one process group; the device is the first's."""
        groups = {id(j.join_process_group) for j in self._joinables}
        if len(groups) > 1:
            raise ValueError("Using join context manager with multiple process groups")
        self._process_group = self._joinables[0].join_process_group
        import ember.distributed as dist
        self._rank = dist.get_rank(self._process_group)
        self._device = self._joinables[0].join_device

    def __enter__(self):
        return None

    def __exit__(self, exc_type, exc_value, traceback):
        if not self._enable or exc_type is not None:
            return False                     # an error in the body propagates
        all_joined = False
        is_last_joiner = True
        while not all_joined:
            if self._get_num_nonjoined_procs() == 0:
                all_joined = True
            else:
                if self._throw_on_early_termination:
                    self._notify_procs_to_terminate()
                for hook in self._join_hooks:
                    hook.main_hook()
                is_last_joiner = False
        for hook in self._join_hooks:
            hook.post_hook(is_last_joiner)
        return False

    def _get_num_nonjoined_procs(self):
        import ember
        import ember.distributed as dist
        count = ember.zeros(1)
        dist.all_reduce(count, group=self._process_group)
        return int(count.item())

    def _notify_procs_to_terminate(self):
        import ember
        import ember.distributed as dist
        ones = ember.ones(1)
        dist.all_reduce(ones, group=self._process_group)
        raise RuntimeError(f"Rank {self._rank} exhausted all inputs.")

    @staticmethod
    def notify_join_context(joinable):
        """Called by an active joinable each iteration before its collectives: the first
        joinable all-reduces 1 (matched by joined ranks' 0) and gets that Work back; with
        ``throw_on_early_termination`` it also learns whether a rank ran out of inputs."""
        if not isinstance(joinable, Joinable):
            raise AssertionError(f"Check that the {type(joinable)} subclasses Joinable")
        config = joinable._join_config
        if not config.is_first_joinable or not config.enable:
            return None
        import ember
        import ember.distributed as dist
        group = joinable.join_process_group
        work = dist.all_reduce(ember.ones(1), group=group, async_op=True)
        if config.throw_on_early_termination:
            flag = ember.zeros(1)
            dist.all_reduce(flag, group=group)
            if flag.item():
                raise RuntimeError("Detected at least one rank that exhausted inputs. "
                                   "Throwing across all ranks.")
        return work


def _register_ddp():
    from ember.nn.parallel.distributed import DistributedDataParallel
    Joinable.register(DistributedDataParallel)


_register_ddp()
