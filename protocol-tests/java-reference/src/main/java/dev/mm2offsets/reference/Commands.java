package dev.mm2offsets.reference;

import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.AppInfoParser;
import org.apache.kafka.connect.mirror.MirrorClient;
import org.apache.kafka.connect.mirror.RemoteClusterUtils;

/** The read-only commands: each calls the real Kafka API and returns a JSON-ready tree. */
final class Commands {
  private static final Set<String> CLIENT_OPTIONS =
      Set.of("bootstrap-server", "property-file");
  private static final Set<String> CLIENT_REPEATABLE = Set.of("property");

  private Commands() {}

  /** {@code translate}: the pre-4.3 single-group API, called once per group. */
  static Object translate(List<String> argv) throws Exception {
    Args args =
        Args.parse(
            "translate",
            argv,
            union(CLIENT_OPTIONS, Set.of("source", "groups-file", "timeout-ms")),
            union(CLIENT_REPEATABLE, Set.of("group")));
    String source = args.required("source");
    Duration timeout = Duration.ofMillis(args.requiredNonNegativeLong("timeout-ms"));
    Set<String> groups = new LinkedHashSet<>(args.all("group"));
    String groupsFile = args.optional("groups-file");
    if (groupsFile != null) {
      groups.addAll(readGroupsFile(groupsFile));
    }
    if (groups.isEmpty()) {
      throw new Args.UsageException("translate: no groups: pass --group G and/or --groups-file F");
    }
    Map<String, Object> props = ClientProps.from(args);

    Timing timing = new Timing();
    Map<String, Object> result = new HashMap<>();
    for (String group : groups) {
      Map<TopicPartition, OffsetAndMetadata> offsets;
      long started = timing.start();
      try {
        offsets = RemoteClusterUtils.translateOffsets(props, source, group, timeout);
      } catch (Exception e) {
        throw new CallFailed(
            "RemoteClusterUtils.translateOffsets(source='" + source + "', group='" + group
                + "', timeout=" + timeout.toMillis() + "ms) failed after "
                + Timing.millis(System.nanoTime() - started) + " ms",
            e);
      }
      timing.stop(started);
      result.put(group, offsetsTree(offsets));
    }
    return document("groups", result, timing);
  }

  /** {@code translate-pattern}: one call of the KIP-1239 overload (Kafka 4.3+). */
  static Object translatePattern(List<String> argv) throws Exception {
    Args args =
        Args.parse(
            "translate-pattern",
            argv,
            union(CLIENT_OPTIONS, Set.of("source", "pattern", "timeout-ms")),
            CLIENT_REPEATABLE);
    String source = args.required("source");
    String regex = args.required("pattern");
    Duration timeout = Duration.ofMillis(args.requiredNonNegativeLong("timeout-ms"));
    Pattern pattern;
    try {
      pattern = Pattern.compile(regex);
    } catch (PatternSyntaxException e) {
      throw new Args.UsageException("translate-pattern: --pattern is not a Java regex: "
          + e.getDescription() + " near index " + e.getIndex());
    }
    Method overload = patternOverload();
    if (overload == null) {
      throw new ToolError(
          "translate-pattern needs RemoteClusterUtils.translateOffsets(Map, String, Pattern, Duration)"
              + " (KIP-1239, Kafka 4.3+), but this jar was built with Kafka client "
              + AppInfoParser.getVersion() + ". Rebuild with -Dkafka.version=4.3.1, or use"
              + " 'translate' (one call per group).");
    }
    Map<String, Object> props = ClientProps.from(args);

    Timing timing = new Timing();
    Map<String, Map<TopicPartition, OffsetAndMetadata>> byGroup;
    long started = timing.start();
    try {
      @SuppressWarnings("unchecked")
      Map<String, Map<TopicPartition, OffsetAndMetadata>> returned =
          (Map<String, Map<TopicPartition, OffsetAndMetadata>>)
              overload.invoke(null, props, source, pattern, timeout);
      byGroup = returned;
    } catch (InvocationTargetException e) {
      throw new CallFailed(
          "RemoteClusterUtils.translateOffsets(source='" + source + "', pattern='" + regex
              + "', timeout=" + timeout.toMillis() + "ms) failed after "
              + Timing.millis(System.nanoTime() - started) + " ms",
          e.getCause());
    }
    timing.stop(started);
    Map<String, Object> result = new HashMap<>();
    for (Map.Entry<String, Map<TopicPartition, OffsetAndMetadata>> entry : byGroup.entrySet()) {
      result.put(entry.getKey(), offsetsTree(entry.getValue()));
    }
    return document("groups", result, timing);
  }

  /** {@code topology}: what MirrorClient reports about the cluster's MM2 topics. */
  static Object topology(List<String> argv) throws Exception {
    Args args =
        Args.parse(
            "topology", argv, CLIENT_OPTIONS, union(CLIENT_REPEATABLE, Set.of("alias")));
    Map<String, Object> props = ClientProps.from(args);
    Timing timing = new Timing();
    Map<String, Object> out = new HashMap<>();

    long started = timing.start();
    out.put("heartbeat_topics", sortedSet(call("RemoteClusterUtils.heartbeatTopics",
        started, () -> RemoteClusterUtils.heartbeatTopics(props))));
    timing.stop(started);

    started = timing.start();
    out.put("checkpoint_topics", sortedSet(call("RemoteClusterUtils.checkpointTopics",
        started, () -> RemoteClusterUtils.checkpointTopics(props))));
    timing.stop(started);

    started = timing.start();
    out.put("upstream_clusters", sortedSet(call("RemoteClusterUtils.upstreamClusters",
        started, () -> RemoteClusterUtils.upstreamClusters(props))));
    timing.stop(started);

    // RemoteClusterUtils has no remoteTopics(); build and close the client inside the timed
    // region so this call costs the same kind of work as the static helpers above.
    started = timing.start();
    out.put("remote_topics", sortedSet(call("MirrorClient.remoteTopics", started, () -> {
      try (MirrorClient client = new MirrorClient(props)) {
        return client.remoteTopics();
      }
    })));
    timing.stop(started);

    Map<String, Object> hops = new HashMap<>();
    for (String alias : new LinkedHashSet<>(args.all("alias"))) {
      long t = timing.start();
      hops.put(alias, call("RemoteClusterUtils.replicationHops(alias='" + alias + "')", t,
          () -> RemoteClusterUtils.replicationHops(props, alias)));
      timing.stop(t);
    }
    out.put("replication_hops", hops);
    out.put("timing", timing.toTree());
    out.put("kafka_version", AppInfoParser.getVersion());
    return out;
  }

  /** {@code version}: which Kafka client this jar carries. */
  static Object version(List<String> argv) throws Exception {
    Args.parse("version", argv, Set.of(), Set.of());
    Map<String, Object> out = new HashMap<>();
    out.put("kafka_version", AppInfoParser.getVersion());
    out.put("kafka_commit", AppInfoParser.getCommitId());
    out.put("pattern_overload", patternOverload() != null);
    return out;
  }

  /** The KIP-1239 method, looked up by reflection so this source also compiles against 3.9. */
  static Method patternOverload() {
    try {
      return RemoteClusterUtils.class.getMethod(
          "translateOffsets", Map.class, String.class, Pattern.class, Duration.class);
    } catch (NoSuchMethodException e) {
      return null;
    }
  }

  /** topic -> partition (numeric key, printed as a string) -> {offset, metadata}. */
  static Map<String, Object> offsetsTree(Map<TopicPartition, OffsetAndMetadata> offsets) {
    Map<String, Object> byTopic = new HashMap<>();
    for (Map.Entry<TopicPartition, OffsetAndMetadata> entry : offsets.entrySet()) {
      @SuppressWarnings("unchecked")
      Map<Integer, Object> partitions =
          (Map<Integer, Object>) byTopic.computeIfAbsent(entry.getKey().topic(), t -> new HashMap<>());
      Map<String, Object> value = new HashMap<>();
      value.put("offset", entry.getValue().offset());
      value.put("metadata", entry.getValue().metadata());
      partitions.put(entry.getKey().partition(), value);
    }
    return byTopic;
  }

  private static Map<String, Object> document(String key, Object value, Timing timing) {
    Map<String, Object> out = new HashMap<>();
    out.put(key, value);
    out.put("timing", timing.toTree());
    out.put("kafka_version", AppInfoParser.getVersion());
    return out;
  }

  private static List<String> readGroupsFile(String file) throws IOException {
    List<String> groups = new ArrayList<>();
    for (String line : Files.readAllLines(Path.of(file), StandardCharsets.UTF_8)) {
      // readAllLines already splits at \n, \r\n and \r, so each line is one group id verbatim.
      if (!line.isEmpty()) {
        groups.add(line);
      }
    }
    return groups;
  }

  private static List<String> sortedSet(Set<String> values) {
    return Json.sorted(values);
  }

  private static Set<String> union(Set<String> a, Set<String> b) {
    Set<String> all = new LinkedHashSet<>(a);
    all.addAll(b);
    return all;
  }

  /** A Kafka call that may throw anything. */
  @FunctionalInterface
  interface KafkaCall<T> {
    T call() throws Exception;
  }

  private static <T> T call(String what, long started, KafkaCall<T> body) throws CallFailed {
    try {
      return body.call();
    } catch (Exception e) {
      throw new CallFailed(
          what + " failed after " + Timing.millis(System.nanoTime() - started) + " ms", e);
    }
  }

  /** An error whose message is written for the user (printed without a Java class name). */
  static class ToolError extends Exception {
    private static final long serialVersionUID = 1L;

    ToolError(String message) {
      super(message);
    }

    ToolError(String message, Throwable cause) {
      super(message, cause);
    }
  }

  /** Names the Java API call that failed (and how long it ran) in front of Kafka's own error. */
  static final class CallFailed extends ToolError {
    private static final long serialVersionUID = 1L;

    CallFailed(String message, Throwable cause) {
      super(message, cause);
    }
  }
}
