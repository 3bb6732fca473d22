// Java Paimon 0.9 bloom filter file index timings for benchmarks/java_anchor.py.
// Usage: BloomBench DIR ROUNDS
// DIR holds longs.bin (little-endian int64 values), long_probes.bin, strings.txt and
// string_probes.txt (one value a line) and items.txt (the "items" option); fpp is 0.01.
// Prints one "case median_ns min_ns sha" line per case after JIT warm-up rounds; the sha
// of the serialized index lets the caller check Java built the same bytes.
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.fileindex.FileIndexReader;
import org.apache.paimon.fileindex.FileIndexWriter;
import org.apache.paimon.fileindex.bloomfilter.BloomFilterFileIndex;
import org.apache.paimon.options.Options;
import org.apache.paimon.predicate.FieldRef;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypes;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.security.MessageDigest;
import java.util.Arrays;
import java.util.List;
import java.util.function.Supplier;

public class BloomBench {
    static Options opts;

    static Object[] longs(Path p) throws Exception {
        ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(p)).order(ByteOrder.LITTLE_ENDIAN);
        Object[] out = new Object[b.remaining() / 8];
        for (int i = 0; i < out.length; i++) out[i] = b.getLong();
        return out;
    }

    static Object[] strings(Path p) throws Exception {
        List<String> lines = Files.readAllLines(p);
        Object[] out = new Object[lines.size()];
        for (int i = 0; i < out.length; i++) out[i] = BinaryString.fromString(lines.get(i));
        return out;
    }

    static byte[] build(DataType t, Object[] vals) {
        FileIndexWriter w = new BloomFilterFileIndex(t, opts).createWriter();
        for (Object v : vals) w.write(v);
        return w.serializedBytes();
    }

    static int probe(DataType t, byte[] index, Object[] vals) {
        FileIndexReader r = new BloomFilterFileIndex(t, opts).createReader(
                new org.apache.paimon.fs.ByteArraySeekableStream(index), 0, index.length);
        FieldRef f = new FieldRef(0, "x", t);
        int hits = 0;
        for (Object v : vals) if (r.visitEqual(f, v).remain()) hits++;
        return hits;
    }

    static void time(String name, int rounds, Supplier<Object> body, String sha) {
        for (int i = 0; i < Math.max(5, rounds / 2); i++) body.get();
        long[] ns = new long[rounds];
        for (int i = 0; i < rounds; i++) {
            long t0 = System.nanoTime();
            body.get();
            ns[i] = System.nanoTime() - t0;
        }
        Arrays.sort(ns);
        System.out.println(name + " " + ns[rounds / 2] + " " + ns[0] + " " + sha);
    }

    static String sha(byte[] b) throws Exception {
        StringBuilder s = new StringBuilder();
        for (byte x : MessageDigest.getInstance("SHA-256").digest(b)) s.append(String.format("%02x", x));
        return s.toString();
    }

    public static void main(String[] a) throws Exception {
        Path dir = Paths.get(a[0]);
        int rounds = Integer.parseInt(a[1]);
        opts = new Options();
        opts.set("items", new String(Files.readAllBytes(dir.resolve("items.txt"))).trim());
        opts.set("fpp", "0.01");
        Object[] li = longs(dir.resolve("longs.bin")), lp = longs(dir.resolve("long_probes.bin"));
        Object[] si = strings(dir.resolve("strings.txt")), sp = strings(dir.resolve("string_probes.txt"));
        DataType bi = DataTypes.BIGINT(), st = DataTypes.STRING();
        byte[] ib = build(bi, li), sb = build(st, si);
        time("add_bigint", rounds, () -> build(bi, li), sha(ib));
        time("add_string", rounds, () -> build(st, si), sha(sb));
        time("probe_bigint", rounds, () -> probe(bi, ib, lp), "-");
        time("probe_string", rounds, () -> probe(st, sb, sp), "-");
    }
}
