package dev.mm2offsets.reference;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * In-process wall time of each Kafka API call ({@link System#nanoTime}), so a benchmark can separate
 * the cost of the calls from JVM start-up and class loading of the whole process.
 *
 * <p>{@code total_ms} is the wall time from the start of the first call to the end of the last,
 * which includes the (tiny) bookkeeping between calls; {@code per_call_ms} lists each call in order.
 */
final class Timing {
  private final List<Long> perCallNanos = new ArrayList<>();
  private long firstStart = -1;
  private long lastEnd = -1;

  long start() {
    long now = System.nanoTime();
    if (firstStart < 0) {
      firstStart = now;
    }
    return now;
  }

  void stop(long started) {
    long now = System.nanoTime();
    perCallNanos.add(now - started);
    lastEnd = now;
  }

  Map<String, Object> toTree() {
    List<Object> perCall = new ArrayList<>();
    for (long nanos : perCallNanos) {
      perCall.add(new Json.Raw(millis(nanos)));
    }
    Map<String, Object> out = new HashMap<>();
    out.put("calls", perCallNanos.size());
    out.put("per_call_ms", perCall);
    out.put("total_ms", new Json.Raw(millis(firstStart < 0 ? 0 : lastEnd - firstStart)));
    return out;
  }

  /** Milliseconds with microsecond resolution, as a plain JSON number ("12.345"). */
  static String millis(long nanos) {
    return String.format(Locale.ROOT, "%.3f", nanos / 1_000_000.0);
  }
}
