// Generator of tests/data/hashmap_order/*.json: java.util.HashMap iteration order after
// computeIfAbsent calls (the bitmap index writer's pattern), for key sets that make bins
// of >= 8 keys (tree bins).  Input on stdin, one call per line: "I <int>", "L <long>" or
// "S <java hash> <hex bytes>" (a stand-in for Paimon's BinaryString: given hashCode,
// byte equality, unsigned byte-wise compareTo).  Output: the keys in iteration order,
// one per line, as given.  Run: javac HashMapOrder.java && java HashMapOrder < calls.txt
import java.io.*;
import java.util.*;

public class HashMapOrder {
    static final class BStr implements Comparable<BStr> {
        final byte[] b; final int h; final String text;
        BStr(int h, byte[] b, String text) { this.h = h; this.b = b; this.text = text; }
        public int hashCode() { return h; }
        public boolean equals(Object o) { return o instanceof BStr && Arrays.equals(b, ((BStr) o).b); }
        public int compareTo(BStr o) {
            int n = Math.min(b.length, o.b.length);
            for (int i = 0; i < n; i++) {
                int d = (b[i] & 0xff) - (o.b[i] & 0xff);
                if (d != 0) return d;
            }
            return b.length - o.b.length;
        }
        public String toString() { return text; }
    }

    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        Map<Object, Object> m = new HashMap<>();
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) continue;
            String[] p = line.split(" ");
            Object k;
            if (p[0].equals("I")) k = Integer.valueOf(p[1]);
            else if (p[0].equals("L")) k = Long.valueOf(p[1]);
            else {
                String hex = p.length > 2 ? p[2] : "";
                byte[] b = new byte[hex.length() / 2];
                for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(hex.substring(2 * i, 2 * i + 2), 16);
                k = new BStr(Integer.parseInt(p[1]), b, p[1] + " " + hex);
            }
            m.computeIfAbsent(k, x -> Boolean.TRUE);
        }
        StringBuilder sb = new StringBuilder();
        for (Object k : m.keySet()) sb.append(k).append('\n');
        System.out.print(sb);
    }
}
