"""DataLoader over a pipe on 2 real ranks: the pipes' shared seed comes from rank 0."""
import pytest

pytest.importorskip("mpi4py")
from distributed.workers import run_workers  # noqa: E402

BODY = """
from ember.utils.data import DataLoader
from ember.utils.data.datapipes.iter import IterableWrapper
ember.manual_seed(100 + RANK)        # each rank's generator differs
pipe = IterableWrapper(range(20)).shuffle().sharding_filter()
it = iter(DataLoader(pipe, batch_size=None))
first = [int(x) for x in it]
report([it._shared_seed, first])
"""


def test_shared_seed_is_rank0s_and_shards_partition():
    (seed0, got0), (seed1, got1) = [r[0] for r in run_workers(BODY, 2, timeout=120)]
    assert seed0 == seed1
    assert sorted(got0 + got1) == list(range(20))     # same shuffle, disjoint shards
    assert len(got0) == len(got1) == 10
