"""Fetchers turn one entry of the index sampler into one (collated) batch."""


class _Fetcher:
    """What both fetchers hold: the dataset and how its samples become a batch."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        vars(self).update(dataset=dataset, auto_collation=auto_collation,
                          collate_fn=collate_fn, drop_last=drop_last)


class _MapDatasetFetcher(_Fetcher):
    """Indexes a map-style dataset: one index, or a list of them when auto-collating."""

    def fetch(self, index):
        ds = self.dataset
        if not self.auto_collation:
            return self.collate_fn(ds[index])
        getitems = getattr(ds, "__getitems__", None)
        return self.collate_fn(getitems(index) if callable(getitems) else [ds[i] for i in index])


class _IterableDatasetFetcher(_Fetcher):
    """Pulls from an iterable dataset; the index only says how many samples to take."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        _Fetcher.__init__(self, dataset, auto_collation, collate_fn, drop_last)
        self.dataset_iter, self.ended = iter(dataset), False

    def fetch(self, index):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.dataset_iter))
        # take up to len(index) samples; running dry ends the stream after this batch
        samples = [sample for _, sample in zip(index, self.dataset_iter)]
        self.ended = len(samples) < len(index)
        if not samples or (self.ended and self.drop_last):
            raise StopIteration
        return self.collate_fn(samples)


class _DatasetKind:
    """Map-style or iterable dataset; picks the matching fetcher."""
    Map, Iterable = 0, 1

    @staticmethod
    def create_fetcher(kind, dataset, auto_collation, collate_fn, drop_last):
        fetcher = _MapDatasetFetcher if kind == _DatasetKind.Map else _IterableDatasetFetcher
        return fetcher(dataset, auto_collation, collate_fn, drop_last)
