package dev.mm2offsets.reference;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * {@code write-checkpoints}: a test helper that produces hand-made records into a checkpoints topic,
 * so the oracle (and the Rust tool) can be run against known data without a MirrorMaker.
 *
 * <p>Input, one record per line, fields separated by TAB; empty lines and lines starting with '#'
 * are skipped:
 *
 * <pre>
 * cp   GROUP  TOPIC  PARTITION  UPSTREAM  DOWNSTREAM  [METADATA]   a well-formed V0 checkpoint
 * raw  KEYHEX|-  VALUEHEX|-                                         any bytes; '-' = null
 * </pre>
 *
 * In the text fields of {@code cp} lines, {@code \\}, {@code \t}, {@code \n}, {@code \r} and
 * {@code \}{@code uXXXX} are unescaped, so any group or topic name can be written.
 *
 * <p>The encoding is MM2's Checkpoint: key = STRING group, STRING topic, INT32 partition; value =
 * INT16 version (0), INT64 upstream offset, INT64 downstream offset, STRING metadata; STRING is an
 * INT16 byte length followed by UTF-8; all big-endian.
 */
final class CheckpointWriter {
  private CheckpointWriter() {}

  static Object run(List<String> argv) throws Exception {
    Args args =
        Args.parse(
            "write-checkpoints",
            argv,
            Set.of("bootstrap-server", "property-file", "topic", "partition", "create-partitions",
                "input"),
            Set.of("property"));
    String topic = args.required("topic");
    int partition = intOption(args, "partition", 0);
    String input = args.required("input");
    List<byte[][]> records = parse(input);
    Map<String, Object> props = ClientProps.from(args);

    String partitions = args.optional("create-partitions");
    if (partitions != null) {
      createTopic(props, topic, intOption(args, "create-partitions", 1));
    }

    Map<String, Object> producerProps = new HashMap<>(props);
    producerProps.put(ProducerConfig.ACKS_CONFIG, "all");
    producerProps.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
    producerProps.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
    List<Object> offsets = new ArrayList<>();
    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerProps)) {
      // One synchronous send per record keeps log order = input order, which is what the
      // "last checkpoint wins" semantics are tested against.
      for (byte[][] record : records) {
        RecordMetadata meta =
            producer.send(new ProducerRecord<>(topic, partition, record[0], record[1])).get();
        offsets.add(meta.offset());
      }
    } catch (ExecutionException e) {
      throw new Commands.CallFailed("producing to " + topic + "-" + partition + " failed", e.getCause());
    }
    Map<String, Object> out = new HashMap<>();
    out.put("topic", topic);
    out.put("partition", partition);
    out.put("offsets", offsets);
    return out;
  }

  private static void createTopic(Map<String, Object> props, String topic, int partitions)
      throws Exception {
    Map<String, Object> adminProps = new HashMap<>(props);
    adminProps.putIfAbsent(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 30_000);
    try (Admin admin = Admin.create(adminProps)) {
      // Compacted like the real MM2 checkpoints topic; replication factor = broker default.
      NewTopic newTopic =
          new NewTopic(topic, Optional.of(partitions), Optional.empty())
              .configs(Map.of("cleanup.policy", "compact"));
      admin.createTopics(List.of(newTopic)).all().get();
    } catch (ExecutionException e) {
      if (!(e.getCause() instanceof TopicExistsException)) {
        throw new Commands.CallFailed("creating topic " + topic + " failed", e.getCause());
      }
    }
  }

  private static int intOption(Args args, String key, int fallback) throws Args.UsageException {
    String text = args.optional(key);
    if (text == null) {
      return fallback;
    }
    try {
      return Integer.parseInt(text);
    } catch (NumberFormatException e) {
      throw new Args.UsageException("write-checkpoints: --" + key + " must be an integer");
    }
  }

  static List<byte[][]> parse(String input) throws IOException, Args.UsageException {
    List<byte[][]> records = new ArrayList<>();
    try (BufferedReader reader =
        input.equals("-")
            ? new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))
            : Files.newBufferedReader(Path.of(input), StandardCharsets.UTF_8)) {
      String line;
      int lineNo = 0;
      while ((line = reader.readLine()) != null) {
        lineNo++;
        if (line.isEmpty() || line.startsWith("#")) {
          continue;
        }
        try {
          records.add(parseLine(line));
        } catch (IllegalArgumentException e) {
          throw new Args.UsageException(
              "write-checkpoints: " + input + " line " + lineNo + ": " + e.getMessage());
        }
      }
    }
    return records;
  }

  private static byte[][] parseLine(String line) {
    String[] f = line.split("\t", -1);
    switch (f[0]) {
      case "cp" -> {
        if (f.length != 6 && f.length != 7) {
          throw new IllegalArgumentException("cp wants 5 or 6 TAB-separated fields after 'cp'");
        }
        String group = unescape(f[1]);
        String topic = unescape(f[2]);
        int partition = Integer.parseInt(f[3]);
        long upstream = Long.parseLong(f[4]);
        long downstream = Long.parseLong(f[5]);
        String metadata = f.length == 7 ? unescape(f[6]) : "";
        return new byte[][] {
          checkpointKey(group, topic, partition), checkpointValue(upstream, downstream, metadata)
        };
      }
      case "raw" -> {
        if (f.length != 3) {
          throw new IllegalArgumentException("raw wants KEYHEX and VALUEHEX ('-' = null)");
        }
        return new byte[][] {hexOrNull(f[1]), hexOrNull(f[2])};
      }
      default -> throw new IllegalArgumentException("unknown record kind '" + f[0] + "'");
    }
  }

  static byte[] checkpointKey(String group, String topic, int partition) {
    byte[] g = kafkaString(group);
    byte[] t = kafkaString(topic);
    return ByteBuffer.allocate(g.length + t.length + 4).put(g).put(t).putInt(partition).array();
  }

  static byte[] checkpointValue(long upstream, long downstream, String metadata) {
    byte[] m = kafkaString(metadata);
    return ByteBuffer.allocate(2 + 8 + 8 + m.length)
        .putShort((short) 0)
        .putLong(upstream)
        .putLong(downstream)
        .put(m)
        .array();
  }

  /** Kafka's protocol STRING: INT16 length, then UTF-8 bytes (at most 32767). */
  private static byte[] kafkaString(String s) {
    byte[] utf8 = s.getBytes(StandardCharsets.UTF_8);
    if (utf8.length > Short.MAX_VALUE) {
      throw new IllegalArgumentException(
          "string of " + utf8.length + " UTF-8 bytes is longer than 32767; use a raw line");
    }
    return ByteBuffer.allocate(2 + utf8.length).putShort((short) utf8.length).put(utf8).array();
  }

  private static byte[] hexOrNull(String field) {
    return field.equals("-") ? null : HexFormat.of().parseHex(field.replace(" ", ""));
  }

  private static String unescape(String s) {
    StringBuilder out = new StringBuilder(s.length());
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c != '\\') {
        out.append(c);
        continue;
      }
      if (i + 1 >= s.length()) {
        throw new IllegalArgumentException("dangling backslash in '" + s + "'");
      }
      char next = s.charAt(++i);
      switch (next) {
        case '\\' -> out.append('\\');
        case 't' -> out.append('\t');
        case 'n' -> out.append('\n');
        case 'r' -> out.append('\r');
        case 'u' -> {
          if (i + 4 >= s.length()) {
            throw new IllegalArgumentException("\\u needs 4 hex digits in '" + s + "'");
          }
          out.append((char) Integer.parseInt(s.substring(i + 1, i + 5), 16));
          i += 4;
        }
        default -> throw new IllegalArgumentException("unknown escape \\" + next + " in '" + s + "'");
      }
    }
    return out.toString();
  }
}
