package dev.mm2offsets.reference;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.utils.AppInfoParser;

/**
 * {@code consume}: the Java consumer's bare read of a whole topic, the JVM peer of "kcat to
 * /dev/null" in the benchmarks. Every partition is assigned (no group, nothing committed), read
 * from the beginning to the end offsets snapshotted at the start, with the consumer's default
 * fetch sizes; records are counted, not decoded.
 */
final class Consume {
  private Consume() {}

  static Object run(List<String> argv) throws Exception {
    Args args =
        Args.parse(
            "consume",
            argv,
            Set.of("bootstrap-server", "property-file", "topic", "timeout-ms"),
            Set.of("property"));
    String topic = args.required("topic");
    long timeoutMs = args.requiredNonNegativeLong("timeout-ms");
    Map<String, Object> props = ClientProps.from(args);
    props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");

    Timing timing = new Timing();
    long started = timing.start();
    long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
    long records = 0;
    long keyValueBytes = 0;
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
      List<PartitionInfo> infos = consumer.partitionsFor(topic, Duration.ofMillis(timeoutMs));
      if (infos == null || infos.isEmpty()) {
        throw new Commands.ToolError("consume: topic '" + topic + "' does not exist");
      }
      List<TopicPartition> partitions = new ArrayList<>();
      for (PartitionInfo info : infos) {
        partitions.add(new TopicPartition(topic, info.partition()));
      }
      consumer.assign(partitions);
      consumer.seekToBeginning(partitions);
      Map<TopicPartition, Long> ends = new HashMap<>(consumer.endOffsets(partitions));
      ends.entrySet().removeIf(e -> consumer.position(e.getKey()) >= e.getValue());
      while (!ends.isEmpty()) {
        if (System.nanoTime() > deadline) {
          throw new Commands.ToolError("consume: not at the end of " + ends.keySet()
              + " after " + timeoutMs + " ms");
        }
        ConsumerRecords<byte[], byte[]> batch = consumer.poll(Duration.ofMillis(100));
        for (ConsumerRecord<byte[], byte[]> record : batch) {
          records++;
          keyValueBytes += Math.max(0, record.serializedKeySize())
              + Math.max(0, record.serializedValueSize());
        }
        ends.entrySet().removeIf(e -> consumer.position(e.getKey()) >= e.getValue());
      }
    }
    timing.stop(started);
    Map<String, Object> out = new HashMap<>();
    out.put("records", records);
    out.put("key_value_bytes", keyValueBytes);
    out.put("timing", timing.toTree());
    out.put("kafka_version", AppInfoParser.getVersion());
    return out;
  }
}
