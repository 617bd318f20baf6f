"""ember.utils.data (torch.utils.data): datasets, samplers, DataLoader."""
from ember.utils.data.dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset,
                                      StackDataset, Subset, TensorDataset, random_split)
from ember.utils.data.sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler,
                                      SubsetRandomSampler, WeightedRandomSampler)
from ember.utils.data.distributed import DistributedSampler
from ember.utils.data._utils.collate import default_collate, default_convert
from ember.utils.data._utils.worker import get_worker_info
from ember.utils.data.dataloader import DataLoader, _DatasetKind
from ember.utils.data.datapipes._decorator import (argument_validation, functional_datapipe,
                                                   guaranteed_datapipes_determinism,
                                                   non_deterministic, runtime_validation,
                                                   runtime_validation_disabled)
from ember.utils.data.datapipes.datapipe import (DataChunk, DFIterDataPipe, IterDataPipe,
                                                 MapDataPipe)

__all__ = ["BatchSampler", "ChainDataset", "ConcatDataset", "DataChunk", "DataLoader",
           "Dataset", "DFIterDataPipe", "DistributedSampler", "IterDataPipe", "IterableDataset",
           "MapDataPipe", "argument_validation", "runtime_validation",
           "runtime_validation_disabled",
           "RandomSampler", "Sampler", "SequentialSampler", "StackDataset", "Subset",
           "SubsetRandomSampler", "TensorDataset", "WeightedRandomSampler", "default_collate",
           "default_convert", "functional_datapipe", "get_worker_info",
           "guaranteed_datapipes_determinism", "non_deterministic", "random_split"]
