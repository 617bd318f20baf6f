package ember;

import java.io.BufferedWriter;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/**
 * Command-line runner: {@code java -cp CLASSES ember.RunModel model.onnx input.bin 1,3,64,64}
 * reads the input as little-endian float32 values of that shape, runs the model and prints
 * {@code shape D0 D1 ...} followed by the first output's values, one per line.
 */
public final class RunModel {
    public static void main(String[] args) throws IOException {
        if (args.length != 3) {
            System.err.println("usage: java ember.RunModel MODEL.onnx INPUT.f32 D0,D1,...");
            System.exit(2);
        }
        Model model = Model.load(args[0]);
        String[] dims = args[2].split(",");
        int[] shape = new int[dims.length];
        for (int d = 0; d < dims.length; d++) shape[d] = Integer.parseInt(dims[d].trim());
        float[] input = readFloats(Path.of(args[1]));
        Tensor x = new Tensor(shape, input);
        Map<String, Tensor> outputs = model.run(Map.of(model.inputNames().get(0), x));
        Tensor y = outputs.get(model.outputNames().get(0));
        BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out));
        out.write("shape");
        for (int d : y.shape) out.write(" " + d);
        out.newLine();
        for (float v : y.floats()) {
            out.write(Float.toString(v));  // shortest text that reads back as the same float
            out.newLine();
        }
        out.flush();
    }

    static float[] readFloats(Path path) throws IOException {
        byte[] bytes = Files.readAllBytes(path);
        float[] v = new float[bytes.length / 4];
        ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(v);
        return v;
    }
}
