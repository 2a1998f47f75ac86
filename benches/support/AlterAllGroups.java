// The Java peer of benches/apply.sh: ONE JVM that commits the offsets of every group with
// Admin.alterConsumerGroupOffsets (all groups in flight at once, as Admin batches by
// coordinator) and reads them back with Admin.listConsumerGroupOffsets, then prints one JSON
// line: {"groups":N,"partitions":P,"commit_ms":...,"read_back_ms":...,"mismatches":M}.
//
// Usage: java -cp "KAFKA_LIB/*:DIR" AlterAllGroups BOOTSTRAP FILE
// FILE lines: group,topic,partition,offset (kafka-consumer-groups.sh --from-file's form with
// the group in front).
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

public final class AlterAllGroups {
  public static void main(String[] args) throws Exception {
    Map<String, Map<TopicPartition, OffsetAndMetadata>> wanted = new LinkedHashMap<>();
    for (String line : Files.readAllLines(Path.of(args[1]))) {
      if (line.isBlank()) continue;
      String[] f = line.split(",");
      wanted.computeIfAbsent(f[0], g -> new HashMap<>())
          .put(new TopicPartition(f[1], Integer.parseInt(f[2])), new OffsetAndMetadata(Long.parseLong(f[3])));
    }
    Properties props = new Properties();
    props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
    try (Admin admin = Admin.create(props)) {
      long t0 = System.nanoTime();
      Map<String, KafkaFuture<Void>> commits = new LinkedHashMap<>();
      for (Map.Entry<String, Map<TopicPartition, OffsetAndMetadata>> e : wanted.entrySet()) {
        commits.put(e.getKey(), admin.alterConsumerGroupOffsets(e.getKey(), e.getValue()).all());
      }
      for (KafkaFuture<Void> f : commits.values()) f.get(120, TimeUnit.SECONDS);
      long t1 = System.nanoTime();
      Map<String, ListConsumerGroupOffsetsSpec> specs = new HashMap<>();
      for (String g : wanted.keySet()) specs.put(g, new ListConsumerGroupOffsetsSpec());
      Map<String, Map<TopicPartition, OffsetAndMetadata>> got =
          admin.listConsumerGroupOffsets(specs).all().get(120, TimeUnit.SECONDS);
      long t2 = System.nanoTime();
      int partitions = 0;
      int mismatches = 0;
      for (Map.Entry<String, Map<TopicPartition, OffsetAndMetadata>> e : wanted.entrySet()) {
        Map<TopicPartition, OffsetAndMetadata> read = got.getOrDefault(e.getKey(), Map.of());
        for (Map.Entry<TopicPartition, OffsetAndMetadata> p : e.getValue().entrySet()) {
          partitions++;
          OffsetAndMetadata r = read.get(p.getKey());
          if (r == null || r.offset() != p.getValue().offset()) mismatches++;
        }
      }
      System.out.printf(
          "{\"groups\":%d,\"partitions\":%d,\"commit_ms\":%.1f,\"read_back_ms\":%.1f,\"mismatches\":%d}%n",
          wanted.size(), partitions, (t1 - t0) / 1e6, (t2 - t1) / 1e6, mismatches);
    }
  }
}
