package ember;

import java.util.function.DoubleBinaryOperator;

/**
 * The operator table: elementwise and shape operators here, the convolution, pooling,
 * normalization and matrix kernels in {@link Kernels}. An operator not listed raises
 * {@link UnsupportedOperationException} naming it.
 */
final class Ops {
    private Ops() {}

    static final String SUPPORTED = "Add, AveragePool, BatchNormalization, Clip, Concat, Constant, "
            + "Conv, Div, Dropout, Flatten, Gather, Gemm, GlobalAveragePool, Identity, MatMul, "
            + "MaxPool, Mul, Pad (constant), Relu, Reshape, Shape, Squeeze, Sub, Unsqueeze";

    static Tensor[] run(Model.Node n, Tensor[] in) {
        if (!n.domain.isEmpty() && !n.domain.equals("ai.onnx")) throw unsupported(n);
        switch (n.opType) {
            case "Identity": case "Dropout": return one(in[0]);
            case "Constant": return one(constant(n));
            case "Relu": return one(relu(in[0]));
            case "Clip": return one(clip(n, in));
            case "Add": return one(binary(in[0], in[1], (a, b) -> a + b));
            case "Sub": return one(binary(in[0], in[1], (a, b) -> a - b));
            case "Mul": return one(binary(in[0], in[1], (a, b) -> a * b));
            case "Div": return one(binary(in[0], in[1], (a, b) -> a / b));
            case "Flatten": return one(flatten(n, in[0]));
            case "Reshape": return one(reshape(in[0], in[1]));
            case "Shape": return one(shape(n, in[0]));
            case "Gather": return one(gather(n, in[0], in[1]));
            case "Unsqueeze": return one(unsqueeze(n, in));
            case "Squeeze": return one(squeeze(n, in));
            case "Concat": return one(concat(n, in));
            case "Pad": return one(pad(n, in));
            case "Conv": return one(Kernels.conv(n, in[0], in[1], arg(in, 2)));
            case "BatchNormalization": return one(Kernels.batchNorm(n, in));
            case "MaxPool": return one(Kernels.pool(n, in[0], true));
            case "AveragePool": return one(Kernels.pool(n, in[0], false));
            case "GlobalAveragePool": return one(Kernels.globalAveragePool(in[0]));
            case "Gemm": return one(Kernels.gemm(n, in[0], in[1], arg(in, 2)));
            case "MatMul": return one(Kernels.matmul(in[0], in[1]));
            default: throw unsupported(n);
        }
    }

    static UnsupportedOperationException unsupported(Model.Node n) {
        String op = n.domain.isEmpty() ? n.opType : n.domain + "::" + n.opType;
        return new UnsupportedOperationException("ONNX operator '" + op + "' (node '" + n.name
                + "') is not supported by the ember Java runtime; supported: " + SUPPORTED);
    }

    private static Tensor[] one(Tensor t) {
        return new Tensor[] {t};
    }

    /** The k-th input, or null when absent or omitted. */
    static Tensor arg(Tensor[] in, int k) {
        return k < in.length ? in[k] : null;
    }

    private static Tensor constant(Model.Node n) {
        Model.Attr a;
        if ((a = n.attrs.get("value")) != null) return a.t;
        if ((a = n.attrs.get("value_float")) != null) return new Tensor(new int[0], new float[] {a.f});
        if ((a = n.attrs.get("value_int")) != null) return new Tensor(new int[0], new long[] {a.i});
        if ((a = n.attrs.get("value_floats")) != null) {
            return new Tensor(new int[] {a.floats.length}, a.floats);
        }
        if ((a = n.attrs.get("value_ints")) != null) return new Tensor(new int[] {a.ints.length}, a.ints);
        throw new UnsupportedOperationException("Constant node '" + n.name
                + "': no supported value attribute");
    }

    private static Tensor relu(Tensor x) {
        float[] out = new float[x.size()];
        float[] v = x.floats();
        for (int i = 0; i < out.length; i++) out[i] = v[i] > 0 ? v[i] : 0f;
        return new Tensor(x.shape, out);
    }

    /** Clip: bounds from inputs 1 and 2 (opset 11+) or the min/max attributes (opset 6). */
    private static Tensor clip(Model.Node n, Tensor[] in) {
        float lo = n.attrFloat("min", Float.NEGATIVE_INFINITY);
        float hi = n.attrFloat("max", Float.POSITIVE_INFINITY);
        if (arg(in, 1) != null) lo = in[1].floats()[0];
        if (arg(in, 2) != null) hi = in[2].floats()[0];
        float[] v = in[0].floats();
        float[] out = new float[v.length];
        for (int i = 0; i < v.length; i++) out[i] = Math.min(Math.max(v[i], lo), hi);
        return new Tensor(in[0].shape, out);
    }

    /** Elementwise binary op with NumPy broadcasting; int64 when both inputs are int64. */
    static Tensor binary(Tensor a, Tensor b, DoubleBinaryOperator op) {
        int rank = Math.max(a.rank(), b.rank());
        int[] shape = new int[rank];
        for (int d = 0; d < rank; d++) {
            int da = dim(a, d - rank + a.rank()), db = dim(b, d - rank + b.rank());
            if (da != db && da != 1 && db != 1) {
                throw new IllegalArgumentException("cannot broadcast " + a + " with " + b);
            }
            shape[d] = da == 1 ? db : da;
        }
        int[] sa = broadcastStrides(a.shape, rank, shape), sb = broadcastStrides(b.shape, rank, shape);
        int n = Tensor.numel(shape);
        int[] idx = new int[rank];
        boolean ints = a.isInt() && b.isInt();
        float[] fa = ints ? null : a.floats(), fb = ints ? null : b.floats();
        float[] fo = ints ? null : new float[n];
        long[] lo = ints ? new long[n] : null;
        int ia = 0, ib = 0;
        for (int i = 0; i < n; i++) {
            if (ints) lo[i] = (long) op.applyAsDouble(a.l[ia], b.l[ib]);
            else fo[i] = (float) op.applyAsDouble(fa[ia], fb[ib]);
            for (int d = rank - 1; d >= 0; d--) {  // advance the multi-index
                ia += sa[d];
                ib += sb[d];
                if (++idx[d] < shape[d]) break;
                ia -= sa[d] * shape[d];
                ib -= sb[d] * shape[d];
                idx[d] = 0;
            }
        }
        return ints ? new Tensor(shape, lo) : new Tensor(shape, fo);
    }

    private static int dim(Tensor t, int d) {
        return d < 0 ? 1 : t.shape[d];
    }

    /** Strides of {@code shape} right-aligned into {@code rank} dims, 0 along broadcast dims. */
    private static int[] broadcastStrides(int[] shape, int rank, int[] out) {
        int[] strides = new int[rank];
        int stride = 1;
        for (int d = rank - 1, s = shape.length - 1; s >= 0; d--, s--) {
            strides[d] = shape[s] == 1 && out[d] != 1 ? 0 : stride;
            stride *= shape[s];
        }
        return strides;
    }

    private static Tensor flatten(Model.Node n, Tensor x) {
        int axis = normAxis((int) n.attrInt("axis", 1), x.rank() + 1);
        return x.reshape(new int[] {Tensor.prod(x.shape, 0, axis), Tensor.prod(x.shape, axis, x.rank())});
    }

    /** Reshape: 0 copies the input dim, -1 is inferred. */
    private static Tensor reshape(Tensor x, Tensor shapeT) {
        long[] spec = shapeT.longs();
        int[] shape = new int[spec.length];
        int known = 1, infer = -1;
        for (int d = 0; d < spec.length; d++) {
            if (spec[d] == -1) { infer = d; continue; }
            shape[d] = spec[d] == 0 ? x.shape[d] : (int) spec[d];
            known *= shape[d];
        }
        if (infer >= 0) shape[infer] = x.size() / known;
        return x.reshape(shape);
    }

    private static Tensor shape(Model.Node n, Tensor x) {
        int r = x.rank();
        int start = (int) n.attrInt("start", 0), end = (int) n.attrInt("end", r);
        start = Math.max(0, Math.min(r, start < 0 ? start + r : start));
        end = Math.max(start, Math.min(r, end < 0 ? end + r : end));
        long[] out = new long[end - start];
        for (int d = start; d < end; d++) out[d - start] = x.shape[d];
        return new Tensor(new int[] {out.length}, out);
    }

    /** Gather along an axis: out shape = x.shape[:axis] + idx.shape + x.shape[axis+1:]. */
    private static Tensor gather(Model.Node n, Tensor x, Tensor indices) {
        int axis = normAxis((int) n.attrInt("axis", 0), x.rank());
        long[] idx = indices.longs();
        int outer = Tensor.prod(x.shape, 0, axis), inner = Tensor.prod(x.shape, axis + 1, x.rank());
        int dimSize = x.shape[axis];
        int[] shape = new int[x.rank() - 1 + indices.rank()];
        System.arraycopy(x.shape, 0, shape, 0, axis);
        System.arraycopy(indices.shape, 0, shape, axis, indices.rank());
        System.arraycopy(x.shape, axis + 1, shape, axis + indices.rank(), x.rank() - axis - 1);
        Tensor out = x.like(shape);
        for (int o = 0; o < outer; o++) {
            for (int k = 0; k < idx.length; k++) {
                int j = (int) (idx[k] < 0 ? idx[k] + dimSize : idx[k]);
                Tensor.copy(x, (o * dimSize + j) * inner, out, (o * idx.length + k) * inner, inner);
            }
        }
        return out;
    }

    /** Axes from input 1 (opset 13+) or the attribute (older opsets). */
    private static long[] axes(Model.Node n, Tensor[] in) {
        if (arg(in, 1) != null) return in[1].longs();
        Model.Attr a = n.attrs.get("axes");
        return a == null ? null : a.ints;
    }

    private static Tensor unsqueeze(Model.Node n, Tensor[] in) {
        Tensor x = in[0];
        long[] axes = axes(n, in);
        int rank = x.rank() + axes.length;
        boolean[] inserted = new boolean[rank];
        for (long a : axes) inserted[normAxis((int) a, rank)] = true;
        int[] shape = new int[rank];
        for (int d = 0, s = 0; d < rank; d++) shape[d] = inserted[d] ? 1 : x.shape[s++];
        return x.reshape(shape);
    }

    private static Tensor squeeze(Model.Node n, Tensor[] in) {
        Tensor x = in[0];
        long[] axes = axes(n, in);
        boolean[] drop = new boolean[x.rank()];
        for (int d = 0; d < x.rank(); d++) drop[d] = axes == null && x.shape[d] == 1;
        if (axes != null) for (long a : axes) drop[normAxis((int) a, x.rank())] = true;
        int kept = 0;
        for (boolean b : drop) if (!b) kept++;
        int[] shape = new int[kept];
        for (int d = 0, k = 0; d < x.rank(); d++) if (!drop[d]) shape[k++] = x.shape[d];
        return x.reshape(shape);
    }

    private static Tensor concat(Model.Node n, Tensor[] in) {
        int axis = normAxis((int) n.attrInt("axis", 0), in[0].rank());
        int[] shape = in[0].shape.clone();
        shape[axis] = 0;
        boolean ints = true;
        for (Tensor t : in) {
            shape[axis] += t.shape[axis];
            ints &= t.isInt();
        }
        int outer = Tensor.prod(shape, 0, axis), rowOut = Tensor.prod(shape, axis, shape.length);
        Tensor out = ints ? new Tensor(shape, new long[Tensor.numel(shape)])
                : new Tensor(shape, new float[Tensor.numel(shape)]);
        int offset = 0;
        for (Tensor t : in) {
            int row = Tensor.prod(t.shape, axis, t.rank());
            for (int o = 0; o < outer; o++) Tensor.copy(t, o * row, out, o * rowOut + offset, row);
            offset += row;
        }
        return out;
    }

    /** Pad, constant mode: pads input [begin_0, ..., begin_r-1, end_0, ..., end_r-1]. */
    private static Tensor pad(Model.Node n, Tensor[] in) {
        Model.Attr modeAttr = n.attrs.get("mode");
        String mode = modeAttr == null ? "constant" : modeAttr.s;
        if (!mode.equals("constant") || arg(in, 3) != null) {
            throw new UnsupportedOperationException("Pad node '" + n.name + "': mode=" + mode
                    + (arg(in, 3) != null ? " with axes" : "")
                    + " is not supported (constant mode over all axes is)");
        }
        Tensor x = in[0];
        int r = x.rank();
        long[] pads = arg(in, 1) != null ? in[1].longs() : n.attrs.get("pads").ints;
        float value = arg(in, 2) != null ? in[2].floats()[0] : n.attrFloat("value", 0f);
        int[] shape = new int[r];
        for (int d = 0; d < r; d++) shape[d] = x.shape[d] + (int) (pads[d] + pads[d + r]);
        float[] xv = x.floats(), out = new float[Tensor.numel(shape)];
        java.util.Arrays.fill(out, value);
        int[] idx = new int[r];
        for (int i = 0; i < xv.length; i++) {
            int o = 0;
            boolean inside = true;
            for (int d = 0; d < r; d++) {
                int od = idx[d] + (int) pads[d];
                inside &= od >= 0 && od < shape[d];  // negative pads crop
                o = o * shape[d] + od;
            }
            if (inside) out[o] = xv[i];
            for (int d = r - 1; d >= 0 && ++idx[d] == x.shape[d]; d--) idx[d] = 0;
        }
        return new Tensor(shape, out);
    }

    static int normAxis(int axis, int rank) {
        int a = axis < 0 ? axis + rank : axis;
        if (a < 0 || a >= rank) {
            throw new IllegalArgumentException("axis " + axis + " out of range for rank " + rank);
        }
        return a;
    }
}
