package dev.mm2offsets.reference;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.List;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * The oracle for mm2-offsets' group patterns: {@code Pattern.compile(p).matcher(id).matches()}, the
 * call KIP-1239's {@code remoteConsumerOffsets(Pattern, ...)} makes for every group id.
 *
 * <p>Input, one record a line, strings as lower-case hex of their UTF-8 bytes (so patterns and ids
 * may hold tabs, line terminators and anything else): {@code P <hex>} starts a pattern, {@code I
 * <hex>} is an id to match against the last pattern. Output, one line per input line: for {@code
 * P}, {@code OK} or {@code ERR <index> <hex of the description>} (a PatternSyntaxException); for
 * {@code I}, {@code 1} or {@code 0} ({@code -} after a pattern that did not compile).
 */
final class PatternMatches {
  private PatternMatches() {}

  static Object run(List<String> args, PrintStream out)
      throws IOException, Args.UsageException {
    if (!args.isEmpty()) {
      throw new Args.UsageException("pattern-matches takes no options; it reads stdin");
    }
    HexFormat hex = HexFormat.of();
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    Pattern pattern = null;
    String line;
    while ((line = in.readLine()) != null) {
      if (line.length() < 2 || line.charAt(1) != ' ') {
        throw new Args.UsageException("bad input line: " + line);
      }
      String text = new String(hex.parseHex(line.substring(2)), StandardCharsets.UTF_8);
      switch (line.charAt(0)) {
        case 'P' -> {
          try {
            pattern = Pattern.compile(text);
            out.println("OK");
          } catch (PatternSyntaxException e) {
            pattern = null;
            byte[] what = e.getDescription().getBytes(StandardCharsets.UTF_8);
            out.println("ERR " + e.getIndex() + " " + hex.formatHex(what));
          }
        }
        case 'I' -> out.println(pattern == null ? "-" : pattern.matcher(text).matches() ? "1" : "0");
        default -> throw new Args.UsageException("bad input line: " + line);
      }
    }
    return null;
  }
}
