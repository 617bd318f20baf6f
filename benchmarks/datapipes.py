"""A DataPipe pipeline reading and parsing CSV files: ember's pipes beside torch's.

Writes 8 CSV files of 2,000 rows (an id, a label and 16 float features) to a temporary
folder, then times FileLister -> FileOpener -> parse_csv -> map(row to tensors) ->
batch(64) -> collate over all of them, alternating ember and torch
(``bench_interleaved``), and prints rows per second and the ember/torch time ratio. A
second line does the same pipeline inside a DataLoader with 2 workers (sharded).

    python benchmarks/datapipes.py
"""
from __future__ import annotations

import os
import random
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ember  # noqa: E402
import ember.data.datapipes  # noqa: E402,F401 - registers parse_csv
from common import bench_interleaved, fmt_time, machine  # noqa: E402

try:
    import torch
except ImportError:                     # the comparison is optional
    torch = None

FILES, ROWS, FEATURES, BATCH = 8, 2000, 16, 64


def write_csvs(folder):
    rng = random.Random(0)
    for f in range(FILES):
        with open(os.path.join(folder, f"part{f}.csv"), "w") as out:
            out.write("id,label," + ",".join(f"f{i}" for i in range(FEATURES)) + "\n")
            for r in range(ROWS):
                feats = ",".join(f"{rng.gauss(0, 1):.5f}" for _ in range(FEATURES))
                out.write(f"{f * ROWS + r},{rng.randrange(10)},{feats}\n")


class _Row:
    """row (list of str) -> (features, label) tensors of library ``lib``."""

    def __init__(self, lib):
        self.lib = lib

    def __call__(self, row):
        return (self.lib.tensor([float(x) for x in row[2:]]), int(row[1]))


def ember_pipeline(folder):
    from ember.data.datapipes.iter import FileLister
    return FileLister(folder, "*.csv").open_files(mode="b").parse_csv(skip_lines=1) \
        .map(_Row(ember)).batch(BATCH).collate()


class _CSVRows(torch.utils.data.IterDataPipe if torch else object):
    """torch core has no parse_csv: csv.reader over each stream, as TorchData's does."""

    def __init__(self, source):
        self.source = source

    def __iter__(self):
        import csv
        import io
        for _, stream in self.source:
            text = io.TextIOWrapper(stream, encoding="utf-8")
            rows = csv.reader(text)
            next(rows)
            yield from rows


def torch_pipeline(folder):
    from torch.utils.data.datapipes.iter import FileLister
    return _CSVRows(FileLister(folder, "*.csv").open_files(mode="b")) \
        .map(_Row(torch)).batch(BATCH).collate()


def consume(pipe):
    n = 0
    for features, labels in pipe:
        n += labels.shape[0]
    assert n == FILES * ROWS, n
    return n


def loader(lib, pipe):
    return lib.utils.data.DataLoader(pipe.sharding_filter(), batch_size=None, num_workers=2)


def main():
    print(machine())
    print(f"{FILES} CSV files x {ROWS} rows x {FEATURES + 2} columns, batch {BATCH}")
    with tempfile.TemporaryDirectory() as folder:
        write_csvs(folder)
        cases = {"ember": lambda: consume(ember_pipeline(folder))}
        if torch is not None:
            cases["torch"] = lambda: consume(torch_pipeline(folder))
        times = bench_interleaved(cases, min_time=2.0, repeat=3, warmup=1)
        _report("pipeline, main process", times)
        cases = {"ember": lambda: consume(loader(ember, ember_pipeline(folder)))}
        if torch is not None:
            cases["torch"] = lambda: consume(loader(torch, torch_pipeline(folder)))
        times = bench_interleaved(cases, min_time=2.0, repeat=3, warmup=1)
        _report("DataLoader, 2 workers", times)


def _report(title, times):
    rows = FILES * ROWS
    line = "  ".join(f"{name} {fmt_time(t)} ({rows / t / 1e3:7.1f} k rows/s)"
                     for name, t in times.items())
    ratio = f"  ember/torch = {times['ember'] / times['torch']:.2f}" if "torch" in times else ""
    print(f"{title:26s} {line}{ratio}")


if __name__ == "__main__":
    main()
