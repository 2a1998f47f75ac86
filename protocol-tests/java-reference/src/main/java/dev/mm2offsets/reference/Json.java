package dev.mm2offsets.reference;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Map;

/**
 * A canonical JSON writer for the few shapes this tool prints.
 *
 * <p>Canonical means: object keys sorted, no insignificant whitespace, one fixed escaping, so the
 * output of two runs (or of the Rust tool, after the same canonicalisation) can be compared byte for
 * byte. Supported values: {@link Map} (String or Integer keys), {@link Collection} (printed in its
 * iteration order), {@link String}, {@link Integer}, {@link Long}, {@link Boolean}, {@link Raw}.
 *
 * <p>String keys are sorted by Unicode code point, which is the same as sorting their UTF-8 bytes:
 * that is the order of a Rust {@code BTreeMap<String, _>}. Java's own {@code String.compareTo}
 * compares UTF-16 units and would put U+E000..U+FFFF after supplementary characters. Integer keys
 * (partition numbers) are sorted numerically and printed as strings.
 */
final class Json {
  private Json() {}

  /** A pre-formatted JSON number (used for millisecond timings with a fixed number of decimals). */
  record Raw(String text) {}

  /** Orders strings by code point (= UTF-8 byte order). */
  static final Comparator<String> CODE_POINT_ORDER = Json::compareCodePoints;

  static String write(Object value) {
    StringBuilder out = new StringBuilder(256);
    write(out, value);
    return out.toString();
  }

  /** Sorts a collection of strings in canonical order. */
  static List<String> sorted(Collection<String> values) {
    List<String> list = new ArrayList<>(values);
    list.sort(CODE_POINT_ORDER);
    return list;
  }

  private static void write(StringBuilder out, Object value) {
    if (value == null) {
      out.append("null");
    } else if (value instanceof String s) {
      writeString(out, s);
    } else if (value instanceof Integer || value instanceof Long || value instanceof Boolean) {
      out.append(value);
    } else if (value instanceof Raw raw) {
      out.append(raw.text());
    } else if (value instanceof Map<?, ?> map) {
      writeObject(out, map);
    } else if (value instanceof Collection<?> items) {
      out.append('[');
      boolean first = true;
      for (Object item : items) {
        if (!first) {
          out.append(',');
        }
        first = false;
        write(out, item);
      }
      out.append(']');
    } else {
      throw new IllegalArgumentException("no JSON form for " + value.getClass().getName());
    }
  }

  private static void writeObject(StringBuilder out, Map<?, ?> map) {
    List<Map.Entry<?, ?>> entries = new ArrayList<>(map.entrySet());
    entries.sort(Json::compareKeys);
    out.append('{');
    boolean first = true;
    for (Map.Entry<?, ?> entry : entries) {
      if (!first) {
        out.append(',');
      }
      first = false;
      writeString(out, String.valueOf(entry.getKey()));
      out.append(':');
      write(out, entry.getValue());
    }
    out.append('}');
  }

  private static int compareKeys(Map.Entry<?, ?> a, Map.Entry<?, ?> b) {
    Object ka = a.getKey();
    Object kb = b.getKey();
    if (ka instanceof Integer ia && kb instanceof Integer ib) {
      return Integer.compare(ia, ib);
    }
    if (ka instanceof String sa && kb instanceof String sb) {
      return compareCodePoints(sa, sb);
    }
    throw new IllegalArgumentException("object keys must all be String or all be Integer");
  }

  private static int compareCodePoints(String a, String b) {
    int i = 0;
    int j = 0;
    while (i < a.length() && j < b.length()) {
      int ca = a.codePointAt(i);
      int cb = b.codePointAt(j);
      if (ca != cb) {
        return Integer.compare(ca, cb);
      }
      i += Character.charCount(ca);
      j += Character.charCount(cb);
    }
    return Integer.compare(a.length() - i, b.length() - j);
  }

  /**
   * Escapes per RFC 8259: quote, backslash and C0 controls are escaped; everything else, including
   * non-ASCII, is written as is. An unpaired surrogate (possible in a Java string, never in valid
   * UTF-8) is written as a {@code \\uXXXX} escape so nothing is silently replaced with '?'.
   */
  private static void writeString(StringBuilder out, String s) {
    out.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        case '\b' -> out.append("\\b");
        case '\f' -> out.append("\\f");
        case '\n' -> out.append("\\n");
        case '\r' -> out.append("\\r");
        case '\t' -> out.append("\\t");
        default -> {
          if (c < 0x20 || isUnpairedSurrogate(s, i)) {
            out.append(String.format("\\u%04x", (int) c));
          } else {
            out.append(c);
          }
        }
      }
    }
    out.append('"');
  }

  private static boolean isUnpairedSurrogate(String s, int i) {
    char c = s.charAt(i);
    if (Character.isHighSurrogate(c)) {
      return i + 1 >= s.length() || !Character.isLowSurrogate(s.charAt(i + 1));
    }
    if (Character.isLowSurrogate(c)) {
      return i == 0 || !Character.isHighSurrogate(s.charAt(i - 1));
    }
    return false;
  }
}
