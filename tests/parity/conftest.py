"""Prints the parity pass counts per namespace at the end of a run of tests/parity.

(Under pytest-xdist the controller only loads this file when ``tests/parity`` is named on
the command line; ``scripts/parity_report.py`` prints the same counts in any case.)
"""
from __future__ import annotations

from collections import defaultdict

_MARK = "test_torch_opdb.py::test_op["
_results: dict[str, dict] = {}


def pytest_runtest_logreport(report):
    if _MARK not in report.nodeid:
        return
    if report.when == "call" or (report.when == "setup" and report.skipped):
        props = dict(report.user_properties)
        if report.passed:
            outcome = "pass"
        elif hasattr(report, "wasxfail"):
            outcome = "xfail" if report.skipped else "xpass"
        elif report.skipped:
            outcome = "skip"
        else:
            outcome = "xpass" if "XPASS(strict)" in str(report.longrepr) else "fail"
        _results[report.nodeid] = dict(outcome=outcome, ns=props.get("parity_namespace", "?"),
                                       fwd=props.get("parity_forward"),
                                       grad=props.get("parity_grad"))


def pytest_terminal_summary(terminalreporter):
    if not _results:
        return
    rows = defaultdict(lambda: defaultdict(int))
    for r in _results.values():
        for ns in (r["ns"], "total"):
            row = rows[ns]
            row["ops"] += 1
            row[r["outcome"]] += 1
            row["fwd_pass"] += r["fwd"] == "pass"
            row["fwd_run"] += r["fwd"] is not None
            row["grad_pass"] += r["grad"] == "pass"
            row["grad_run"] += r["grad"] is not None
    tr = terminalreporter
    tr.write_sep("=", "parity with torch's op database")
    tr.write_line(f"{'namespace':15s} {'ops':>5s} {'pass':>5s} {'xfail':>6s} {'fail':>5s} "
                  f"{'xpass':>6s} {'skip':>5s} {'fwd pass':>9s} {'grad pass':>10s}")
    order = ["torch", "nn.functional", "linalg", "fft", "special", "other", "?", "total"]
    for ns in sorted(rows, key=lambda n: order.index(n) if n in order else 99):
        r = rows[ns]
        fwd = f"{100 * r['fwd_pass'] / r['fwd_run']:.0f}%" if r["fwd_run"] else "-"
        grad = f"{100 * r['grad_pass'] / r['grad_run']:.0f}%" if r["grad_run"] else "-"
        tr.write_line(f"{ns:15s} {r['ops']:5d} {r['pass']:5d} {r['xfail']:6d} {r['fail']:5d} "
                      f"{r['xpass']:6d} {r['skip']:5d} {fwd:>9s} {grad:>10s}")
