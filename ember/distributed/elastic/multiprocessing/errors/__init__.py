"""Worker failures as torchelastic reports them.

``record`` wraps a worker's entry point: an uncaught exception is written as JSON to the file
named by ``TORCHELASTIC_ERROR_FILE`` (``{"message": {"message": "ValueError: ...",
"extraInfo": {"py_callstack": traceback, "timestamp": "<unix seconds>"}}}``) and re-raised.
The agent collects failed workers as ``ProcessFailure`` rows and raises ``ChildFailedError``,
whose message is torchrun's failure report (root cause first observed, then the others).
"""
from __future__ import annotations

import functools
import json
import logging
import os
import signal
import socket
import time
import traceback
from dataclasses import dataclass, field

__all__ = ["ChildFailedError", "ErrorHandler", "ProcessFailure", "get_error_handler",
           "record"]

log = logging.getLogger("ember.distributed.elastic")

_NOT_AVAILABLE = "<N/A>"
_TRACEBACK_HINT = "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"


@dataclass
class ProcessFailure:
    """One failed worker: its local rank, pid, exit code (negative: killed by that signal)
    and error file; the file's message and timestamp are read if the worker wrote it."""
    local_rank: int
    pid: int
    exitcode: int
    error_file: str
    error_file_data: dict = field(init=False)
    message: str = field(init=False)
    timestamp: float = field(init=False)

    def __post_init__(self):
        self.error_file_data = {}
        self.message = ""
        self.timestamp = time.time()
        if self.error_file and os.path.isfile(self.error_file):
            try:
                with open(self.error_file) as f:
                    self.error_file_data = json.load(f)
                msg = self.error_file_data.get("message", {})
                if isinstance(msg, dict):
                    extra = msg.get("extraInfo", {})
                    self.message = extra.get("py_callstack") or msg.get("message", "")
                    self.timestamp = float(extra.get("timestamp", self.timestamp))
                else:
                    self.message = str(msg)
            except (OSError, ValueError):
                self.message = f"(unreadable error file {self.error_file})"
        else:
            self.error_file = _NOT_AVAILABLE
            if self.exitcode < 0:
                self.message = (f"Signal {-self.exitcode} ({self.signal_name()}) received by "
                                f"PID {self.pid}")
            else:
                self.message = _TRACEBACK_HINT

    def signal_name(self) -> str:
        if self.exitcode < 0:
            try:
                return signal.Signals(-self.exitcode).name
            except ValueError:
                return _NOT_AVAILABLE
        return _NOT_AVAILABLE

    def timestamp_isoformat(self) -> str:
        return time.strftime("%Y-%m-%d_%H:%M:%S", time.localtime(self.timestamp))


class ChildFailedError(Exception):
    """Raised by the launcher when workers failed; ``failures`` maps global rank ->
    ``ProcessFailure``. ``str(e)`` is torchrun's report."""

    def __init__(self, name: str, failures: dict):
        if not failures:
            raise AssertionError("ChildFailedError needs at least one failure")
        self.name = name
        self.failures = failures
        super().__init__(self.format_msg())

    def get_first_failure(self):
        rank = min(self.failures, key=lambda r: self.failures[r].timestamp)
        return rank, self.failures[rank]

    def format_msg(self, boarder_delim="=", section_delim="-"):
        root_rank, root = self.get_first_failure()
        root_rows = self._format_failure(0, root_rank, root)
        other_rows = []
        for idx, (rank, failure) in enumerate(
                [(r, f) for r, f in self.failures.items() if r != root_rank], start=1):
            other_rows.extend(self._format_failure(idx, rank, failure))
        if not other_rows:
            other_rows = ["  <NO_OTHER_FAILURES>"]
        width = min(60, max(len(line) for line in
                            root_rows + other_rows + [f"{self.name} FAILED"]))
        border, section = boarder_delim * width, section_delim * width
        return "\n".join(["", border, f"{self.name} FAILED", section, "Failures:",
                          *other_rows, section, "Root Cause (first observed failure):",
                          *root_rows, border])

    @staticmethod
    def _format_failure(idx, rank, failure):
        sig = f" ({failure.signal_name()})" if failure.exitcode < 0 else ""
        tb = failure.message.split("\n")
        rows = [f"[{idx}]:",
                f"  time      : {failure.timestamp_isoformat()}",
                f"  host      : {socket.getfqdn()}",
                f"  rank      : {rank} (local_rank: {failure.local_rank})",
                f"  exitcode  : {failure.exitcode} (pid: {failure.pid}) {sig}",
                f"  error_file: {failure.error_file}",
                f"  traceback : {tb[0]}"]
        rows.extend("  " + line for line in tb[1:])
        return rows


class ErrorHandler:
    """Writes the error file of this process (``TORCHELASTIC_ERROR_FILE``)."""

    def _get_error_file_path(self):
        return os.environ.get("TORCHELASTIC_ERROR_FILE")

    def initialize(self) -> None:
        pass

    def _write_error_file(self, path, data):
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w") as f:
            json.dump(data, f)

    def record_exception(self, e: BaseException) -> None:
        path = self._get_error_file_path()
        if not path:
            return
        if os.path.isfile(path):
            log.warning("error file %s already exists and will be overwritten", path)
        data = {"message": {"message": f"{type(e).__name__}: {e}", "extraInfo": {
            "py_callstack": traceback.format_exc(), "timestamp": str(int(time.time()))}}}
        self._write_error_file(path, data)

    def override_error_code_in_rootcause_data(self, rootcause_error_file, rootcause_error,
                                              error_code=0):
        msg = rootcause_error.get("message")
        if isinstance(msg, dict) and "errorCode" not in msg:
            msg["errorCode"] = error_code

    def dump_error_file(self, rootcause_error_file: str, error_code: int = 0) -> None:
        """Copy a child's error file to this process's error file (if it has one)."""
        with open(rootcause_error_file) as f:
            data = json.load(f)
        if error_code:
            self.override_error_code_in_rootcause_data(rootcause_error_file, data, error_code)
        path = self._get_error_file_path()
        if path:
            self._write_error_file(path, data)
        else:
            log.error("no error file defined for parent, to copy child error file (%s)",
                      rootcause_error_file)


def get_error_handler() -> ErrorHandler:
    return ErrorHandler()


def record(fn=None, error_handler: ErrorHandler | None = None):
    """Decorator: on an uncaught exception write the error file, then re-raise.
    ``SystemExit(0)`` returns ``None``; a ``ChildFailedError`` copies the root cause's file."""
    def wrap(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            handler = error_handler or get_error_handler()
            handler.initialize()
            try:
                return f(*args, **kwargs)
            except SystemExit as se:
                if se.code in (0, None):
                    return None
                raise
            except ChildFailedError as e:
                _, failure = e.get_first_failure()
                if failure.error_file != _NOT_AVAILABLE:
                    handler.dump_error_file(failure.error_file, failure.exitcode)
                raise
            except Exception as e:
                handler.record_exception(e)
                raise
        return wrapper

    return wrap(fn) if fn is not None else wrap
