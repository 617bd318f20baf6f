"""ember.data.datapipes (torchdata's pipes of the 1.11 release) on files the test writes.

torchdata cannot be installed here, so expected values come from the documented examples
and from the standard library (csv, json, tarfile, zipfile, gzip/bz2/lzma, hashlib)."""
import bz2
import csv
import gzip
import hashlib
import io
import json
import lzma
import os
import pickle
import tarfile
import zipfile
from collections import Counter

import pytest

import ember
from ember.data.datapipes.iter import (CSVDictParser, CSVParser, Cycler, FileLister,
                                       FileOpener, HttpReader, IterableWrapper, JsonParser,
                                       LineReader, SampleMultiplexer)
from ember.data.datapipes.map import SequenceWrapper

CSV_TEXT = "key,item\na,1\nb,2\n\"c,d\",3\n"


@pytest.fixture
def files(tmp_path):
    (tmp_path / "1.csv").write_text(CSV_TEXT)
    (tmp_path / "2.csv").write_text("# comment\nkey,item\nz,9\n")
    (tmp_path / "a.json").write_text(json.dumps({"x": [1, 2], "y": 1.5}))
    (tmp_path / "lines.txt").write_text("Line1\nLine2\r\n\nLine3\n")
    return tmp_path


def _opened(root, mask, mode="r"):
    return FileOpener(FileLister(str(root), mask), mode=mode)


def _names(pairs):
    return [(os.path.basename(p), v) for p, v in pairs]


# ---------------------------------------------------------------- text
def test_line_reader_matches_documented_example():
    source = IterableWrapper([("file1", io.StringIO("Line1\nLine2")),
                              ("file2", io.StringIO("Line2,1\r\nLine2,2\r\nLine2,3"))])
    assert list(source.readlines()) == [("file1", "Line1"), ("file1", "Line2"),
                                        ("file2", "Line2,1"), ("file2", "Line2,2"),
                                        ("file2", "Line2,3")]


def test_line_reader_options(files):
    raw = list(_opened(files, "lines.txt", "b").readlines(skip_lines=1, strip_newline=False,
                                                          return_path=False))
    assert raw == [b"Line2\r\n", b"\n", b"Line3\n"]
    decoded = list(_opened(files, "lines.txt", "b").readlines(decode=True))
    assert _names(decoded) == [("lines.txt", s) for s in ["Line1", "Line2", "", "Line3"]]


def test_csv_parser_matches_csv_module(files):
    rows = list(_opened(files, "*.csv", "b").parse_csv())
    expected = list(csv.reader(io.StringIO(CSV_TEXT))) + \
        list(csv.reader(io.StringIO("# comment\nkey,item\nz,9\n")))
    assert rows == expected
    skipped = list(_opened(files, "2.csv").parse_csv(skip_lines=1, return_path=True,
                                                     as_tuple=True))
    assert _names(skipped) == [("2.csv", ("key", "item")), ("2.csv", ("z", "9"))]
    tabs = IterableWrapper([("t", io.StringIO("a\tb\n1\t2\n"))]).parse_csv(delimiter="\t")
    assert list(tabs) == [["a", "b"], ["1", "2"]]


def test_csv_dict_parser(files):
    rows = list(CSVDictParser(_opened(files, "1.csv", "b")))
    assert rows == list(csv.DictReader(io.StringIO(CSV_TEXT)))
    assert rows[2] == {"key": "c,d", "item": "3"}
    assert _names(_opened(files, "2.csv").parse_csv_as_dict(skip_lines=1, return_path=True)) \
        == [("2.csv", {"key": "z", "item": "9"})]


def test_json_parser(files):
    out = list(JsonParser(_opened(files, "*.json")))
    assert _names(out) == [("a.json", {"x": [1, 2], "y": 1.5})]
    assert list(IterableWrapper([("f", io.StringIO("1.5"))]).parse_json_files(
        parse_float=str)) == [("f", "1.5")]


def test_paragraph_aggregator_documented_example_and_blank_lines():
    source = IterableWrapper([("file1", "Line1"), ("file1", "Line2"), ("file2", "Line2,1"),
                              ("file2", "Line2,2"), ("file2", "Line2,3")])
    assert list(source.lines_to_paragraphs(joiner=" ".join)) == \
        [("file1", "Line1 Line2"), ("file2", "Line2,1 Line2,2 Line2,3")]
    blank = IterableWrapper([("f", "a"), ("f", "b"), ("f", "  "), ("f", "c"), ("g", "d")])
    assert list(blank.lines_to_paragraphs()) == [("f", "a\nb"), ("f", "c"), ("g", "d")]


def test_rows2columnar_documented_examples():
    dicts = IterableWrapper([[{"a": 1}, {"b": 2, "a": 1}],
                             [{"a": 1, "b": 200}, {"b": 2, "c": 3, "a": 100}]])
    assert [dict(d) for d in dicts.rows2columnar()] == \
        [{"a": [1, 1], "b": [2]}, {"a": [1, 100], "b": [200, 2], "c": [3]}]
    assert [dict(d) for d in dicts.rows2columnar(column_names=["a"])] == \
        [{"a": [1, 1]}, {"a": [1, 100]}]
    lists = IterableWrapper([[[0, 1, 2, 3], [4, 5, 6, 7]]])
    assert [dict(d) for d in lists.rows2columnar(["a", "b", "c", "d"])] == \
        [{"a": [0, 4], "b": [1, 5], "c": [2, 6], "d": [3, 7]}]


# ---------------------------------------------------------------- archives
@pytest.fixture
def archives(tmp_path):
    members = {"d/x.txt": b"ex", "y.bin": bytes(range(10))}
    with tarfile.open(tmp_path / "a.tar.gz", "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    with zipfile.ZipFile(tmp_path / "a.zip", "w") as zf:
        zf.writestr("sub/", b"")
        for name, data in members.items():
            zf.writestr(name, data)
    payload = b"compressed payload " * 50
    (tmp_path / "p.gz").write_bytes(gzip.compress(payload))
    (tmp_path / "p.bz2").write_bytes(bz2.compress(payload))
    (tmp_path / "p.xz").write_bytes(lzma.compress(payload))
    return tmp_path, members, payload


def test_tar_and_zip_loaders(archives):
    root, members, _ = archives
    tar = {os.path.relpath(p, str(root / "a.tar.gz")): s.read()
           for p, s in _opened(root, "*.tar.gz", "b").load_from_tar()}
    assert tar == members
    zipped = {os.path.relpath(p, str(root / "a.zip")): s.read()
              for p, s in _opened(root, "*.zip", "b").load_from_zip()}
    assert zipped == members        # the folder entry is skipped


def test_decompressor(archives):
    root, _, payload = archives
    out = [(os.path.basename(p), s.read()) for p, s in _opened(root, "p.*", "b").decompress()]
    assert out == [("p", payload)] * 3
    typed = _opened(root, "p.gz", "b").decompress(file_type="gzip")
    assert next(iter(typed))[1].read() == payload
    first = {os.path.basename(p): s.read() for p, s in
             _opened(root, "a.*", "b").decompress()}       # gzip layer only; zip -> its file
    assert first["a"] == b"ex" and first["a.tar"][:7] == b"d/x.txt"
    twice = _opened(root, "a.tar.gz", "b").decompress().decompress(file_type="tar")
    assert [(os.path.basename(p), s.read()) for p, s in twice] == [("a", b"ex")]
    with pytest.raises(RuntimeError, match="compression type"):
        list(IterableWrapper([("f.txt", io.BytesIO(b""))]).decompress())
    with pytest.raises(ValueError, match="Unknown compression type"):
        IterableWrapper([]).decompress(file_type="rar")


def test_tar_of_corrupt_stream_raises():
    with pytest.warns(UserWarning, match="Unable to extract files"):
        with pytest.raises(tarfile.ReadError):
            list(IterableWrapper([("bad.tar", io.BytesIO(b"not a tar"))]).load_from_tar())


# ---------------------------------------------------------------- caching
class Counted(ember.utils.data.IterDataPipe):
    def __init__(self, n):
        self.n, self.reads = n, 0

    def __iter__(self):
        for i in range(self.n):
            self.reads += 1
            yield i

    def __len__(self):
        return self.n


def test_in_memory_cache_replays_without_reading_source():
    source = Counted(5)
    cached = source.in_memory_cache()
    assert list(cached) == list(cached) == [0, 1, 2, 3, 4]
    assert source.reads == 5
    small = Counted(50)
    tiny = small.in_memory_cache(size=200 / 1024 / 1024)     # about 200 bytes: a few ints
    assert list(tiny) == list(range(50))
    assert list(tiny) == list(range(50))
    assert 50 < small.reads < 100        # only the evicted head is read again


def test_on_disk_cache_writes_then_skips(tmp_path):
    def path_of(name):
        return str(tmp_path / "cache" / (name + ".txt"))

    calls = []

    def produce(name):
        calls.append(name)
        return path_of(name), name.upper() * 2

    def build():
        return IterableWrapper(["a", "b"]).on_disk_cache(filepath_fn=path_of) \
            .map(produce).end_caching(mode="w")
    assert list(build()) == [path_of("a"), path_of("b")]
    assert open(path_of("b")).read() == "BB" and calls == ["a", "b"]
    assert list(build()) == [path_of("a"), path_of("b")] and calls == ["a", "b"]
    os.remove(path_of("a"))
    assert sorted(build()) == [path_of("a"), path_of("b")] and calls == ["a", "b", "a"]


def test_on_disk_cache_hash_check(tmp_path):
    target = str(tmp_path / "f.bin")
    good = hashlib.sha256(b"data").hexdigest()

    def fetch(_):
        return target, io.BytesIO(b"data")
    pipe = IterableWrapper(["u"]).on_disk_cache(filepath_fn=lambda _: target,
                                                hash_dict={target: good}).map(fetch)
    assert list(pipe.end_caching(mode="wb")) == [target]
    with open(target, "wb") as f:           # corrupted: refetched and rewritten
        f.write(b"junk")
    assert list(IterableWrapper(["u"]).on_disk_cache(
        filepath_fn=lambda _: target, hash_dict={target: good}).map(fetch).end_caching()) \
        == [target]
    assert open(target, "rb").read() == b"data"
    bad = IterableWrapper(["u"]).on_disk_cache(filepath_fn=lambda _: str(tmp_path / "g"),
                                               hash_dict={str(tmp_path / "g"): "0"})
    with pytest.raises(RuntimeError, match="does not match"):
        list(bad.map(lambda _: (str(tmp_path / "g"), b"x")).end_caching())
    with pytest.raises(RuntimeError, match="OnDiskCacheHolder"):
        IterableWrapper([1]).end_caching()
    with pytest.raises(ValueError, match="hash_type"):
        IterableWrapper([1]).on_disk_cache(hash_type="crc")


# ---------------------------------------------------------------- shaping
def test_cycler_header_enumerate_index():
    assert list(IterableWrapper(range(3)).cycle(2)) == [0, 1, 2, 0, 1, 2]
    assert len(Cycler(IterableWrapper(range(3)), 4)) == 12
    with pytest.raises(ValueError, match="non-negative count"):
        IterableWrapper([1]).cycle(-1)
    with pytest.raises(TypeError, match="cycles forever"):
        len(IterableWrapper([1]).cycle())
    assert list(IterableWrapper(range(3)).cycle().header(7)) == [0, 1, 2, 0, 1, 2, 0]
    assert len(IterableWrapper(range(3)).header(7)) == 3
    with pytest.warns(UserWarning, match="inferred to be equal to its limit"):
        assert len(IterableWrapper(range(3)).filter(bool).header(2)) == 2
    assert list(IterableWrapper("ab").enumerate(starting_index=5)) == [(5, "a"), (6, "b")]
    assert list(IterableWrapper([{"a": 1}, {"a": 2}]).add_index("i")) == \
        [{"a": 1, "i": 0}, {"a": 2, "i": 1}]
    with pytest.raises(RuntimeError, match="Dict"):
        list(IterableWrapper([1]).add_index())


def test_flatmap():
    assert list(IterableWrapper([[1, 2], [3]]).flatmap()) == [1, 2, 3]
    assert list(IterableWrapper(["ab", "c"]).flatmap(list)) == ["a", "b", "c"]
    assert list(IterableWrapper([(0, "xy")]).flatmap(list, input_col=1)) == ["x", "y"]


def test_bucketbatch_keeps_every_sample_and_sorts_buckets():
    ember.manual_seed(0)
    batches = list(IterableWrapper(range(10)).bucketbatch(batch_size=3, drop_last=True))
    assert [len(b) for b in batches] == [3, 3, 3]
    assert len(set(sum(batches, []))) == 9
    ember.manual_seed(0)
    data = [5, 1, 9, 3, 7, 2, 8, 6, 4, 0, 11, 10]
    sorted_batches = list(IterableWrapper(data).bucketbatch(
        batch_size=2, batch_num=3, bucket_num=2, sort_key=sorted))
    assert sorted(sum(sorted_batches, [])) == list(range(12))
    assert all(b[0] <= b[1] for b in sorted_batches)
    ember.manual_seed(0)
    again = list(IterableWrapper(data).bucketbatch(
        batch_size=2, batch_num=3, bucket_num=2, sort_key=sorted))
    assert again == sorted_batches        # seeded from ember's generator
    plain = list(IterableWrapper(data).bucketbatch(batch_size=4, batch_num=3,
                                                   sort_key=sorted,
                                                   use_in_batch_shuffle=False))
    assert sorted(map(tuple, plain)) == [(0, 1, 2, 3), (4, 5, 6, 7), (8, 9, 10, 11)]
    with pytest.raises(AssertionError, match="Batch size"):
        IterableWrapper([1]).bucketbatch(0)


def test_sample_multiplexer():
    a, b = IterableWrapper(["a"] * 300), IterableWrapper(["b"] * 100)
    out = list(SampleMultiplexer({a: 3, b: 1}, seed=0))
    assert Counter(out) == {"a": 300, "b": 100}
    head = Counter(out[:200])
    assert 120 < head["a"] < 180           # about 3 to 1 while both last
    assert list(SampleMultiplexer({a: 3, b: 1}, seed=0)) == out
    with pytest.raises(ValueError, match="positive and non-zero"):
        SampleMultiplexer({a: 0})
    with pytest.raises(ValueError, match="Empty dictionary"):
        SampleMultiplexer({})


def test_saver_and_map_to_iter(tmp_path):
    out = list(IterableWrapper([("x/1.txt", "one"), ("2.txt", "two")]).save_to_disk(
        filepath_fn=lambda p: str(tmp_path / p)))
    assert out == [str(tmp_path / "x/1.txt"), str(tmp_path / "2.txt")]
    assert open(out[0]).read() == "one"
    assert list(SequenceWrapper("abc").to_iter_datapipe()) == ["a", "b", "c"]


def test_http_reader_offline_error_and_file_urls(tmp_path):
    with pytest.raises(ConnectionError, match="Could not get the file at http://127.0.0.1:9"):
        list(HttpReader(IterableWrapper(["http://127.0.0.1:9/x"]), timeout=2))
    (tmp_path / "f.txt").write_text("local")
    url = (tmp_path / "f.txt").as_uri()
    assert [(u, s.read()) for u, s in IterableWrapper([url]).read_from_http()] == \
        [(url, b"local")]


def test_pipeline_pickles_and_runs_in_dataloader(files):
    pipe = FileLister(str(files), "*.csv").open_files(mode="b").parse_csv(skip_lines=1) \
        .filter(_has_two).sharding_filter().map(_first)
    clone = pickle.loads(pickle.dumps(pipe))
    assert list(clone) == list(pipe) == ["a", "b", "c,d", "key", "z"]
    loader = ember.utils.data.DataLoader(pipe, batch_size=None, num_workers=2)
    assert sorted(loader) == ["a", "b", "c,d", "key", "z"]


def _has_two(row):
    return len(row) == 2


def _first(row):
    return row[0]


def test_functional_names_registered():
    names = set(ember.utils.data.IterDataPipe.functions)
    assert {"readlines", "parse_csv", "parse_csv_as_dict", "parse_json_files",
            "load_from_tar", "load_from_zip", "decompress", "in_memory_cache",
            "on_disk_cache", "end_caching", "cycle", "header", "enumerate", "add_index",
            "bucketbatch", "flatmap", "lines_to_paragraphs", "rows2columnar", "save_to_disk",
            "read_from_http", "in_batch_shuffle"} <= names
    assert isinstance(LineReader(IterableWrapper([])), ember.utils.data.IterDataPipe)
    assert CSVParser is not None
