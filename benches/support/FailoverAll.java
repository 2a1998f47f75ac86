// The Java peer of benches/apply.sh: ONE JVM doing the whole failover of many groups the way a
// Java operator would write it today (Kafka 4.3+):
//   1. translate: RemoteClusterUtils.translateOffsets(props, SOURCE, Pattern, timeout), the
//      KIP-1239 variant that reads the checkpoints topic once for every group the pattern matches;
//   2. commit: Admin.alterConsumerGroupOffsets for every translated group, all in flight at once;
//   3. read back: Admin.listConsumerGroupOffsets for every group in one call.
// Every answer is checked against FILE (the offsets the checkpoints were written with): the
// translation and the read-back, partition by partition. Prints one JSON line:
//   {"groups":N,"partitions":P,"translate_ms":..,"commit_ms":..,"read_back_ms":..,
//    "translate_mismatches":M,"read_back_mismatches":M}
// and exits 1 when anything differs or fails.
//
// Usage: java -cp "KAFKA_4_3_LIB/*:DIR" FailoverAll BOOTSTRAP SOURCE PATTERN FILE TIMEOUT_MS
// FILE lines: group,topic,partition,offset. Needs connect-mirror-client 4.3+ on the classpath.
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.mirror.RemoteClusterUtils;

public final class FailoverAll {
  public static void main(String[] args) throws Exception {
    if (args.length != 5) {
      System.err.println("usage: FailoverAll BOOTSTRAP SOURCE PATTERN FILE TIMEOUT_MS");
      System.exit(2);
    }
    String bootstrap = args[0];
    String source = args[1];
    Pattern pattern = Pattern.compile(args[2]);
    Map<String, Map<TopicPartition, Long>> expected = new LinkedHashMap<>();
    for (String line : Files.readAllLines(Path.of(args[3]))) {
      if (line.isBlank()) continue;
      String[] f = line.split(",");
      expected.computeIfAbsent(f[0], g -> new HashMap<>())
          .put(new TopicPartition(f[1], Integer.parseInt(f[2])), Long.parseLong(f[3]));
    }
    Duration timeout = Duration.ofMillis(Long.parseLong(args[4]));

    Map<String, Object> mirrorProps = new HashMap<>();
    mirrorProps.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    long t0 = System.nanoTime();
    Map<String, Map<TopicPartition, OffsetAndMetadata>> translated =
        RemoteClusterUtils.translateOffsets(mirrorProps, source, pattern, timeout);
    long t1 = System.nanoTime();
    int translateMismatches = mismatches(expected, translated);

    Properties props = new Properties();
    props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    // Every call is queued at once: with the default 60 s API timeout, 20,000 commits time out
    // "waiting to send" (Admin sends one request per broker at a time). Give the calls the
    // whole budget, as apply gets --timeout.
    props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) Math.min(Integer.MAX_VALUE, timeout.toMillis()));
    long t2, t3;
    int readBackMismatches;
    try (Admin admin = Admin.create(props)) {
      t2 = System.nanoTime();
      Map<String, KafkaFuture<Void>> commits = new LinkedHashMap<>();
      for (Map.Entry<String, Map<TopicPartition, OffsetAndMetadata>> e : translated.entrySet()) {
        commits.put(e.getKey(), admin.alterConsumerGroupOffsets(e.getKey(), e.getValue()).all());
      }
      for (KafkaFuture<Void> f : commits.values()) f.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
      long tCommit = System.nanoTime();
      Map<String, ListConsumerGroupOffsetsSpec> specs = new HashMap<>();
      for (String g : translated.keySet()) specs.put(g, new ListConsumerGroupOffsetsSpec());
      Map<String, Map<TopicPartition, OffsetAndMetadata>> got =
          admin.listConsumerGroupOffsets(specs).all().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
      t3 = System.nanoTime();
      readBackMismatches = mismatches(expected, got);
      System.out.printf(
          "{\"groups\":%d,\"partitions\":%d,\"translate_ms\":%.1f,\"commit_ms\":%.1f,\"read_back_ms\":%.1f,"
              + "\"translate_mismatches\":%d,\"read_back_mismatches\":%d}%n",
          translated.size(), count(translated), (t1 - t0) / 1e6, (tCommit - t2) / 1e6, (t3 - tCommit) / 1e6,
          translateMismatches, readBackMismatches);
    }
    if (translateMismatches != 0 || readBackMismatches != 0) System.exit(1);
  }

  private static int count(Map<String, Map<TopicPartition, OffsetAndMetadata>> m) {
    int n = 0;
    for (Map<TopicPartition, OffsetAndMetadata> g : m.values()) n += g.size();
    return n;
  }

  /** Partitions whose offset differs from the expected one, missing ones and extra ones. */
  private static int mismatches(
      Map<String, Map<TopicPartition, Long>> expected, Map<String, Map<TopicPartition, OffsetAndMetadata>> got) {
    int bad = 0;
    for (Map.Entry<String, Map<TopicPartition, Long>> e : expected.entrySet()) {
      Map<TopicPartition, OffsetAndMetadata> g = got.getOrDefault(e.getKey(), Map.of());
      for (Map.Entry<TopicPartition, Long> p : e.getValue().entrySet()) {
        OffsetAndMetadata o = g.get(p.getKey());
        if (o == null || o.offset() != p.getValue()) bad++;
      }
      bad += Math.max(0, g.size() - e.getValue().size());
    }
    for (String group : got.keySet()) {
      if (!expected.containsKey(group)) bad += got.get(group).size();
    }
    return bad;
  }
}
