package ember;

import java.util.Arrays;

/**
 * A dense row-major tensor: float32 values ({@code f}) or int64 values ({@code l}, used for
 * shapes and indices). Exactly one of the two arrays is non-null.
 */
public final class Tensor {
    public final int[] shape;
    public final float[] f;
    public final long[] l;

    public Tensor(int[] shape, float[] f) {
        this(shape, f, null);
    }

    public Tensor(int[] shape, long[] l) {
        this(shape, null, l);
    }

    private Tensor(int[] shape, float[] f, long[] l) {
        int n = numel(shape);
        int len = f != null ? f.length : l.length;
        if (n != len) {
            throw new IllegalArgumentException("shape " + Arrays.toString(shape) + " holds " + n
                    + " elements but " + len + " values were given");
        }
        this.shape = shape;
        this.f = f;
        this.l = l;
    }

    public boolean isInt() {
        return l != null;
    }

    public int size() {
        return f != null ? f.length : l.length;
    }

    public int rank() {
        return shape.length;
    }

    /** The same values under another shape (no copy). */
    public Tensor reshape(int[] newShape) {
        return f != null ? new Tensor(newShape, f) : new Tensor(newShape, l);
    }

    /** An empty tensor of this one's kind (float or int64). */
    Tensor like(int[] newShape) {
        int n = numel(newShape);
        return f != null ? new Tensor(newShape, new float[n]) : new Tensor(newShape, new long[n]);
    }

    /** Values as float (int64 converted). */
    float[] floats() {
        if (f != null) return f;
        float[] out = new float[l.length];
        for (int i = 0; i < l.length; i++) out[i] = l[i];
        return out;
    }

    /** Values as int64 (float truncated). */
    long[] longs() {
        if (l != null) return l;
        long[] out = new long[f.length];
        for (int i = 0; i < f.length; i++) out[i] = (long) f[i];
        return out;
    }

    /** Copies {@code len} values from {@code src[srcPos..]} into {@code dst[dstPos..]}. */
    static void copy(Tensor src, int srcPos, Tensor dst, int dstPos, int len) {
        if (dst.f != null) {
            System.arraycopy(src.floats(), srcPos, dst.f, dstPos, len);
        } else {
            System.arraycopy(src.longs(), srcPos, dst.l, dstPos, len);
        }
    }

    static int numel(int[] shape) {
        int n = 1;
        for (int d : shape) n *= d;
        return n;
    }

    /** Product of shape[from..to). */
    static int prod(int[] shape, int from, int to) {
        int n = 1;
        for (int i = from; i < to; i++) n *= shape[i];
        return n;
    }

    @Override
    public String toString() {
        return (f != null ? "float" : "int64") + Arrays.toString(shape);
    }
}
