#!/usr/bin/env python
"""Parity report: ember against PyTorch's own op database (``op_db``).

Runs ``tests/parity/torch_opdb.py`` over every OpInfo, prints one line per op ember
implements and the counts per namespace (torch.*/Tensor, nn.functional, linalg, fft,
special, other), and writes ``docs/PARITY.md``.

    .venv/bin/python scripts/parity_report.py                 # all ops, 2 processes
    .venv/bin/python scripts/parity_report.py -j 1 --ops 'div*,sum'
    .venv/bin/python scripts/parity_report.py --update-known-failures
    .venv/bin/python scripts/parity_report.py --no-write --json /tmp/parity.json
    .venv/bin/python scripts/parity_report.py --strict        # every sample and dtype
    .venv/bin/python scripts/parity_report.py --strict --results /tmp/parity.json
"""
from __future__ import annotations

import argparse
import datetime
import fnmatch
import json
import multiprocessing as mp
import os
import re
import sys
import time
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
if ROOT not in sys.path:
    sys.path.append(ROOT)            # ember itself, when it is not installed

from parity import torch_opdb as H  # noqa: E402

DOC = os.path.join(ROOT, "docs", "PARITY.md")
KNOWN = os.path.join(ROOT, "tests", "parity", "known_failures.py")
ORDER = list(H.NAMESPACES)


def _check(oid):
    op = _BY_ID[oid]
    try:
        return H.check_op(op).as_dict()
    except Exception as e:           # a harness bug: report it rather than stop the run
        r = H.OpResult(oid, op.name, H.namespace(op.name), status="fail",
                       reason=f"harness error: {type(e).__name__}: {e}")
        return r.as_dict()


_BY_ID = {}


def short_reason(reason, width=160):
    """One line: the mismatch without the sample, plus the sample's dtype."""
    main, dt = reason, ""
    m = re.search(r" \[(\w+) sample \(", reason)
    if m:
        main, dt = reason[:m.start()], m.group(1)
    s = f"{main} ({dt})" if dt else main
    return s if len(s) <= width else s[:width - 3] + "..."


def run(ids, jobs, progress=None):
    results = []
    t0 = time.time()
    if progress is None:
        progress = sys.stderr.isatty()
    if jobs > 1 and len(ids) > 1:
        ctx = mp.get_context("fork")
        with ctx.Pool(jobs) as pool:
            for i, r in enumerate(pool.imap_unordered(_check, ids, chunksize=1)):
                results.append(r)
                if progress:
                    print(f"\r  {i + 1}/{len(ids)} ops checked", end="", file=sys.stderr)
    else:
        for i, oid in enumerate(ids):
            results.append(_check(oid))
            if progress:
                print(f"\r  {i + 1}/{len(ids)} ops checked", end="", file=sys.stderr)
    print(f"{len(ids)} ops checked in {time.time() - t0:.0f}s", file=sys.stderr)
    order = {oid: i for i, oid in enumerate(ids)}
    results.sort(key=lambda r: order[r["id"]])
    return results


def counts(results, all_ids_by_ns):
    rows = {}
    for ns in ORDER + ["total"]:
        rs = [r for r in results if ns == "total" or r["namespace"] == ns]
        impl = [r for r in rs if r["status"] != "missing"]
        fwd_run = [r for r in impl if r["forward"] is not None]
        grad_run = [r for r in impl if r["grad"] is not None]
        total = sum(len(v) for v in all_ids_by_ns.values()) if ns == "total" \
            else len(all_ids_by_ns.get(ns, ()))
        rows[ns] = dict(
            total=total, implemented=len(impl),
            passing=sum(r["status"] == "pass" for r in impl),
            failing=sum(r["status"] == "fail" for r in impl),
            fwd_pass=sum(r["forward"] == "pass" for r in fwd_run), fwd_run=len(fwd_run),
            grad_pass=sum(r["grad"] == "pass" for r in grad_run), grad_run=len(grad_run))
    return rows


def pct(a, b):
    return f"{100 * a / b:.0f}%" if b else "-"


def count_lines(rows, md=False):
    head = ["namespace", "ops in op_db", "implemented", "pass", "fail",
            "forward pass", "grad pass"]
    lines = []
    if md:
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---|" * len(head))
    else:
        lines.append(f"{head[0]:15s} {head[1]:>12s} {head[2]:>12s} {head[3]:>5s} {head[4]:>5s} "
                     f"{head[5]:>14s} {head[6]:>14s}")
    for ns, r in rows.items():
        if not r["total"]:
            continue
        fwd = f"{pct(r['fwd_pass'], r['fwd_run'])} ({r['fwd_pass']}/{r['fwd_run']})"
        grad = f"{pct(r['grad_pass'], r['grad_run'])} ({r['grad_pass']}/{r['grad_run']})"
        name = "torch / Tensor" if ns == "torch" else ns
        if md:
            name = f"**{name}**" if ns == "total" else name
            lines.append(f"| {name} | {r['total']} | {r['implemented']} | {r['passing']} | "
                         f"{r['failing']} | {fwd} | {grad} |")
        else:
            lines.append(f"{name:15s} {r['total']:12d} {r['implemented']:12d} {r['passing']:5d} "
                         f"{r['failing']:5d} {fwd:>14s} {grad:>14s}")
    return lines


def load_results(path):
    """Results saved by ``--json`` (a list) or streamed one JSON object per line."""
    with open(path) as f:
        text = f.read()
    if text.lstrip().startswith("["):
        return json.loads(text)
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def load_known(strict_too=False):
    """KNOWN_FAILURES (and, with ``strict_too``, KNOWN_STRICT_FAILURES after them)."""
    both = load_known_both()
    return {**both[0], **both[1]} if strict_too else both[0]


def load_known_both():
    try:
        ns = {}
        with open(KNOWN) as f:
            exec(compile(f.read(), KNOWN, "exec"), ns)
        return dict(ns.get("KNOWN_FAILURES", {})), dict(ns.get("KNOWN_STRICT_FAILURES", {}))
    except FileNotFoundError:
        return {}, {}


def write_doc(results, rows, known, meta):
    impl = [r for r in results if r["status"] != "missing"]
    failing = [r for r in impl if r["status"] == "fail"]
    passing = [r for r in impl if r["status"] == "pass"]
    other = [r for r in impl if r["status"] not in ("pass", "fail")]
    missing = defaultdict(list)
    for r in results:
        if r["status"] == "missing":
            missing[r["namespace"]].append(r["id"])
    out = [
        "# Parity with PyTorch's op database",
        "",
        "<!-- generated by scripts/parity_report.py; do not edit by hand -->",
        "",
        f"Generated {meta['date']} against torch {meta['torch']} (ember {meta['ember']}), "
        f"{meta['seconds']:.0f}s on {meta['jobs']} process(es).",
        "",
        "Every OpInfo of `torch.testing._internal.common_methods_invocations.op_db` (which "
        "includes the linalg, fft, special, masked and signal definitions) whose name "
        "resolves in ember is run through torch and ember (`tests/parity/torch_opdb.py`):",
        "",
        "- names: `torch.x` -> `ember.x`, `nn.functional.x` -> `ember.nn.functional.x`, "
        "`linalg.x` / `fft.x` / `special.x` likewise, method-only ops -> `ember.Tensor.x`; "
        "OpInfos whose `op` is a lambda from torch's test suite run that lambda with `torch` "
        "bound to ember; variants are `name.variant_test_name`;",
        (f"- samples: every `sample_inputs` of every dtype `op.dtypes` lists ({meta['run']} "
         f"run: {', '.join(H.ALL_DTYPES)}; complex32 tensors go between torch and ember as "
         f"complex64 values and are compared at complex32's tolerance), up to "
         f"{H.STRICT_OP_TIME_BUDGET:.0f}s per op; "
         if meta["run"] == "strict" else
         f"- samples: the first {H.MAX_SAMPLES} `sample_inputs` per dtype, for float32, "
         "float64, int64, bool, complex64, complex128 where `op.dtypes` has them; ") +
        "tensors are copied keeping their strides (and aliasing), dtypes / `Size` / devices "
        "mapped;",
        "- forward: ember's result must have torch's structure, dtype and shape, and values "
        "within torch.testing's tolerances for the dtype (widened by the op's own "
        "`toleranceOverride`s); a float32/complex64 result that misses torch's but matches "
        "torch's float64 computation passes (ember may be more accurate); index outputs of "
        "`sort`/`topk`/`mode`... may pick a different one of tied elements; the Tensor "
        "method variant, the aliases and the in-place variant ember defines must agree too;",
        "- grad: for differentiable ops, on the float64 samples, `autograd.grad(outputs, "
        "inputs, grad_outputs=<fixed random cotangents>)` must match torch's (10x the "
        "forward tolerance), with torch's `gradcheck_wrapper` and `output_process_fn_grad` "
        "applied on both sides;",
        "- random and uninitialized ops (`randn`, `bernoulli`, `empty`, dropout...) compare "
        "structure, dtype and shape only;",
        "- an op **passes** when all its samples do; ember raising anything is a failure "
        "(`NotImplementedError` reads \"not implemented: ...\").",
        "",
        "Run: `.venv/bin/python scripts/parity_report.py --strict` (regenerates this file; "
        "`--update-known-failures` refreshes `tests/parity/known_failures.py`; without "
        "`--strict`, the quick run: the first 8 samples of six dtypes) and "
        "`.venv/bin/python -m pytest -q tests/parity -p no:cacheprovider` (one test per "
        "implemented op, the quick run; `EMBER_PARITY_STRICT=1` makes it the strict one; "
        "the ops listed in `tests/parity/known_failures.py` are strict xfails).",
        "",
        "## Counts",
        "",
        "*forward pass* = ops whose forward samples all agree / implemented ops with samples; "
        "*grad pass* = ops whose gradients all agree / ops with gradients checked.",
        "",
        *count_lines(rows, md=True),
        "",
        f"## Failing ops ({len(failing)})",
        "",
    ]
    if failing:
        out += ["| op | stage | known failure (one-line reason) | first mismatch |",
                "|---|---|---|---|"]
        for r in failing:
            stages = [s for s in ("forward", "grad") if r[s] == "fail"] or ["forward"]
            stage = " + ".join(stages)
            reason = r["reason"]
            if r["forward"] == "fail" and r["grad"] == "fail":
                reason = f"{r['forward_reason']}; grad: {r['grad_reason']}"
            reason = reason.replace("|", "\\|").replace("\n", " ")
            if len(reason) > 500:
                reason = reason[:497] + "..."
            note = known.get(r["id"], "**not listed**").replace("|", "\\|")
            out.append(f"| `{r['id']}` | {stage} | {note} | {reason} |")
    else:
        out.append("None.")
    out += ["", f"## Passing ops ({len(passing)})", "",
            ", ".join(f"`{r['id']}`" for r in passing) or "None.", ""]
    if other:
        out += [f"## Implemented, no sample ran ({len(other)})", "",
                ", ".join(f"`{r['id']}`" for r in other), ""]
    out += [f"## Missing from ember ({sum(len(v) for v in missing.values())})", ""]
    for ns in ORDER:
        if missing.get(ns):
            out.append(f"**{ns}** ({len(missing[ns])}): " +
                       ", ".join(f"`{i}`" for i in missing[ns]))
            out.append("")
    kept = _hand_written_sections()
    with open(DOC, "w") as f:
        f.write("\n".join(out).rstrip() + "\n" + ("\n" + kept if kept else ""))


GENERATED = ("Counts", "Failing ops", "Passing ops", "Implemented, no sample ran",
             "Missing from ember")


def _hand_written_sections():
    """The sections of the current docs/PARITY.md the generator does not write (from the
    first ``## `` heading that is not one of ``GENERATED`` to the end): kept as they are."""
    try:
        with open(DOC) as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return ""
    for i, line in enumerate(lines):
        if line.startswith("## ") and not line[3:].startswith(GENERATED):
            return "\n".join(lines[i:]).rstrip() + "\n"
    return ""


def update_known(results, strict):
    """Rewrite known_failures.py: keep hand-written reasons of ops still failing, add new
    failures with a generated reason, drop ops that pass (or are no longer implemented).
    A quick run rewrites KNOWN_FAILURES and keeps KNOWN_STRICT_FAILURES (less what moved);
    a strict run keeps the KNOWN_FAILURES entries still failing and puts every other
    failure in KNOWN_STRICT_FAILURES. Entries of ops that did not run (``--results`` from a
    partial run) are kept."""
    quick_known, strict_known = load_known_both()
    failing = {r["id"]: r for r in results if r["status"] == "fail"}

    def reason(oid, *tables):
        return next((t[oid] for t in tables if oid in t), None) or \
            short_reason(failing[oid]["reason"])
    ran = {r["id"] for r in results if r["status"] != "missing"}
    if strict:
        quick = {k: v for k, v in quick_known.items() if k in failing or k not in ran}
        extra = {k: reason(k, strict_known) for k in failing if k not in quick}
        extra.update({k: v for k, v in strict_known.items() if k not in ran and k not in quick})
    else:
        quick = {k: reason(k, quick_known, strict_known) for k in failing}
        quick.update({k: v for k, v in quick_known.items() if k not in ran})
        extra = {k: v for k, v in strict_known.items() if k not in quick}
    body = ["\"\"\"Ops of torch's op database that ember implements but that do not yet match "
            "torch.", "",
            "op id (``name`` or ``name.variant_test_name``) -> one-line reason. Listed ops run as",
            "``xfail(strict=True)``: once one passes, the test fails (XPASS) until it is removed "
            "here.",
            "KNOWN_FAILURES fail the quick run (and the strict one); KNOWN_STRICT_FAILURES only",
            "the strict run (every sample and dtype: ``EMBER_PARITY_STRICT=1``).",
            "Refresh with ``.venv/bin/python scripts/parity_report.py [--strict] "
            "--update-known-failures``",
            "(keeps existing reasons of ops that still fail; drops ops that pass).",
            "\"\"\"", "", "KNOWN_FAILURES: dict[str, str] = {"]
    body += [f"    {k!r}: {v!r}," for k, v in quick.items()]
    body += ["}", "", "KNOWN_STRICT_FAILURES: dict[str, str] = {"]
    body += [f"    {k!r}: {v!r}," for k, v in extra.items()]
    body.append("}")
    with open(KNOWN, "w") as f:
        f.write("\n".join(body) + "\n")
    return {**quick, **extra} if strict else quick


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-j", "--jobs", type=int, default=min(2, os.cpu_count() or 1))
    p.add_argument("--ops", help="comma-separated op ids or globs (default: all)")
    p.add_argument("--no-write", action="store_true", help="don't write docs/PARITY.md")
    p.add_argument("--update-known-failures", action="store_true",
                   help="rewrite tests/parity/known_failures.py from this run")
    p.add_argument("--json", help="also dump the per-op results as JSON here")
    p.add_argument("--full-reasons", action="store_true", help="don't shorten reasons")
    p.add_argument("--show-missing", action="store_true", help="list missing ops too")
    p.add_argument("--results", help="build the report from results saved by --json (a JSON "
                   "list, or one JSON object per line) instead of running the ops")
    p.add_argument("--strict", action="store_true",
                   help="every sample of every dtype the OpInfos list (see torch_opdb.STRICT)")
    a = p.parse_args(argv)
    if a.strict:
        H.STRICT = True                 # the forked workers inherit it

    import torch
    import ember
    ops = H.all_ops()
    _BY_ID.update({H.op_id(o): o for o in ops})
    ids = list(_BY_ID)
    if a.ops:
        pats = [s.strip() for s in a.ops.split(",") if s.strip()]
        ids = [i for i in ids if any(fnmatch.fnmatchcase(i, pt) for pt in pats)]
    by_ns = defaultdict(list)
    for i in ids:
        by_ns[H.namespace(_BY_ID[i].name)].append(i)
    # missing ops are decided here, cheaply; only implemented ones go to the workers
    todo = [i for i in ids if H.resolve(_BY_ID[i]) is not None]
    t0 = time.time()
    if a.results:
        checked = {r["id"]: r for r in load_results(a.results) if r["id"] in set(todo)}
        secs = sum(r.get("secs", 0.0) for r in checked.values()) / max(a.jobs, 1)
    else:
        checked = {r["id"]: r for r in run(todo, a.jobs)}
        secs = time.time() - t0
    results = []
    for i in ids:
        if i in checked:
            results.append(checked[i])
        else:
            op = _BY_ID[i]
            results.append(H.OpResult(i, op.name, H.namespace(op.name), status="missing",
                                      reason="not in ember").as_dict())
    known = load_known(strict_too=H.STRICT)

    # ---- table
    w = max([len(r["id"]) for r in results if r["status"] != "missing"] + [10])
    print(f"{'op':{w}s} {'namespace':13s} {'status':9s} {'fwd':5s} {'grad':5s} reason")
    for r in results:
        if r["status"] == "missing" and not a.show_missing:
            continue
        reason = r["reason"] if a.full_reasons else short_reason(r["reason"], 110)
        if r["status"] == "fail" and r["id"] in known:
            reason = "[known] " + reason
        print(f"{r['id']:{w}s} {r['namespace']:13s} {r['status']:9s} {str(r['forward'] or '-'):5s} "
              f"{str(r['grad'] or '-'):5s} {reason if r['status'] != 'pass' else ''}")
    rows = counts(results, by_ns)
    print()
    print("\n".join(count_lines(rows)))
    fails = {r["id"] for r in results if r["status"] == "fail"}
    new_fails = sorted(fails - set(known))
    ran = {r["id"] for r in results}
    fixed = sorted(k for k in known if k in ran and k not in fails)
    if new_fails:
        print(f"\nfailing, not in known_failures.py ({len(new_fails)}): {', '.join(new_fails)}")
    if fixed:
        print(f"\nin known_failures.py but not failing now ({len(fixed)}): {', '.join(fixed)}")

    if a.update_known_failures and not a.ops:
        known = update_known(results, H.STRICT)
        print(f"\nwrote {os.path.relpath(KNOWN, ROOT)} ({len(known)} entries)")
    if not a.no_write and not a.ops:
        meta = dict(date=datetime.date.today().isoformat(), torch=torch.__version__,
                    ember=getattr(ember, "__version__", "?"), seconds=secs, jobs=a.jobs,
                    run="strict" if H.STRICT else "quick")
        write_doc(results, rows, known, meta)
        print(f"wrote {os.path.relpath(DOC, ROOT)}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
