package ember;

import java.nio.charset.StandardCharsets;

/**
 * A minimal protobuf wire-format reader over a byte range: varints, fixed32/64 and
 * length-delimited fields (strings, bytes, sub-messages, packed repeated scalars).
 */
final class ProtoReader {
    static final int VARINT = 0, FIXED64 = 1, LEN = 2, FIXED32 = 5;

    final byte[] buf;
    int pos;
    final int end;
    /** Field number and wire type of the last tag read by {@link #next()}. */
    int field, wireType;

    ProtoReader(byte[] buf, int pos, int end) {
        this.buf = buf;
        this.pos = pos;
        this.end = end;
    }

    ProtoReader(byte[] buf) {
        this(buf, 0, buf.length);
    }

    /** Reads the next tag; false at the end of the message. */
    boolean next() {
        if (pos >= end) return false;
        long tag = varint();
        field = (int) (tag >>> 3);
        wireType = (int) (tag & 7);
        return true;
    }

    long varint() {
        long result = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (pos >= end) throw new IllegalStateException("truncated varint at byte " + pos);
            byte b = buf[pos++];
            result |= (long) (b & 0x7f) << shift;
            if ((b & 0x80) == 0) return result;
        }
        throw new IllegalStateException("malformed varint at byte " + pos);
    }

    int fixed32() {
        int v = (buf[pos] & 0xff) | (buf[pos + 1] & 0xff) << 8
                | (buf[pos + 2] & 0xff) << 16 | (buf[pos + 3] & 0xff) << 24;
        pos += 4;
        return v;
    }

    long fixed64() {
        long lo = fixed32() & 0xffffffffL;
        long hi = fixed32() & 0xffffffffL;
        return lo | hi << 32;
    }

    float float32() {
        return Float.intBitsToFloat(fixed32());
    }

    /** A reader over the length-delimited field that follows (a sub-message or packed data). */
    ProtoReader message() {
        int len = (int) varint();
        if (len < 0 || pos + len > end) {
            throw new IllegalStateException("bad length " + len + " at byte " + pos);
        }
        ProtoReader sub = new ProtoReader(buf, pos, pos + len);
        pos += len;
        return sub;
    }

    String string() {
        ProtoReader r = message();
        return new String(buf, r.pos, r.end - r.pos, StandardCharsets.UTF_8);
    }

    /** Skips the value of the current field. */
    void skip() {
        switch (wireType) {
            case VARINT: varint(); break;
            case FIXED64: pos += 8; break;
            case LEN: message(); break;
            case FIXED32: pos += 4; break;
            default:
                throw new IllegalStateException("unsupported wire type " + wireType + " (field " + field + ")");
        }
    }

    /** Appends a repeated int64 field's value(s), packed or not. */
    void int64s(LongList out) {
        if (wireType == LEN) {
            ProtoReader r = message();
            while (r.pos < r.end) out.add(r.varint());
        } else {
            out.add(varint());
        }
    }

    /** Appends a repeated float field's value(s), packed or not. */
    void floats(FloatList out) {
        if (wireType == LEN) {
            ProtoReader r = message();
            while (r.pos < r.end) out.add(r.float32());
        } else {
            out.add(float32());
        }
    }

    /** A growable long array. */
    static final class LongList {
        long[] data = new long[8];
        int size;

        void add(long v) {
            if (size == data.length) data = java.util.Arrays.copyOf(data, size * 2);
            data[size++] = v;
        }

        long[] toArray() {
            return java.util.Arrays.copyOf(data, size);
        }
    }

    /** A growable float array. */
    static final class FloatList {
        float[] data = new float[8];
        int size;

        void add(float v) {
            if (size == data.length) data = java.util.Arrays.copyOf(data, size * 2);
            data[size++] = v;
        }

        float[] toArray() {
            return java.util.Arrays.copyOf(data, size);
        }
    }
}
