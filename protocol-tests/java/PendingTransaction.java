import java.io.IOException;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Leaves a group with pending transactional offsets: an exactly-once producer begins a
 * transaction, writes one record to TOPIC partition 0, calls {@code sendOffsetsToTransaction}
 * for GROUP on TOPIC partition 0 at OFFSET, and then neither commits nor aborts. Until it does,
 * the group coordinator answers an OffsetFetch with {@code require_stable} by
 * UNSTABLE_OFFSET_COMMIT (KIP-447) for that partition.
 *
 * <p>Usage: {@code PendingTransaction --bootstrap HOST:PORT --group GROUP --topic TOPIC --offset N
 * --transactional-id ID}. Prints {@code pending} on stdout once the offsets are sent, then waits
 * for standard input to close; then it aborts the transaction and exits 0 (killed, the
 * transaction stays open until its timeout, 60 s).
 */
public final class PendingTransaction {
  private PendingTransaction() {}

  @SuppressWarnings("removal") // a group id is all sendOffsetsToTransaction needs here
  public static void main(String[] args) throws IOException {
    Map<String, String> opts = new java.util.HashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      opts.put(args[i], args[i + 1]);
    }
    for (String required :
        new String[] {"--bootstrap", "--group", "--topic", "--offset", "--transactional-id"}) {
      if (!opts.containsKey(required)) {
        System.err.println("PendingTransaction: " + required + " is required");
        System.exit(2);
      }
    }
    Properties props = new Properties();
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, opts.get("--bootstrap"));
    props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, opts.get("--transactional-id"));
    props.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "60000");
    props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    String topic = opts.get("--topic");
    TopicPartition tp = new TopicPartition(topic, 0);
    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
      producer.initTransactions();
      producer.beginTransaction();
      producer.send(new ProducerRecord<>(topic, 0, null, new byte[] {1}));
      producer.sendOffsetsToTransaction(
          Map.of(tp, new OffsetAndMetadata(Long.parseLong(opts.get("--offset")))),
          new ConsumerGroupMetadata(opts.get("--group")));
      producer.flush();
      System.out.println("pending");
      System.out.flush();
      while (System.in.read() >= 0) {
        // Hold the transaction open until standard input closes.
      }
      producer.abortTransaction();
    }
  }
}
