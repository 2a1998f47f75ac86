import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Writes deterministic test data into a real Kafka-compatible broker through the real Java
 * producer, so the Rust integration tests can read bytes that a reference client wrote.
 *
 * <p>Usage: {@code DataWriter COMMAND --bootstrap HOST:PORT --topic T [options]}. Each write
 * command creates the topic first (Admin, replication factor 1) unless {@code --no-create}, and
 * prints one JSON summary on stdout. Logs go to stderr. Exit code 0 on success, 1 on failure, 2 on
 * a usage error. See protocol-tests/harness/NOTES.md for the exact data each command writes.
 */
public final class DataWriter {
  private static final String USAGE =
      String.join(
          "\n",
          "usage: DataWriter COMMAND --bootstrap HOST:PORT --topic T [options]",
          "commands:",
          "  create        create the topic only",
          "  records       --count N (100) --nulls K (3) --headers --timestamp-base MS",
          "                --value-bytes N (values padded with '.' to N bytes)",
          "                --flush-every K (0 = never) --idempotence true|false (true)",
          "  transactions  --txn-size N (10) --plan commit,abort,commit --transactional-id ID",
          "  raw           --file F   (lines: 'PARTITION KEYHEX|- VALUEHEX|- [TIMESTAMP]', '-' = null)",
          "                --summary-only (no per-line offsets in the output)",
          "                --plan STEP,... --transactional-id ID: STEP is plain:N (the next N lines",
          "                through a plain producer), txn:N (through the open transaction, begun if",
          "                none is), commit or abort (end it); the steps must cover every line",
          "  consume       --isolation read_committed|read_uncommitted (read_uncommitted)",
          "                [--expect N: read on until N records, asking the end offsets again]",
          "common options:",
          "  --partitions P (1)  --compact  --no-create  --compression none|gzip|snappy|lz4|zstd",
          "  --batch-size BYTES (16384)  --linger-ms MS (100)  --config KEY=VALUE (repeatable;",
          "  extra client settings, e.g. security.protocol=SSL)  --timeout-ms MS (120000)");

  private final Map<String, List<String>> opts;
  private final String bootstrap;
  private final String topic;
  private final int partitions;
  private final long timeoutMs;

  private DataWriter(Map<String, List<String>> opts) {
    this.opts = opts;
    this.bootstrap = required("bootstrap");
    this.topic = required("topic");
    this.partitions = intOpt("partitions", 1);
    // Two minutes: the harness starts several brokers and MirrorMaker 2 beside a compiler on two
    // cores, and a slow CI machine once needed more than 30 s for the first metadata answer.
    this.timeoutMs = longOpt("timeout-ms", 120_000);
    if (partitions < 1) {
      throw new UsageException("--partitions must be at least 1");
    }
  }

  public static void main(String[] args) {
    try {
      if (args.length < 1 || args[0].startsWith("-")) {
        throw new UsageException("missing COMMAND");
      }
      String command = args[0];
      DataWriter w = new DataWriter(parse(args));
      String json;
      switch (command) {
        case "create":
          w.createTopic();
          json = "{\"command\":\"create\",\"topic\":" + q(w.topic) + ",\"partitions\":" + w.partitions + "}";
          break;
        case "records":
          json = w.records();
          break;
        case "transactions":
          json = w.transactions();
          break;
        case "raw":
          json = w.raw();
          break;
        case "consume":
          w.consume();
          json = null;
          break;
        default:
          throw new UsageException("unknown command '" + command + "'");
      }
      if (json != null) {
        System.out.println(json);
      }
      System.out.flush();
      System.exit(0);
    } catch (UsageException e) {
      System.err.println("DataWriter: " + e.getMessage());
      System.err.println(USAGE);
      System.exit(2);
    } catch (Exception e) {
      System.err.println("DataWriter failed: " + e);
      e.printStackTrace(System.err);
      System.exit(1);
    }
  }

  // ---------------------------------------------------------------- commands

  /** key-<i>/value-<i> round robin over the partitions, then K records with null values. */
  private String records() throws Exception {
    int count = intOpt("count", 100);
    int nulls = intOpt("nulls", 3);
    int flushEvery = intOpt("flush-every", 0);
    boolean headers = flag("headers");
    Long tsBase = opts.containsKey("timestamp-base") ? longOpt("timestamp-base", 0) : null;
    int valueBytes = intOpt("value-bytes", 0);
    createTopicUnlessSkipped();
    Properties p = producerProps();
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, opt("idempotence", "true"));
    List<Future<RecordMetadata>> sent = new ArrayList<>();
    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
      for (int i = 0; i < count + nulls; i++) {
        byte[] key = utf8("key-" + i);
        byte[] value = i < count ? padded(utf8("value-" + i), valueBytes) : null;
        ProducerRecord<byte[], byte[]> r =
            new ProducerRecord<>(topic, i % partitions, tsBase == null ? null : tsBase + i, key, value);
        if (headers) {
          r.headers().add("idx", utf8(Integer.toString(i)));
        }
        sent.add(producer.send(r));
        if (flushEvery > 0 && (i + 1) % flushEvery == 0) {
          producer.flush();
        }
      }
      producer.flush();
    }
    Summary s = new Summary();
    for (Future<RecordMetadata> f : sent) {
      s.add(f.get());
    }
    return "{\"command\":\"records\",\"topic\":" + q(topic) + ",\"count\":" + count + ",\"nulls\":" + nulls
        + ",\"records\":" + sent.size() + ",\"partitions\":" + s.json(endOffsets()) + "}";
  }

  /** {@code value} followed by '.' up to {@code size} bytes (unchanged when already as long). */
  private static byte[] padded(byte[] value, int size) {
    if (value.length >= size) {
      return value;
    }
    byte[] out = java.util.Arrays.copyOf(value, size);
    java.util.Arrays.fill(out, value.length, size, (byte) '.');
    return out;
  }

  /** Transactions per --plan, each --txn-size records key-<i>/value-<i> (i counts across all). */
  private String transactions() throws Exception {
    int size = intOpt("txn-size", 10);
    String[] plan = opt("plan", "commit,abort,commit").split(",");
    for (String outcome : plan) {
      if (!outcome.equals("commit") && !outcome.equals("abort")) {
        throw new UsageException("--plan entries must be commit or abort, not '" + outcome + "'");
      }
    }
    createTopicUnlessSkipped();
    Properties p = producerProps();
    p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, opt("transactional-id", "mm2o-datawriter-" + topic));
    StringBuilder txns = new StringBuilder("[");
    Summary committed = new Summary();
    int i = 0;
    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
      producer.initTransactions();
      for (int t = 0; t < plan.length; t++) {
        producer.beginTransaction();
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        int first = i;
        for (int j = 0; j < size; j++, i++) {
          sent.add(producer.send(new ProducerRecord<>(topic, i % partitions, utf8("key-" + i), utf8("value-" + i))));
        }
        producer.flush();
        Summary s = new Summary();
        for (Future<RecordMetadata> f : sent) {
          s.add(f.get());
        }
        if (plan[t].equals("commit")) {
          producer.commitTransaction();
          for (Future<RecordMetadata> f : sent) {
            committed.add(f.get());
          }
        } else {
          producer.abortTransaction();
        }
        txns.append(t == 0 ? "" : ",")
            .append("{\"txn\":").append(t + 1)
            .append(",\"outcome\":").append(q(plan[t]))
            .append(",\"first_index\":").append(first)
            .append(",\"last_index\":").append(i - 1)
            .append(",\"partitions\":").append(s.json(null)).append('}');
      }
    }
    txns.append(']');
    return "{\"command\":\"transactions\",\"topic\":" + q(topic) + ",\"txn_size\":" + size
        + ",\"transactions\":" + txns + ",\"committed\":" + committed.json(null)
        + ",\"partitions\":" + endOffsetsJson() + "}";
  }

  /**
   * One record per line of --file: 'PARTITION KEYHEX|- VALUEHEX|-', sent in file order. The file is
   * read twice, once to check every line (and the --plan) before anything is created or sent, then
   * to send, so a file of millions of lines needs no more heap than one line.
   */
  private String raw() throws Exception {
    Path file = Path.of(required("file"));
    boolean perLine = !flag("summary-only");
    List<String[]> plan = opts.containsKey("plan") ? parseRawPlan(opt("plan", "")) : null;
    if (plan == null && opts.containsKey("transactional-id")) {
      throw new UsageException("--transactional-id needs a --plan");
    }
    int count = 0;
    try (RawLines in = new RawLines(file)) {
      while (in.next() != null) {
        count++;
      }
    }
    if (plan != null) {
      long planned = 0;
      for (String[] step : plan) {
        planned += step.length == 2 ? Long.parseLong(step[1]) : 0;
      }
      if (planned != count) {
        throw new UsageException("--plan sends " + planned + " records but " + file + " holds " + count);
      }
    }
    createTopicUnlessSkipped();
    RawAcks acks = new RawAcks(perLine ? count : 0);
    StringBuilder txns = new StringBuilder("[");
    try (RawLines in = new RawLines(file);
        KafkaProducer<byte[], byte[]> plain = new KafkaProducer<>(producerProps())) {
      if (plan == null) {
        sendLines(plain, in, count, acks, 0);
      } else {
        Properties tp = producerProps();
        tp.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, opt("transactional-id", "mm2o-datawriter-raw-" + topic));
        try (KafkaProducer<byte[], byte[]> txn = new KafkaProducer<>(tp)) {
          txn.initTransactions();
          int txnNo = 0;
          int inTxn = 0;
          for (String[] step : plan) {
            switch (step[0]) {
              case "plain":
                sendLines(plain, in, Integer.parseInt(step[1]), acks, 0);
                break;
              case "txn":
                if (inTxn == 0) {
                  txn.beginTransaction();
                  txnNo++;
                }
                int n = Integer.parseInt(step[1]);
                sendLines(txn, in, n, acks, txnNo);
                inTxn += n;
                break;
              default: // commit or abort; parseRawPlan checked that a transaction is open
                if (step[0].equals("commit")) {
                  txn.commitTransaction();
                } else {
                  txn.abortTransaction();
                }
                txns.append(txns.length() == 1 ? "" : ",").append("{\"txn\":").append(txnNo)
                    .append(",\"outcome\":").append(q(step[0])).append(",\"records\":").append(inTxn).append('}');
                inTxn = 0;
            }
          }
        }
      }
    }
    txns.append(']');
    return "{\"command\":\"raw\",\"topic\":" + q(topic) + ",\"records\":" + count
        + (perLine ? ",\"offsets\":" + acks.offsetsJson(plan != null) : "")
        + (plan != null ? ",\"transactions\":" + txns : "")
        + ",\"partitions\":" + acks.summary.json(endOffsets()) + "}";
  }

  /**
   * --plan of raw: 'plain:N' (the next N lines through a plain producer), 'txn:N' (the next N lines
   * in the open transaction, begun if none is), 'commit' and 'abort' (end it). Each returned step is
   * {kind} or {kind, N}. A plain step may fall inside an open transaction: its records then sit in
   * the log between that transaction's own.
   */
  private static List<String[]> parseRawPlan(String text) {
    List<String[]> steps = new ArrayList<>();
    boolean open = false;
    for (String entry : text.split(",")) {
      String[] step = entry.split(":", -1);
      boolean counted = step.length == 2 && (step[0].equals("plain") || step[0].equals("txn"));
      boolean ends = step.length == 1 && (step[0].equals("commit") || step[0].equals("abort"));
      if (!counted && !ends) {
        throw new UsageException("--plan entries are plain:N, txn:N, commit or abort, not '" + entry + "'");
      }
      if (counted) {
        int n;
        try {
          n = Integer.parseInt(step[1]);
        } catch (NumberFormatException e) {
          n = -1;
        }
        if (n < 1) {
          throw new UsageException("--plan entry '" + entry + "' needs a count of at least 1");
        }
        open |= step[0].equals("txn");
      } else {
        if (!open) {
          throw new UsageException("--plan: '" + entry + "' with no transaction open");
        }
        open = false;
      }
      steps.add(step);
    }
    if (open) {
      throw new UsageException("--plan leaves a transaction open; end it with commit or abort");
    }
    return steps;
  }

  /**
   * Sends the next n lines through the producer and waits for their acknowledgements, so the log
   * holds them before anything sent after (by this or the other producer). txn is the transaction
   * number written in the per-line output, 0 outside a transaction.
   */
  private void sendLines(KafkaProducer<byte[], byte[]> producer, RawLines in, int n, RawAcks acks, int txn)
      throws Exception {
    for (int i = 0; i < n; i++) {
      ProducerRecord<byte[], byte[]> r = in.next();
      if (r == null) {
        throw new IllegalStateException("the file changed while it was being sent");
      }
      int index = acks.expect(in.lineNo(), txn);
      producer.send(r, (m, e) -> acks.done(index, m, e));
    }
    producer.flush();
    acks.check();
  }

  /** Acknowledgements of raw's sends, recorded from the producers' I/O threads. */
  private static final class RawAcks {
    private final int[] lines;
    private final int[] txns;
    private final int[] ackPartitions;
    private final long[] ackOffsets;
    private final Summary summary = new Summary();
    private int sent;
    private Exception failure;

    /** capacity: records whose line, partition and offset are kept for the output (0: none). */
    RawAcks(int capacity) {
      lines = new int[capacity];
      txns = new int[capacity];
      ackPartitions = new int[capacity];
      ackOffsets = new long[capacity];
    }

    synchronized int expect(int line, int txn) {
      if (sent < lines.length) {
        lines[sent] = line;
        txns[sent] = txn;
      }
      return sent++;
    }

    synchronized void done(int index, RecordMetadata m, Exception e) {
      if (e != null) {
        failure = failure == null ? e : failure;
        return;
      }
      summary.add(m);
      if (index < lines.length) {
        ackPartitions[index] = m.partition();
        ackOffsets[index] = m.offset();
      }
    }

    synchronized void check() throws Exception {
      if (failure != null) {
        throw failure;
      }
    }

    synchronized String offsetsJson(boolean withTxn) {
      StringBuilder b = new StringBuilder("[");
      for (int k = 0; k < sent; k++) {
        b.append(k == 0 ? "" : ",").append("{\"line\":").append(lines[k])
            .append(",\"partition\":").append(ackPartitions[k])
            .append(",\"offset\":").append(ackOffsets[k]);
        if (withTxn) {
          b.append(",\"txn\":").append(txns[k] == 0 ? "null" : Integer.toString(txns[k]));
        }
        b.append('}');
      }
      return b.append(']').toString();
    }
  }

  /** The records of a raw --file, parsed one line at a time. */
  private final class RawLines implements AutoCloseable {
    private final Path file;
    private final BufferedReader reader;
    private int lineNo;

    RawLines(Path file) throws IOException {
      this.file = file;
      this.reader = Files.newBufferedReader(file, StandardCharsets.UTF_8);
    }

    int lineNo() {
      return lineNo;
    }

    /** The next record, or null at the end of the file. */
    ProducerRecord<byte[], byte[]> next() throws IOException {
      String line;
      while ((line = reader.readLine()) != null) {
        lineNo++;
        String l = line.strip();
        if (l.isEmpty() || l.startsWith("#")) {
          continue;
        }
        String[] f = l.split("\\s+");
        if (f.length != 3 && f.length != 4) {
          throw new IllegalArgumentException(
              file + ":" + lineNo + ": want 'PARTITION KEYHEX|- VALUEHEX|- [TIMESTAMP]', got '" + l + "'");
        }
        Long timestamp = null;
        if (f.length == 4) {
          try {
            timestamp = Long.parseLong(f[3]);
          } catch (NumberFormatException e) {
            throw new IllegalArgumentException(file + ":" + lineNo + ": bad timestamp '" + f[3] + "'");
          }
        }
        int partition;
        try {
          partition = Integer.parseInt(f[0]);
        } catch (NumberFormatException e) {
          throw new IllegalArgumentException(file + ":" + lineNo + ": bad partition '" + f[0] + "'");
        }
        if (partition < 0 || partition >= partitions) {
          throw new IllegalArgumentException(
              file + ":" + lineNo + ": partition " + partition + " outside 0.." + (partitions - 1) + " (see --partitions)");
        }
        return new ProducerRecord<>(topic, partition, timestamp, hex(f[1], file, lineNo), hex(f[2], file, lineNo));
      }
      return null;
    }

    @Override
    public void close() throws IOException {
      reader.close();
    }
  }

  /** Prints every record up to the end offsets as one JSON object per line. */
  private void consume() throws Exception {
    String isolation = opt("isolation", "read_uncommitted");
    if (!isolation.equals("read_committed") && !isolation.equals("read_uncommitted")) {
      throw new UsageException("--isolation must be read_committed or read_uncommitted");
    }
    Properties p = clientProps();
    p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p)) {
      List<TopicPartition> tps = new ArrayList<>();
      for (int i = 0; i < describe().partitions().size(); i++) {
        tps.add(new TopicPartition(topic, i));
      }
      consumer.assign(tps);
      consumer.seekToBeginning(tps);
      // --expect N: the caller knows N records were written. Tansu can answer ListOffsets with
      // an end offset short of records it has just acknowledged (seen on zstd batches under
      // load: 98 of 201); the end offsets are then asked again until N records are read.
      long expect = Long.parseLong(opt("expect", "-1"));
      long seen = 0;
      Map<TopicPartition, Long> end = consumer.endOffsets(tps, Duration.ofMillis(timeoutMs));
      long deadline = System.currentTimeMillis() + timeoutMs;
      while (!caughtUp(consumer, end) || seen < expect) {
        if (System.currentTimeMillis() > deadline) {
          throw new IllegalStateException("consume did not reach the end offsets " + end
              + (expect >= 0 ? " and " + expect + " records (read " + seen + ")" : "")
              + " in " + timeoutMs + " ms");
        }
        if (caughtUp(consumer, end)) {
          end = consumer.endOffsets(tps, Duration.ofMillis(timeoutMs));
        }
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
          seen++;
          StringBuilder h = new StringBuilder("[");
          for (Header hd : r.headers()) {
            h.append(h.length() == 1 ? "" : ",").append("{\"key\":").append(q(hd.key()))
                .append(",\"value_hex\":").append(hexOrNull(hd.value())).append('}');
          }
          h.append(']');
          System.out.println("{\"partition\":" + r.partition() + ",\"offset\":" + r.offset()
              + ",\"timestamp\":" + r.timestamp()
              + ",\"key\":" + textOrNull(r.key()) + ",\"value\":" + textOrNull(r.value())
              + ",\"key_hex\":" + hexOrNull(r.key()) + ",\"value_hex\":" + hexOrNull(r.value())
              + ",\"headers\":" + h + "}");
        }
      }
    }
  }

  private static boolean caughtUp(KafkaConsumer<?, ?> c, Map<TopicPartition, Long> end) {
    for (Map.Entry<TopicPartition, Long> e : end.entrySet()) {
      if (c.position(e.getKey()) < e.getValue()) {
        return false;
      }
    }
    return true;
  }

  // ---------------------------------------------------------------- topic and offsets

  private void createTopicUnlessSkipped() throws Exception {
    if (!flag("no-create")) {
      createTopic();
    }
  }

  /** Creates the topic (RF 1); an existing topic is fine if its partition count matches. */
  private void createTopic() throws Exception {
    NewTopic nt = new NewTopic(topic, partitions, (short) 1);
    if (flag("compact")) {
      nt.configs(Map.of("cleanup.policy", "compact"));
    }
    try (Admin admin = Admin.create(clientProps())) {
      try {
        admin.createTopics(List.of(nt)).all().get();
      } catch (ExecutionException e) {
        if (!(e.getCause() instanceof TopicExistsException)) {
          throw e;
        }
      }
    }
    // Wait until every partition has a leader, so the first produce does not race the
    // controller; also checks that an existing topic has the partitions we were asked for.
    long deadline = System.currentTimeMillis() + timeoutMs;
    while (true) {
      TopicDescription d = null;
      try {
        d = describe();
      } catch (ExecutionException e) {
        // Metadata may not have reached the broker yet (UNKNOWN_TOPIC_OR_PARTITION).
      }
      if (d != null) {
        if (d.partitions().size() != partitions) {
          throw new IllegalStateException(
              "topic " + topic + " exists with " + d.partitions().size() + " partitions, not " + partitions);
        }
        if (d.partitions().stream().allMatch(tp -> tp.leader() != null && !tp.leader().isEmpty())) {
          return;
        }
      }
      if (System.currentTimeMillis() > deadline) {
        throw new IllegalStateException("topic " + topic + " has no leader for every partition after " + timeoutMs + " ms");
      }
      Thread.sleep(100);
    }
  }

  private TopicDescription describe() throws Exception {
    try (Admin admin = Admin.create(clientProps())) {
      return admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
    }
  }

  /** Log end offset (high watermark) of every partition of the topic. */
  private Map<Integer, Long> endOffsets() throws Exception {
    Map<TopicPartition, OffsetSpec> req = new HashMap<>();
    for (int i = 0; i < partitions; i++) {
      req.put(new TopicPartition(topic, i), OffsetSpec.latest());
    }
    Map<Integer, Long> out = new TreeMap<>();
    try (Admin admin = Admin.create(clientProps())) {
      admin.listOffsets(req, new ListOffsetsOptions(IsolationLevel.READ_UNCOMMITTED)).all().get()
          .forEach((tp, info) -> out.put(tp.partition(), info.offset()));
    }
    return out;
  }

  private String endOffsetsJson() throws Exception {
    StringBuilder b = new StringBuilder("[");
    for (Map.Entry<Integer, Long> e : endOffsets().entrySet()) {
      b.append(b.length() == 1 ? "" : ",").append("{\"partition\":").append(e.getKey())
          .append(",\"end_offset\":").append(e.getValue()).append('}');
    }
    return b.append(']').toString();
  }

  // ---------------------------------------------------------------- client settings

  private Properties clientProps() {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("client.id", "mm2o-datawriter");
    // One slow answer is retried within default.api.timeout.ms (--timeout-ms) rather than waited
    // for the clients' default of 30 s.
    p.put("request.timeout.ms", "10000");
    p.put("default.api.timeout.ms", Long.toString(timeoutMs));
    applyConfigOverrides(p);
    return p;
  }

  /** --config KEY=VALUE settings, applied last so they win over every default here. */
  private void applyConfigOverrides(Properties p) {
    for (String kv : opts.getOrDefault("config", List.of())) {
      int eq = kv.indexOf('=');
      if (eq <= 0) {
        throw new UsageException("--config wants KEY=VALUE, got '" + kv + "'");
      }
      p.put(kv.substring(0, eq), kv.substring(eq + 1));
    }
  }

  private Properties producerProps() {
    String compression = opt("compression", "none");
    if (!List.of("none", "gzip", "snappy", "lz4", "zstd").contains(compression)) {
      throw new UsageException("--compression must be none, gzip, snappy, lz4 or zstd");
    }
    Properties p = clientProps();
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, compression);
    p.put(ProducerConfig.BATCH_SIZE_CONFIG, Integer.toString(intOpt("batch-size", 16384)));
    p.put(ProducerConfig.LINGER_MS_CONFIG, Long.toString(longOpt("linger-ms", 100)));
    p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, Long.toString(Math.max(timeoutMs, 20_000)));
    p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, Long.toString(timeoutMs));
    // One request in flight keeps batches in send order even if a retry happens.
    p.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "1");
    p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    applyConfigOverrides(p);
    return p;
  }

  // ---------------------------------------------------------------- summaries and JSON

  /** Per-partition first/last offset and count of written records. */
  private static final class Summary {
    private final Map<Integer, long[]> byPartition = new TreeMap<>(); // first, last, count

    void add(RecordMetadata m) {
      long[] s = byPartition.computeIfAbsent(m.partition(), k -> new long[] {Long.MAX_VALUE, Long.MIN_VALUE, 0});
      s[0] = Math.min(s[0], m.offset());
      s[1] = Math.max(s[1], m.offset());
      s[2]++;
    }

    String json(Map<Integer, Long> end) {
      Map<Integer, long[]> all = new TreeMap<>(byPartition);
      if (end != null) {
        for (Integer p : end.keySet()) {
          all.putIfAbsent(p, null);
        }
      }
      StringBuilder b = new StringBuilder("[");
      for (Map.Entry<Integer, long[]> e : all.entrySet()) {
        long[] s = e.getValue();
        b.append(b.length() == 1 ? "" : ",").append("{\"partition\":").append(e.getKey());
        if (s == null) {
          b.append(",\"count\":0,\"first_offset\":null,\"last_offset\":null");
        } else {
          b.append(",\"count\":").append(s[2]).append(",\"first_offset\":").append(s[0])
              .append(",\"last_offset\":").append(s[1]);
        }
        if (end != null) {
          b.append(",\"end_offset\":").append(end.get(e.getKey()));
        }
        b.append('}');
      }
      return b.append(']').toString();
    }
  }

  private static String q(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      switch (c) {
        case '"': b.append("\\\""); break;
        case '\\': b.append("\\\\"); break;
        case '\n': b.append("\\n"); break;
        case '\r': b.append("\\r"); break;
        case '\t': b.append("\\t"); break;
        default:
          if (c < 0x20) {
            b.append(String.format("\\u%04x", (int) c));
          } else {
            b.append(c);
          }
      }
    }
    return b.append('"').toString();
  }

  /** The bytes as a JSON string if they are valid UTF-8, else null. */
  private static String textOrNull(byte[] b) {
    if (b == null) {
      return "null";
    }
    try {
      return q(StandardCharsets.UTF_8.newDecoder().decode(java.nio.ByteBuffer.wrap(b)).toString());
    } catch (CharacterCodingException e) {
      return "null";
    }
  }

  private static String hexOrNull(byte[] b) {
    if (b == null) {
      return "null";
    }
    StringBuilder s = new StringBuilder("\"");
    for (byte x : b) {
      s.append(Character.forDigit((x >> 4) & 0xf, 16)).append(Character.forDigit(x & 0xf, 16));
    }
    return s.append('"').toString();
  }

  private static byte[] hex(String s, Path file, int line) {
    if (s.equals("-")) {
      return null;
    }
    if (s.length() % 2 != 0) {
      throw new IllegalArgumentException(file + ":" + line + ": odd-length hex '" + s + "'");
    }
    byte[] out = new byte[s.length() / 2];
    for (int i = 0; i < out.length; i++) {
      int hi = Character.digit(s.charAt(2 * i), 16);
      int lo = Character.digit(s.charAt(2 * i + 1), 16);
      if (hi < 0 || lo < 0) {
        throw new IllegalArgumentException(file + ":" + line + ": not hex: '" + s + "'");
      }
      out[i] = (byte) (hi << 4 | lo);
    }
    return out;
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  // ---------------------------------------------------------------- argument parsing

  private static final java.util.Set<String> FLAGS = java.util.Set.of("compact", "no-create", "headers", "summary-only");

  private static Map<String, List<String>> parse(String[] args) {
    Map<String, List<String>> m = new LinkedHashMap<>();
    for (int i = 1; i < args.length; i++) {
      String a = args[i];
      if (!a.startsWith("--") || a.length() < 3) {
        throw new UsageException("unexpected argument '" + a + "'");
      }
      String name = a.substring(2);
      String value;
      if (FLAGS.contains(name)) {
        value = "true";
      } else {
        if (i + 1 >= args.length) {
          throw new UsageException(a + " needs a value");
        }
        value = args[++i];
      }
      m.computeIfAbsent(name, k -> new ArrayList<>()).add(value);
    }
    return m;
  }

  private String opt(String name, String dflt) {
    List<String> v = opts.get(name);
    return v == null ? dflt : v.get(v.size() - 1);
  }

  private String required(String name) {
    String v = opt(name, null);
    if (v == null) {
      throw new UsageException("--" + name + " is required");
    }
    return v;
  }

  private boolean flag(String name) {
    return opts.containsKey(name);
  }

  private int intOpt(String name, int dflt) {
    return (int) longOpt(name, dflt);
  }

  private long longOpt(String name, long dflt) {
    String v = opt(name, null);
    if (v == null) {
      return dflt;
    }
    try {
      long n = Long.parseLong(v);
      if (n < 0) {
        throw new UsageException("--" + name + " must not be negative");
      }
      return n;
    } catch (NumberFormatException e) {
      throw new UsageException("--" + name + " wants a number, got '" + v + "'");
    }
  }

  private static final class UsageException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    UsageException(String m) {
      super(m);
    }
  }
}
