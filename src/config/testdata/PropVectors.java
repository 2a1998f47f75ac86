import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.*;
/**
 * Reads hex-encoded UTF-8 inputs, one per line, on stdin; prints each input, a tab, and what
 * java.util.Properties.load(Reader) made of it: key=value pairs (hex, sorted by key, comma
 * separated), "-" for none, or ERR. Produces properties_vectors.tsv for
 * src/config/properties_tests.rs.
 */
public class PropVectors {
  static String hex(String s) { StringBuilder b = new StringBuilder(); for (byte x : s.getBytes(StandardCharsets.UTF_8)) b.append(String.format("%02x", x & 0xff)); return b.toString(); }
  static String unhex(String h) { byte[] b = new byte[h.length()/2]; for (int i=0;i<b.length;i++) b[i]=(byte)Integer.parseInt(h.substring(2*i,2*i+2),16); return new String(b, StandardCharsets.UTF_8); }
  public static void main(String[] a) throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
    String line;
    while ((line = in.readLine()) != null) {
      String text = unhex(line.trim());
      Properties p = new Properties();
      String result;
      try {
        p.load(new StringReader(text));
        TreeMap<String,String> sorted = new TreeMap<>();
        for (String k : p.stringPropertyNames()) sorted.put(k, p.getProperty(k));
        StringBuilder r = new StringBuilder();
        for (Map.Entry<String,String> e : sorted.entrySet()) { if (r.length() > 0) r.append(','); r.append(hex(e.getKey())).append('=').append(hex(e.getValue())); }
        result = r.length() == 0 ? "-" : r.toString();
      } catch (IllegalArgumentException e) { result = "ERR"; }
      System.out.println(line.trim() + "\t" + result);
    }
  }
}
