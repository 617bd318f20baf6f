package ember;

import java.util.Arrays;

/** Float32 NCHW kernels: convolution, pooling, batch normalization, Gemm and MatMul. */
final class Kernels {
    private Kernels() {}

    /** Window geometry of a 2-d conv or pool over an NCHW input. */
    private static final class Window {
        int kh, kw, sh, sw, dh, dw, pt, pl, pb, pr, oh, ow;

        Window(Model.Node n, int h, int w, int[] kernel) {
            String autoPad = n.attrs.containsKey("auto_pad") ? n.attrs.get("auto_pad").s : "NOTSET";
            if (!autoPad.equals("NOTSET") && !autoPad.equals("VALID")) {
                throw new UnsupportedOperationException(n.opType + " node '" + n.name + "': auto_pad="
                        + autoPad + " is not supported (NOTSET or VALID are)");
            }
            int[] s = n.attrInts("strides", new int[] {1, 1});
            int[] d = n.attrInts("dilations", new int[] {1, 1});
            int[] p = autoPad.equals("VALID") ? new int[4] : n.attrInts("pads", new int[4]);
            kh = kernel[0]; kw = kernel[1];
            sh = s[0]; sw = s[1];
            dh = d[0]; dw = d[1];
            pt = p[0]; pl = p[1]; pb = p[2]; pr = p[3];
            boolean ceil = n.attrInt("ceil_mode", 0) == 1;
            oh = outSize(h, kh, sh, dh, pt, pb, ceil);
            ow = outSize(w, kw, sw, dw, pl, pr, ceil);
        }

        private static int outSize(int in, int k, int s, int d, int p0, int p1, boolean ceil) {
            int span = in + p0 + p1 - d * (k - 1) - 1;
            int out = (ceil ? Math.floorDiv(span + s - 1, s) : Math.floorDiv(span, s)) + 1;
            if (ceil && (out - 1) * s >= in + p0) out--;  // the last window must start inside
            return out;
        }
    }

    private static void require4d(Model.Node n, Tensor x) {
        if (x.rank() != 4) {
            throw new UnsupportedOperationException(n.opType + " node '" + n.name
                    + "': only 2-d NCHW inputs are supported, got " + x);
        }
    }

    /** Conv: x [N, C, H, W], w [M, C/group, kH, kW], bias [M] or null → [N, M, oH, oW]. */
    static Tensor conv(Model.Node n, Tensor x, Tensor w, Tensor bias) {
        require4d(n, x);
        int batch = x.shape[0], c = x.shape[1], h = x.shape[2], wd = x.shape[3];
        int m = w.shape[0], cg = w.shape[1];
        int groups = (int) n.attrInt("group", 1);
        if (cg * groups != c || m % groups != 0) {
            throw new IllegalArgumentException("Conv node '" + n.name + "': input " + x + ", weight "
                    + w + " and group=" + groups + " do not match");
        }
        Window g = new Window(n, h, wd, new int[] {w.shape[2], w.shape[3]});
        float[] xv = x.f, wv = w.f, out = new float[batch * m * g.oh * g.ow];
        int plane = g.oh * g.ow, perGroup = m / groups;
        for (int b = 0; b < batch; b++) {
            for (int oc = 0; oc < m; oc++) {
                int o0 = (b * m + oc) * plane;
                if (bias != null) Arrays.fill(out, o0, o0 + plane, bias.f[oc]);
                int group = oc / perGroup;
                for (int ci = 0; ci < cg; ci++) {
                    int x0 = (b * c + group * cg + ci) * h * wd;
                    for (int ki = 0; ki < g.kh; ki++) {
                        for (int kj = 0; kj < g.kw; kj++) {
                            float wt = wv[((oc * cg + ci) * g.kh + ki) * g.kw + kj];
                            for (int oy = 0; oy < g.oh; oy++) {
                                int iy = oy * g.sh - g.pt + ki * g.dh;
                                if (iy < 0 || iy >= h) continue;
                                int row = x0 + iy * wd, orow = o0 + oy * g.ow;
                                for (int ox = 0; ox < g.ow; ox++) {
                                    int ix = ox * g.sw - g.pl + kj * g.dw;
                                    if (ix >= 0 && ix < wd) out[orow + ox] += wt * xv[row + ix];
                                }
                            }
                        }
                    }
                }
            }
        }
        return new Tensor(new int[] {batch, m, g.oh, g.ow}, out);
    }

    /** MaxPool or AveragePool (count_include_pad, ceil_mode) over an NCHW input. */
    static Tensor pool(Model.Node n, Tensor x, boolean max) {
        require4d(n, x);
        int planes = x.shape[0] * x.shape[1], h = x.shape[2], w = x.shape[3];
        Window g = new Window(n, h, w, n.attrInts("kernel_shape", null));
        boolean includePad = n.attrInt("count_include_pad", 0) == 1;
        float[] xv = x.f, out = new float[planes * g.oh * g.ow];
        int o = 0;
        for (int p = 0; p < planes; p++) {
            int x0 = p * h * w;
            for (int oy = 0; oy < g.oh; oy++) {
                for (int ox = 0; ox < g.ow; ox++) {
                    float acc = max ? Float.NEGATIVE_INFINITY : 0f;
                    int count = 0;
                    for (int ki = 0; ki < g.kh; ki++) {
                        int iy = oy * g.sh - g.pt + ki * g.dh;
                        for (int kj = 0; kj < g.kw; kj++) {
                            int ix = ox * g.sw - g.pl + kj * g.dw;
                            boolean inside = iy >= 0 && iy < h && ix >= 0 && ix < w;
                            if (inside) {
                                float v = xv[x0 + iy * w + ix];
                                acc = max ? Math.max(acc, v) : acc + v;
                            }
                            if (inside || includePad && iy < h + g.pb && ix < w + g.pr) count++;
                        }
                    }
                    out[o++] = max ? acc : acc / count;
                }
            }
        }
        return new Tensor(new int[] {x.shape[0], x.shape[1], g.oh, g.ow}, out);
    }

    /** GlobalAveragePool: [N, C, spatial...] → [N, C, 1, ...]. */
    static Tensor globalAveragePool(Tensor x) {
        int planes = x.shape[0] * x.shape[1], area = Tensor.prod(x.shape, 2, x.rank());
        float[] out = new float[planes];
        for (int p = 0; p < planes; p++) {
            double sum = 0;
            for (int i = p * area; i < (p + 1) * area; i++) sum += x.f[i];
            out[p] = (float) (sum / area);
        }
        int[] shape = new int[x.rank()];
        Arrays.fill(shape, 1);
        shape[0] = x.shape[0];
        shape[1] = x.shape[1];
        return new Tensor(shape, out);
    }

    /** BatchNormalization (inference): inputs x, scale, bias, mean, var over axis 1. */
    static Tensor batchNorm(Model.Node n, Tensor[] in) {
        Tensor x = in[0];
        float eps = n.attrFloat("epsilon", 1e-5f);
        int c = x.shape[1], inner = Tensor.prod(x.shape, 2, x.rank());
        float[] out = new float[x.size()];
        for (int i = 0; i < x.size(); i++) {
            int ch = (i / inner) % c;
            float scale = in[1].f[ch] / (float) Math.sqrt(in[4].f[ch] + eps);
            out[i] = (x.f[i] - in[3].f[ch]) * scale + in[2].f[ch];
        }
        return new Tensor(x.shape, out);
    }

    /** Gemm: alpha * op(A) @ op(B) + beta * C, A and B 2-d, C broadcast to [M, N]. */
    static Tensor gemm(Model.Node n, Tensor a, Tensor b, Tensor c) {
        boolean ta = n.attrInt("transA", 0) == 1, tb = n.attrInt("transB", 0) == 1;
        float alpha = n.attrFloat("alpha", 1f), beta = n.attrFloat("beta", 1f);
        int rows = ta ? a.shape[1] : a.shape[0], k = ta ? a.shape[0] : a.shape[1];
        int cols = tb ? b.shape[0] : b.shape[1];
        if ((tb ? b.shape[1] : b.shape[0]) != k) {
            throw new IllegalArgumentException("Gemm node '" + n.name + "': shapes " + a + " and " + b
                    + " (transA=" + ta + ", transB=" + tb + ") do not match");
        }
        float[] out = new float[rows * cols];
        for (int i = 0; i < rows; i++) {
            for (int j = 0; j < cols; j++) {
                double sum = 0;
                for (int p = 0; p < k; p++) {
                    float av = ta ? a.f[p * rows + i] : a.f[i * k + p];
                    float bv = tb ? b.f[j * k + p] : b.f[p * cols + j];
                    sum += av * bv;
                }
                out[i * cols + j] = (float) (alpha * sum);
            }
        }
        Tensor y = new Tensor(new int[] {rows, cols}, out);
        if (c == null) return y;
        return Ops.binary(y, c, (u, v) -> u + beta * v);
    }

    /** MatMul with NumPy semantics: 1-d operands promoted, batch dims broadcast. */
    static Tensor matmul(Tensor a, Tensor b) {
        int[] as = a.rank() == 1 ? new int[] {1, a.shape[0]} : a.shape;
        int[] bs = b.rank() == 1 ? new int[] {b.shape[0], 1} : b.shape;
        int rows = as[as.length - 2], k = as[as.length - 1], cols = bs[bs.length - 1];
        if (bs[bs.length - 2] != k) {
            throw new IllegalArgumentException("MatMul: shapes " + a + " and " + b + " do not match");
        }
        int batchRank = Math.max(as.length, bs.length) - 2;
        int[] batch = new int[batchRank];
        for (int d = 0; d < batchRank; d++) {
            int da = bdim(as, d - batchRank + as.length - 2);
            int db = bdim(bs, d - batchRank + bs.length - 2);
            if (da != db && da != 1 && db != 1) {
                throw new IllegalArgumentException("MatMul: cannot broadcast " + a + " with " + b);
            }
            batch[d] = Math.max(da, db);
        }
        int nb = Tensor.numel(batch);
        float[] out = new float[nb * rows * cols];
        for (int bi = 0; bi < nb; bi++) {
            int aOff = batchOffset(bi, batch, as) * rows * k;
            int bOff = batchOffset(bi, batch, bs) * k * cols;
            for (int i = 0; i < rows; i++) {
                for (int j = 0; j < cols; j++) {
                    double sum = 0;
                    for (int p = 0; p < k; p++) sum += a.f[aOff + i * k + p] * b.f[bOff + p * cols + j];
                    out[(bi * rows + i) * cols + j] = (float) sum;
                }
            }
        }
        int[] shape = Arrays.copyOf(batch, batchRank + 2);
        shape[batchRank] = rows;
        shape[batchRank + 1] = cols;
        if (b.rank() == 1) shape = dropDim(shape, batchRank + 1);
        if (a.rank() == 1) shape = dropDim(shape, batchRank);
        return new Tensor(shape, out);
    }

    private static int bdim(int[] shape, int d) {
        return d < 0 ? 1 : shape[d];
    }

    /** Flat batch index in {@code batch} → batch index of an operand (broadcast dims → 0). */
    private static int batchOffset(int flat, int[] batch, int[] shape) {
        int own = shape.length - 2, offset = 0, stride = 1;
        for (int d = batch.length - 1, s = own - 1; d >= 0; d--, s--) {
            int idx = flat % batch[d];
            flat /= batch[d];
            if (s >= 0) {
                if (shape[s] != 1) offset += idx * stride;
                stride *= shape[s];
            }
        }
        return offset;
    }

    private static int[] dropDim(int[] shape, int d) {
        int[] out = new int[shape.length - 1];
        for (int i = 0, j = 0; i < shape.length; i++) if (i != d) out[j++] = shape[i];
        return out;
    }
}
