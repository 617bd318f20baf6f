package ember;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * An ONNX model (a ModelProto file, as {@code ember.onnx.export} writes) and a float32
 * interpreter for its graph.
 *
 * <pre>
 *   Model m = Model.load(Path.of("model.onnx"));
 *   float[] out = m.run(input, new int[]{1, 3, 64, 64});   // first graph output, flattened
 *   Map&lt;String, Tensor&gt; all = m.run(Map.of(m.inputNames().get(0), tensor));
 * </pre>
 */
public final class Model {
    /** One attribute of a node (AttributeProto); unused fields stay null or 0. */
    static final class Attr {
        String name;
        long i;
        float f;
        String s;
        Tensor t;
        long[] ints;
        float[] floats;
    }

    /** One graph node (NodeProto). */
    static final class Node {
        String opType = "", name = "", domain = "";
        final List<String> inputs = new ArrayList<>(), outputs = new ArrayList<>();
        final Map<String, Attr> attrs = new HashMap<>();

        long attrInt(String key, long dflt) {
            Attr a = attrs.get(key);
            return a == null ? dflt : a.i;
        }

        float attrFloat(String key, float dflt) {
            Attr a = attrs.get(key);
            return a == null ? dflt : a.f;
        }

        /** An INTS attribute as int[], or {@code dflt} when absent. */
        int[] attrInts(String key, int[] dflt) {
            Attr a = attrs.get(key);
            if (a == null || a.ints == null) return dflt;
            int[] out = new int[a.ints.length];
            for (int k = 0; k < out.length; k++) out[k] = (int) a.ints[k];
            return out;
        }
    }

    final List<Node> nodes = new ArrayList<>();
    final Map<String, Tensor> initializers = new HashMap<>();
    final List<String> inputs = new ArrayList<>(), outputs = new ArrayList<>();
    final Map<String, int[]> inputShapes = new HashMap<>();
    long irVersion, opset;

    public static Model load(Path path) throws IOException {
        return parse(Files.readAllBytes(path));
    }

    public static Model load(String path) throws IOException {
        return load(Path.of(path));
    }

    /** Parses a serialized ModelProto. */
    public static Model parse(byte[] bytes) {
        Model m = new Model();
        ProtoReader r = new ProtoReader(bytes);
        while (r.next()) {
            if (r.field == 1 && r.wireType == ProtoReader.VARINT) m.irVersion = r.varint();
            else if (r.field == 7) m.readGraph(r.message());
            else if (r.field == 8) m.readOpset(r.message());
            else r.skip();
        }
        return m;
    }

    /** Names of the graph inputs the caller feeds (initializers listed as inputs excluded). */
    public List<String> inputNames() {
        List<String> out = new ArrayList<>();
        for (String n : inputs) if (!initializers.containsKey(n)) out.add(n);
        return out;
    }

    public List<String> outputNames() {
        return outputs;
    }

    /** Declared shape of a graph input (-1 for a symbolic dimension), or null. */
    public int[] inputShape(String name) {
        return inputShapes.get(name);
    }

    /** Runs the graph on one float32 input; returns the first output's values. */
    public float[] run(float[] input, int[] shape) {
        Map<String, Tensor> feeds = new HashMap<>();
        feeds.put(inputNames().get(0), new Tensor(shape.clone(), input));
        return run(feeds).get(outputs.get(0)).floats();
    }

    /** Runs the graph; returns every graph output by name, in order. */
    public Map<String, Tensor> run(Map<String, Tensor> feeds) {
        Map<String, Tensor> env = new HashMap<>(initializers);
        for (String name : inputNames()) {
            Tensor t = feeds.get(name);
            if (t == null) throw new IllegalArgumentException("missing input '" + name + "'");
            env.put(name, t);
        }
        for (Node node : nodes) {
            Tensor[] args = new Tensor[node.inputs.size()];
            for (int k = 0; k < args.length; k++) {
                String name = node.inputs.get(k);
                if (name.isEmpty()) continue;  // an omitted optional input
                args[k] = env.get(name);
                if (args[k] == null) {
                    throw new IllegalStateException(node.opType + " node '" + node.name
                            + "': input '" + name + "' is not computed yet");
                }
            }
            Tensor[] results = Ops.run(node, args);
            for (int k = 0; k < results.length && k < node.outputs.size(); k++) {
                if (!node.outputs.get(k).isEmpty()) env.put(node.outputs.get(k), results[k]);
            }
        }
        Map<String, Tensor> out = new LinkedHashMap<>();
        for (String name : outputs) out.put(name, env.get(name));
        return out;
    }

    private void readOpset(ProtoReader r) {
        String domain = "";
        long version = 0;
        while (r.next()) {
            if (r.field == 1) domain = r.string();
            else if (r.field == 2) version = r.varint();
            else r.skip();
        }
        if (domain.isEmpty() || domain.equals("ai.onnx")) opset = version;
    }

    private void readGraph(ProtoReader r) {
        while (r.next()) {
            switch (r.field) {
                case 1: nodes.add(readNode(r.message())); break;
                case 5: {
                    Map.Entry<String, Tensor> e = readTensor(r.message());
                    initializers.put(e.getKey(), e.getValue());
                    break;
                }
                case 11: readValueInfo(r.message(), inputs, inputShapes); break;
                case 12: readValueInfo(r.message(), outputs, new HashMap<>()); break;
                default: r.skip();
            }
        }
    }

    private static Node readNode(ProtoReader r) {
        Node n = new Node();
        while (r.next()) {
            switch (r.field) {
                case 1: n.inputs.add(r.string()); break;
                case 2: n.outputs.add(r.string()); break;
                case 3: n.name = r.string(); break;
                case 4: n.opType = r.string(); break;
                case 5: {
                    Attr a = readAttr(r.message());
                    n.attrs.put(a.name, a);
                    break;
                }
                case 7: n.domain = r.string(); break;
                default: r.skip();
            }
        }
        return n;
    }

    private static Attr readAttr(ProtoReader r) {
        Attr a = new Attr();
        ProtoReader.LongList ints = new ProtoReader.LongList();
        ProtoReader.FloatList floats = new ProtoReader.FloatList();
        int type = 0;
        while (r.next()) {
            switch (r.field) {
                case 1: a.name = r.string(); break;
                case 2: a.f = r.float32(); break;
                case 3: a.i = r.varint(); break;
                case 4: a.s = r.string(); break;
                case 5: a.t = readTensor(r.message()).getValue(); break;
                case 7: r.floats(floats); break;
                case 8: r.int64s(ints); break;
                case 20: type = (int) r.varint(); break;
                default: r.skip();
            }
        }
        if (type == 7 || ints.size > 0) a.ints = ints.toArray();     // INTS
        if (type == 6 || floats.size > 0) a.floats = floats.toArray(); // FLOATS
        return a;
    }

    /** ValueInfoProto: the name, and the shape of a tensor type (-1 for a symbolic dim). */
    private static void readValueInfo(ProtoReader r, List<String> names, Map<String, int[]> shapes) {
        String name = "";
        ProtoReader.LongList dims = new ProtoReader.LongList();
        while (r.next()) {
            if (r.field == 1) name = r.string();
            else if (r.field == 2) readTypeShape(r.message(), dims);
            else r.skip();
        }
        names.add(name);
        int[] shape = new int[dims.size];
        for (int k = 0; k < shape.length; k++) shape[k] = (int) dims.data[k];
        shapes.put(name, shape);
    }

    /** TypeProto → tensor_type(1) → shape(2) → dim(1) → dim_value(1) | dim_param(2). */
    private static void readTypeShape(ProtoReader type, ProtoReader.LongList dims) {
        while (type.next()) {
            if (type.field != 1) { type.skip(); continue; }
            ProtoReader tensorType = type.message();
            while (tensorType.next()) {
                if (tensorType.field != 2) { tensorType.skip(); continue; }
                ProtoReader shape = tensorType.message();
                while (shape.next()) {
                    if (shape.field != 1) { shape.skip(); continue; }
                    ProtoReader dim = shape.message();
                    long value = -1;
                    while (dim.next()) {
                        if (dim.field == 1) value = dim.varint();
                        else dim.skip();
                    }
                    dims.add(value);
                }
            }
        }
    }

    static final int FLOAT = 1, INT32 = 6, INT64 = 7, BOOL = 9, DOUBLE = 11;

    /** TensorProto → (name, tensor); float and int types, raw_data or typed fields. */
    static Map.Entry<String, Tensor> readTensor(ProtoReader r) {
        String name = "";
        int dataType = 0;
        ProtoReader.LongList dims = new ProtoReader.LongList();
        ProtoReader.LongList int64s = new ProtoReader.LongList();
        ProtoReader.FloatList floats = new ProtoReader.FloatList();
        ByteBuffer raw = null;
        while (r.next()) {
            switch (r.field) {
                case 1: r.int64s(dims); break;
                case 2: dataType = (int) r.varint(); break;
                case 4: r.floats(floats); break;
                case 5: case 7: r.int64s(int64s); break;   // int32_data, int64_data
                case 8: name = r.string(); break;
                case 9: {
                    ProtoReader b = r.message();
                    raw = ByteBuffer.wrap(b.buf, b.pos, b.end - b.pos).slice()
                            .order(ByteOrder.LITTLE_ENDIAN);
                    break;
                }
                case 14:
                    if (r.varint() == 1) throw new UnsupportedOperationException(
                            "tensor '" + name + "' uses external data, which is not supported");
                    break;
                default: r.skip();
            }
        }
        int[] shape = new int[dims.size];
        for (int k = 0; k < shape.length; k++) shape[k] = (int) dims.data[k];
        int n = Tensor.numel(shape);
        Tensor t;
        if (dataType == FLOAT) {
            float[] v = new float[n];
            if (raw != null) raw.asFloatBuffer().get(v);
            else System.arraycopy(floats.data, 0, v, 0, n);
            t = new Tensor(shape, v);
        } else if (dataType == DOUBLE && raw != null) {
            float[] v = new float[n];
            for (int k = 0; k < n; k++) v[k] = (float) raw.getDouble(8 * k);
            t = new Tensor(shape, v);
        } else if (dataType == INT64 || dataType == INT32 || dataType == BOOL) {
            long[] v = new long[n];
            for (int k = 0; k < n; k++) {
                if (raw == null) v[k] = int64s.data[k];
                else if (dataType == INT64) v[k] = raw.getLong(8 * k);
                else if (dataType == INT32) v[k] = raw.getInt(4 * k);
                else v[k] = raw.get(k);
            }
            t = new Tensor(shape, v);
        } else {
            throw new UnsupportedOperationException("tensor '" + name + "': ONNX data type "
                    + dataType + " is not supported (float, double, int32, int64, bool are)");
        }
        return Map.entry(name, t);
    }
}
