"""Passes over the finished ONNX node list (with ``do_constant_folding``, as torch's):

    fuse_conv_bn          Conv -> BatchNormalization (eval) with constant weights and
                          statistics: one Conv with scaled weights and a shifted bias
    unused                nodes, initializers and Constant nodes no node (or subgraph)
                          reads
"""
from __future__ import annotations

import numpy as np


def _constants(nodes, initializers):
    from onnx import numpy_helper
    out = dict(initializers)
    for n in nodes:
        if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value":
            out[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
    return out


def _uses(nodes, outputs):
    count = {}
    for n in nodes:
        for name in _inputs(n):
            count[name] = count.get(name, 0) + 1
    for name in outputs:
        count[name] = count.get(name, 0) + 1
    return count


def _inputs(n):
    """Every name ``n`` reads, its subgraphs' outer-scope references included."""
    names = list(n.input)
    for a in n.attribute:
        graphs = list(a.graphs) + ([a.g] if a.HasField("g") else [])
        for sub in graphs:
            for m in sub.node:
                names.extend(_inputs(m))
    return names


def fuse_conv_bn(exporter, nodes, outputs):
    consts = _constants(nodes, exporter.initializers)
    uses = _uses(nodes, outputs)
    producer = {o: n for n in nodes for o in n.output}
    drop = set()
    for bn in nodes:
        if bn.op_type != "BatchNormalization" or len(bn.output) != 1:
            continue
        conv = producer.get(bn.input[0])
        if conv is None or conv.op_type != "Conv" or uses.get(bn.input[0]) != 1:
            continue
        if not all(i in consts for i in list(bn.input[1:5]) + list(conv.input[1:])):
            continue
        eps = next((a.f for a in bn.attribute if a.name == "epsilon"), 1e-5)
        scale, shift, mean, var = (consts[i].astype(np.float64) for i in bn.input[1:5])
        w = consts[conv.input[1]]
        b = consts[conv.input[2]].astype(np.float64) if len(conv.input) > 2 else 0.0
        factor = scale / np.sqrt(var + eps)
        new_w = (w * factor.reshape((-1,) + (1,) * (w.ndim - 1))).astype(w.dtype)
        new_b = ((b - mean) * factor + shift).astype(w.dtype)
        names = []
        for arr in (new_w, new_b):
            name = exporter.fresh("onnx::Conv")
            exporter.initializers[name] = arr
            names.append(name)
        del conv.input[1:]
        conv.input.extend(names)
        conv.output[0] = bn.output[0]
        drop.add(id(bn))
    return [n for n in nodes if id(n) not in drop]


def unused(exporter, nodes, outputs):
    """Drop nodes none of whose outputs is read (the unused ``ArgMax`` of
    ``x.max(dim).values``, as torch's dead-code pass before export), then initializers
    nothing reads; returns the nodes kept."""
    used = set(outputs)
    kept = []
    for n in reversed(nodes):
        if not n.output or any(o in used for o in n.output if o):
            kept.append(n)
            used.update(_inputs(n))
    kept.reverse()
    for name in list(exporter.initializers):
        if name not in used:
            del exporter.initializers[name]
    return kept
