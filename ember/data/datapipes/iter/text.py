"""Text pipes: lines, CSV rows, JSON files, paragraphs, rows to columns.

Inputs are ``(path, stream)`` pairs as FileOpener makes them; ``skip_lines`` drops the
first lines of each file, ``decode`` turns bytes into text (``encoding``, ``errors``),
``return_path`` yields ``(path, item)`` instead of ``item``.
"""
import csv
import itertools
import json
from collections import defaultdict

from ember.utils.data.datapipes._decorator import functional_datapipe
from ember.utils.data.datapipes.datapipe import IterDataPipe

__all__ = ["CSVDictParserIterDataPipe", "CSVParserIterDataPipe", "JsonParserIterDataPipe",
           "LineReaderIterDataPipe", "ParagraphAggregatorIterDataPipe",
           "Rows2ColumnarIterDataPipe"]


class _TextReader:
    """The per-file steps the text readers share."""

    def __init__(self, skip_lines=0, strip_newline=True, decode=False, encoding="utf-8",
                 errors="ignore", return_path=False):
        self._skip = skip_lines
        self._strip = strip_newline
        self._decode = decode
        self._encoding = encoding
        self._errors = errors
        self._return_path = return_path

    def lines(self, stream):
        lines = itertools.islice(stream, self._skip, None) if self._skip else iter(stream)
        for line in lines:
            if self._decode and isinstance(line, bytes):
                line = line.decode(self._encoding, self._errors)
            if self._strip:
                line = line.rstrip(b"\r\n" if isinstance(line, bytes) else "\r\n")
            yield line

    def out(self, path, items):
        for item in items:
            yield (path, item) if self._return_path else item


@functional_datapipe("readlines")
class LineReaderIterDataPipe(IterDataPipe):
    """``(path, line)`` for each line of each stream (newline stripped by default)."""

    def __init__(self, source_datapipe, *, skip_lines=0, strip_newline=True, decode=False,
                 encoding="utf-8", errors="ignore", return_path=True):
        self.source_datapipe = source_datapipe
        self._helper = _TextReader(skip_lines, strip_newline, decode, encoding, errors,
                                   return_path)

    def __iter__(self):
        for path, stream in self.source_datapipe:
            yield from self._helper.out(path, self._helper.lines(stream))


@functional_datapipe("parse_csv")
class CSVParserIterDataPipe(IterDataPipe):
    """Each CSV row as a list (``as_tuple``: a tuple); ``fmtparams`` go to ``csv.reader``."""

    def __init__(self, source_datapipe, *, skip_lines=0, decode=True, encoding="utf-8",
                 errors="ignore", return_path=False, as_tuple=False, **fmtparams):
        self.source_datapipe = source_datapipe
        self._helper = _TextReader(skip_lines, False, decode, encoding, errors, return_path)
        self.as_tuple = as_tuple
        self.fmtparams = fmtparams

    def _rows(self, stream):
        rows = csv.reader(self._helper.lines(stream), **self.fmtparams)
        return (tuple(row) for row in rows) if self.as_tuple else rows

    def __iter__(self):
        for path, stream in self.source_datapipe:
            yield from self._helper.out(path, self._rows(stream))


@functional_datapipe("parse_csv_as_dict")
class CSVDictParserIterDataPipe(CSVParserIterDataPipe):
    """Each CSV row as a dict keyed by the file's first (unskipped) row."""

    def _rows(self, stream):
        return csv.DictReader(self._helper.lines(stream), **self.fmtparams)


@functional_datapipe("parse_json_files")
class JsonParserIterDataPipe(IterDataPipe):
    """``(path, json.loads(stream.read(), **kwargs))`` for each stream."""

    def __init__(self, source_datapipe, **kwargs):
        self.source_datapipe = source_datapipe
        self.kwargs = kwargs

    def __iter__(self):
        for file_name, stream in self.source_datapipe:
            data = stream.read()
            stream.close()
            yield file_name, json.loads(data, **self.kwargs)

    def __len__(self):
        return len(self.source_datapipe)


def _default_line_join(lines):
    return "\n".join(lines)


@functional_datapipe("lines_to_paragraphs")
class ParagraphAggregatorIterDataPipe(IterDataPipe):
    """``(path, paragraph)``: consecutive non-blank lines of one file joined by
    ``joiner``; a blank line or a new file ends a paragraph."""

    def __init__(self, source_datapipe, joiner=_default_line_join):
        self.source_datapipe = source_datapipe
        self.joiner = joiner

    def __iter__(self):
        buffer, prev = [], None
        for file_name, line in self.source_datapipe:
            if file_name != prev and buffer:
                yield prev, self.joiner(buffer)
                buffer = []
            if line.strip():
                buffer.append(line)
            elif buffer:
                yield file_name, self.joiner(buffer)
                buffer = []
            prev = file_name
        if buffer:
            yield prev, self.joiner(buffer)


@functional_datapipe("rows2columnar")
class Rows2ColumnarIterDataPipe(IterDataPipe):
    """Each batch of rows (dicts or lists) as ``{column: [values]}`` (a defaultdict).

    Dict rows: keys in order of appearance (only ``column_names`` when given), a missing
    key is skipped. List rows: named by ``column_names``, else by position.
    """

    def __init__(self, source_datapipe, column_names=None):
        self.source_datapipe = source_datapipe
        self.column_names = [] if column_names is None else column_names

    def __iter__(self):
        for batch in self.source_datapipe:
            columnar = defaultdict(list)
            for row in batch:
                if isinstance(row, dict):
                    keys = self.column_names or row.keys()
                    for key in keys:
                        if key in row:
                            columnar[key].append(row[key])
                else:
                    names = self.column_names or range(len(row))
                    for name, value in zip(names, row):
                        columnar[name].append(value)
            yield columnar

    def __len__(self):
        return len(self.source_datapipe)
