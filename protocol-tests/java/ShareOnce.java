import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * A share consumer (KIP-932) for the share failover suite (protocol-tests/tests/share_failover.rs):
 * joins share group GROUP on TOPIC, acknowledges (ACCEPT, explicit mode, commitSync after every
 * poll) every record it keeps, stops once it kept MAX records, and prints one JSON line per
 * partition: the first offset it received there, that record's value, and how many it kept.
 * Records delivered past MAX are not acknowledged: closing releases them (they stay in flight
 * for the group, to be delivered again), as a consumer that stops mid-batch does.
 *
 * <p>Usage: {@code ShareOnce --bootstrap B --group G --topic T --max N [--timeout-ms MS]
 * [--linger-ms MS] [--max-poll N] [--acquire-mode record_limit] [--earliest]}. With {@code --linger-ms} it stays a member that long after its
 * last record (releasing anything more it is given). With {@code --earliest} the group's {@code share.auto.offset.reset} is set to
 * earliest first (Admin incrementalAlterConfigs on the GROUP resource): a new share group
 * otherwise starts at the latest offset.
 */
public final class ShareOnce {
  public static void main(String[] args) throws Exception {
    Map<String, String> opts = new TreeMap<>();
    boolean earliest = false;
    for (int i = 0; i < args.length; i++) {
      if (args[i].equals("--earliest")) {
        earliest = true;
      } else if (i + 1 < args.length) {
        opts.put(args[i], args[++i]);
      } else {
        System.err.println("usage: ShareOnce --bootstrap B --group G --topic T --max N");
        System.exit(2);
      }
    }
    String bootstrap = opts.get("--bootstrap");
    String group = opts.get("--group");
    String topic = opts.get("--topic");
    int max = Integer.parseInt(opts.getOrDefault("--max", "1"));
    long timeoutMs = Long.parseLong(opts.getOrDefault("--timeout-ms", "30000"));
    long lingerMs = Long.parseLong(opts.getOrDefault("--linger-ms", "0"));
    if (earliest) {
      Properties a = new Properties();
      a.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
      try (Admin admin = Admin.create(a)) {
        ConfigResource r = new ConfigResource(ConfigResource.Type.GROUP, group);
        admin
            .incrementalAlterConfigs(
                Map.of(
                    r,
                    List.of(
                        new AlterConfigOp(
                            new ConfigEntry("share.auto.offset.reset", "earliest"),
                            AlterConfigOp.OpType.SET))))
            .all()
            .get();
      }
    }
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
    p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    p.put("share.acknowledgement.mode", "explicit");
    // Small acquisitions (KIP-1206's record_limit mode caps them at max.poll.records): the
    // start offset moves past whole acquired batches only, and one acquisition of a whole
    // partition would keep it at the log start however much was acknowledged.
    p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, opts.getOrDefault("--max-poll", "500"));
    p.put("share.acquire.mode", opts.getOrDefault("--acquire-mode", "batch_optimized"));
    Map<Integer, long[]> first = new TreeMap<>(); // partition -> {first offset, kept}
    Map<Integer, String> firstValue = new TreeMap<>();
    int kept = 0;
    long deadline = System.currentTimeMillis() + timeoutMs;
    try (KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(p)) {
      consumer.subscribe(List.of(topic));
      while (kept < max && System.currentTimeMillis() < deadline) {
        ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(500));
        for (ConsumerRecord<String, String> r : records) {
          if (kept >= max) {
            // Not ours to keep: given back, so the group delivers it again.
            consumer.acknowledge(r, AcknowledgeType.RELEASE);
            continue;
          }
          long[] f = first.computeIfAbsent(r.partition(), k -> new long[] {r.offset(), 0});
          if (f[1] == 0) {
            firstValue.put(r.partition(), r.value());
          }
          f[0] = Math.min(f[0], r.offset());
          f[1]++;
          kept++;
          consumer.acknowledge(r, AcknowledgeType.ACCEPT);
        }
        if (!records.isEmpty()) {
          consumer.commitSync();
        }
      }
      // Still a member for a while after the last record (a live share group to refuse). It
      // sleeps instead of polling: the heartbeats run in the consumer's background thread, and
      // a poll-and-release loop would acquire the same records again on every poll, until
      // group.share.delivery.count.limit (5) deliveries made the broker archive them and move
      // the start offset past records nobody kept (seen: the start offset at 299 of 300).
      Thread.sleep(lingerMs);
    }
    for (Map.Entry<Integer, long[]> e : first.entrySet()) {
      System.out.printf(
          "{\"partition\":%d,\"first_offset\":%d,\"first_value\":\"%s\",\"kept\":%d}%n",
          e.getKey(), e.getValue()[0], firstValue.get(e.getKey()), e.getValue()[1]);
    }
    System.out.printf("{\"kept\":%d}%n", kept);
    System.exit(kept >= max ? 0 : 1);
  }
}
