package dev.mm2offsets.reference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class JsonTest {
  @Test
  void escapesQuotesBackslashAndControlCharacters() {
    assertEquals("\"a\\\"b\\\\c\\td\\ne\\rf\\bg\\fh\\u0001i\\u001f\"",
        Json.write("a\"b\\c\td\ne\rf\bg\fh\u0001i\u001f"));
  }

  @Test
  void writesNonAsciiAsIsAndEscapesOnlyUnpairedSurrogates() {
    assertEquals("\"é组😀\u007f\u2028\"", Json.write("é组😀\u007f\u2028"));
    assertEquals("\"x\\ud800y\\udc00\"", Json.write("x\ud800y\udc00"));
  }

  @Test
  void sortsStringKeysByCodePointNotUtf16() {
    // U+FFFD sorts before U+1F600 by code point (and by UTF-8 bytes), after it by UTF-16 units.
    Map<String, Object> map = new HashMap<>();
    map.put("\uD83D\uDE00", 1);
    map.put("\uFFFD", 2);
    map.put("b", 3);
    map.put("", 4);
    assertEquals("{\"\":4,\"b\":3,\"\uFFFD\":2,\"\uD83D\uDE00\":1}", Json.write(map));
  }

  @Test
  void sortsIntegerKeysNumericallyAndPrintsThemAsStrings() {
    Map<Integer, Object> map = new HashMap<>();
    for (int p : new int[] {10, 2, 0, 1, 100}) {
      map.put(p, p);
    }
    assertEquals("{\"0\":0,\"1\":1,\"2\":2,\"10\":10,\"100\":100}", Json.write(map));
  }

  @Test
  void writesListsInOrderAndRawNumbers() {
    assertEquals("[1.500,\"a\",true,-1]",
        Json.write(List.of(new Json.Raw(Timing.millis(1_500_000)), "a", true, -1L)));
  }

  @Test
  void rejectsUnknownTypes() {
    assertThrows(IllegalArgumentException.class, () -> Json.write(new Object()));
  }
}
