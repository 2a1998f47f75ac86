import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.internals.Exit;

/**
 * The Java side of the failover suite (protocol-tests/tests/failover_mm2.rs): real producers and
 * real consumers (classic and KIP-848 protocol) on both clusters, and kafka-consumer-groups.sh's
 * own code for the parity check. One JVM per phase; every group runs in its own thread.
 *
 * <p>Every record's value is {@code TOPIC|PARTITION|SEQ}, SEQ counting the records of that
 * partition from 0: on the primary SEQ is the record's offset (checked while producing), and on
 * the backup it names the upstream record a replicated one came from.
 *
 * <p>Commands (stdout: JSON only, one object per line; exit 1 on a failure, 2 on usage):
 * <ul>
 *   <li>{@code create --bootstrap B --topics T:P,T:P,...}: topics of P partitions each
 *   <li>{@code produce --bootstrap B --topic T --partitions P --per-partition N --rounds R}: N
 *       records per partition in R flushed rounds, 200 ms apart.
 *   <li>{@code consume-primary --bootstrap B --spec FILE}: SPEC lines {@code GROUP PROTOCOL TOPICS
 *       STOPS [METADATA]}, TOPICS comma-separated, STOPS {@code topic/partition=offset,...}: the
 *       group's consumer (subscribe) processes every record below its partition's stop, commits
 *       what it processed after every poll (with METADATA if given), never commits a partition
 *       that has no stop, then leaves. Prints the last processed SEQ and the committed offset.
 *   <li>{@code consume-backup --bootstrap B --spec FILE}: SPEC lines {@code GROUP PROTOCOL TOPICS};
 *       the group's consumer reads every partition from where the group stands to the end (no
 *       commit) and prints, per partition, the committed offset it started from, the first
 *       record read (offset and SEQ), every SEQ read and whether they are contiguous.
 *   <li>{@code produce-tx --bootstrap B --topic T --records N --txn-size S --abort-every K
 *       [--first-seq F]}: N records to partition 0 in transactions of S records, every K-th
 *       transaction aborted (SEQ counts every record sent, aborted ones too, from F, default 0),
 *       then prints the count of records and of aborted transactions.
 *   <li>{@code append --bootstrap B --topic T --counts N0,N1,...}: N0 more records on partition
 *       0, N1 on partition 1..., SEQ continuing from each partition's log end (so SEQ stays the
 *       offset); prints per partition the first offset, the count and the records' timestamps.
 *   <li>{@code consume-to --bootstrap B --spec FILE}: SPEC lines {@code GROUP PROTOCOL TOPICS
 *       STOPS}: the group's consumer (subscribe) starts where the group stands (the log start
 *       where it has no offset), processes every record below its partition's stop offset,
 *       commits exactly the stop, and leaves; a partition without a stop, or whose stop is not
 *       ahead of where the group stands, is paused and not committed. SEQ is not checked
 *       (replicas hold duplicates). Prints per partition the offset it started from.
 *   <li>{@code dump --bootstrap B --topic T[,T...]}: every partition's SEQs in offset order.
 *   <li>{@code delete-groups --bootstrap B --prefix P}: deletes every consumer group whose id
 *       starts with P (a benchmark's thousands of groups would slow MirrorMaker 2's checkpoint
 *       task, which lists every group each second, for every suite after it).
 *   <li>{@code committed --bootstrap B --groups G,G,...}: each group's committed offsets and
 *       metadata, as Admin.listConsumerGroupOffsets reads them.
 *   <li>{@code reset --bootstrap B --jobs FILE}: JOBS lines {@code GROUP CSV}; runs
 *       kafka-consumer-groups.sh's class (ConsumerGroupCommand) once per line, in this JVM:
 *       {@code --reset-offsets --group GROUP --from-file CSV --execute}.
 * </ul>
 */
public final class FailoverClient {
  private FailoverClient() {}

  public static void main(String[] args) throws Exception {
    if (args.length < 1) {
      usage("no command");
    }
    Map<String, String> o = options(args);
    String bootstrap = need(o, "bootstrap");
    switch (args[0]) {
      case "create" -> create(bootstrap, need(o, "topics"));
      case "produce" -> produce(bootstrap, need(o, "topic"), Integer.parseInt(need(o, "partitions")),
          Integer.parseInt(need(o, "per-partition")), Integer.parseInt(need(o, "rounds")));
      case "consume-primary" -> consumeAll(bootstrap, Path.of(need(o, "spec")), FailoverClient::consumePrimary);
      case "consume-backup" -> consumeAll(bootstrap, Path.of(need(o, "spec")), FailoverClient::consumeBackup);
      case "consume-to" -> consumeAll(bootstrap, Path.of(need(o, "spec")), FailoverClient::consumeToStops);
      case "produce-tx" -> produceTx(bootstrap, need(o, "topic"), Integer.parseInt(need(o, "records")),
          Integer.parseInt(need(o, "txn-size")), Integer.parseInt(need(o, "abort-every")),
          Integer.parseInt(o.getOrDefault("first-seq", "0")));
      case "append" -> append(bootstrap, need(o, "topic"), need(o, "counts"));
      case "dump" -> {
        for (String t : need(o, "topic").split(",")) {
          dump(bootstrap, t);
        }
      }
      case "committed" -> committed(bootstrap, List.of(need(o, "groups").split(",")));
      case "delete-groups" -> deleteGroups(bootstrap, need(o, "prefix"));
      case "reset" -> reset(bootstrap, Path.of(need(o, "jobs")));
      default -> usage("unknown command " + args[0]);
    }
  }

  private static Map<String, String> options(String[] args) {
    Map<String, String> out = new HashMap<>();
    for (int i = 1; i < args.length; i += 2) {
      if (!args[i].startsWith("--") || i + 1 >= args.length) {
        usage("bad option " + args[i]);
      }
      out.put(args[i].substring(2), args[i + 1]);
    }
    return out;
  }

  private static String need(Map<String, String> o, String key) {
    String v = o.get(key);
    if (v == null) {
      usage("--" + key + " is required");
    }
    return v;
  }

  private static void usage(String why) {
    System.err.println("FailoverClient: " + why + " (see the class comment for the commands)");
    System.exit(2);
  }

  private static Properties admin(String bootstrap) {
    Properties p = new Properties();
    p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 60_000);
    return p;
  }

  private static void create(String bootstrap, String topics) throws Exception {
    List<NewTopic> all = new ArrayList<>();
    for (String t : topics.split(",")) {
      int colon = t.lastIndexOf(':');
      all.add(new NewTopic(t.substring(0, colon), Integer.parseInt(t.substring(colon + 1)), (short) 1));
    }
    try (Admin a = Admin.create(admin(bootstrap))) {
      a.createTopics(all).all().get(60, TimeUnit.SECONDS);
    }
    System.out.println("{\"created\":" + all.size() + "}");
  }

  private static void produce(String bootstrap, String topic, int partitions, int perPartition, int rounds)
      throws Exception {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
    p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
    p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    int[] next = new int[partitions];
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
      for (int round = 0; round < rounds; round++) {
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        List<long[]> expected = new ArrayList<>();
        int upTo = (int) ((long) perPartition * (round + 1) / rounds);
        for (int part = 0; part < partitions; part++) {
          for (; next[part] < upTo; next[part]++) {
            String value = topic + "|" + part + "|" + next[part];
            sent.add(producer.send(new ProducerRecord<>(topic, part, "k" + next[part], value)));
            expected.add(new long[] {part, next[part]});
          }
        }
        producer.flush();
        for (int i = 0; i < sent.size(); i++) {
          RecordMetadata m = sent.get(i).get(60, TimeUnit.SECONDS);
          if (m.partition() != expected.get(i)[0] || m.offset() != expected.get(i)[1]) {
            throw new IllegalStateException("record " + expected.get(i)[1] + " of partition " + m.partition()
                + " landed at offset " + m.offset() + ": the topic was not empty or a send was retried");
          }
        }
        Thread.sleep(200);
      }
    }
    System.out.println("{\"topic\":\"" + topic + "\",\"per_partition\":" + perPartition + "}");
  }

  /** One line of a consume spec. */
  private record Spec(String group, String protocol, List<String> topics, Map<TopicPartition, Long> stops,
      String metadata) {}

  private static List<Spec> parseSpec(Path file) throws Exception {
    List<Spec> out = new ArrayList<>();
    for (String raw : Files.readAllLines(file, StandardCharsets.UTF_8)) {
      String line = raw.strip();
      if (line.isEmpty()) {
        continue;
      }
      String[] f = line.split(" ", 5);
      Map<TopicPartition, Long> stops = new LinkedHashMap<>();
      if (f.length >= 4 && !f[3].equals("-")) {
        for (String s : f[3].split(",")) {
          String[] tp = s.split("=");
          int slash = tp[0].lastIndexOf('/');
          stops.put(new TopicPartition(tp[0].substring(0, slash), Integer.parseInt(tp[0].substring(slash + 1))),
              Long.parseLong(tp[1]));
        }
      }
      out.add(new Spec(f[0], f[1], List.of(f[2].split(",")), stops, f.length == 5 ? f[4] : null));
    }
    return out;
  }

  private static Properties consumerProps(String bootstrap, Spec s) {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ConsumerConfig.GROUP_ID_CONFIG, s.group());
    p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, s.protocol());
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 500);
    p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    if (s.protocol().equals("classic")) {
      p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 10_000);
      p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 1_000);
    }
    return p;
  }

  private static long seqOf(ConsumerRecord<String, String> r) {
    String[] f = r.value().split("\\|");
    if (f.length != 3) {
      throw new IllegalStateException("record at " + r.topic() + "-" + r.partition() + "@" + r.offset()
          + " carries no TOPIC|PARTITION|SEQ: " + r.value());
    }
    return Long.parseLong(f[2]);
  }

  private static String key(TopicPartition tp) {
    return tp.topic() + "/" + tp.partition();
  }

  /** What one group's consumer does in a consume command; returns its JSON line. */
  @FunctionalInterface
  private interface GroupJob {
    String run(String bootstrap, Spec s) throws Exception;
  }

  private static void consumeAll(String bootstrap, Path specFile, GroupJob job) throws Exception {
    List<Spec> specs = parseSpec(specFile);
    ExecutorService pool = Executors.newFixedThreadPool(specs.size());
    Map<String, Future<String>> results = new LinkedHashMap<>();
    for (Spec s : specs) {
      results.put(s.group(), pool.submit(() -> job.run(bootstrap, s)));
    }
    pool.shutdown();
    int failed = 0;
    for (Map.Entry<String, Future<String>> e : results.entrySet()) {
      try {
        System.out.println(e.getValue().get(120, TimeUnit.SECONDS));
      } catch (Exception ex) {
        failed++;
        System.err.println("FailoverClient: group " + e.getKey() + " failed: " + ex);
      }
    }
    System.exit(failed == 0 ? 0 : 1);
  }

  private static String consumePrimary(String bootstrap, Spec s) throws Exception {
    Map<TopicPartition, Long> lastSeq = new TreeMap<>((a, b) -> key(a).compareTo(key(b)));
    Map<TopicPartition, OffsetAndMetadata> commit = new HashMap<>();
    long deadline = System.currentTimeMillis() + 90_000;
    try (KafkaConsumer<String, String> c = new KafkaConsumer<>(consumerProps(bootstrap, s))) {
      c.subscribe(s.topics());
      while (true) {
        ConsumerRecords<String, String> records = c.poll(Duration.ofMillis(200));
        Set<TopicPartition> pause = new HashSet<>();
        boolean progressed = false;
        for (ConsumerRecord<String, String> r : records) {
          TopicPartition tp = new TopicPartition(r.topic(), r.partition());
          long stop = s.stops().getOrDefault(tp, 0L);
          if (r.offset() >= stop) {
            pause.add(tp);
            continue;
          }
          long seq = seqOf(r);
          if (seq != r.offset()) {
            throw new IllegalStateException("primary record " + key(tp) + "@" + r.offset() + " has SEQ " + seq);
          }
          lastSeq.put(tp, seq);
          commit.put(tp, new OffsetAndMetadata(r.offset() + 1, s.metadata() == null ? "" : s.metadata()));
          progressed = true;
        }
        // A partition that must never be committed is paused as soon as it is assigned.
        for (TopicPartition tp : c.assignment()) {
          if (s.stops().getOrDefault(tp, 0L) == 0L) {
            pause.add(tp);
          }
        }
        c.pause(pause);
        if (progressed) {
          c.commitSync(commit);
        }
        boolean done = s.stops().entrySet().stream()
            .allMatch(e -> e.getValue() == 0L || (commit.containsKey(e.getKey())
                && commit.get(e.getKey()).offset() == e.getValue()));
        if (done) {
          break;
        }
        if (System.currentTimeMillis() > deadline) {
          throw new IllegalStateException("group " + s.group() + " did not reach its stops; committed " + commit);
        }
      }
    }
    StringBuilder sb = new StringBuilder("{\"group\":\"" + s.group() + "\",\"last_processed\":{");
    String sep = "";
    for (Map.Entry<TopicPartition, Long> e : lastSeq.entrySet()) {
      sb.append(sep).append('"').append(key(e.getKey())).append("\":").append(e.getValue());
      sep = ",";
    }
    return sb.append("}}").toString();
  }

  private static String consumeBackup(String bootstrap, Spec s) throws Exception {
    Map<TopicPartition, List<long[]>> seen = new TreeMap<>((a, b) -> key(a).compareTo(key(b)));
    Map<TopicPartition, Long> committedAtStart = new HashMap<>();
    Set<TopicPartition> all = new HashSet<>();
    long deadline = System.currentTimeMillis() + 90_000;
    try (KafkaConsumer<String, String> c = new KafkaConsumer<>(consumerProps(bootstrap, s))) {
      for (String t : s.topics()) {
        for (PartitionInfo pi : c.partitionsFor(t)) {
          all.add(new TopicPartition(t, pi.partition()));
        }
      }
      Map<TopicPartition, Long> ends = c.endOffsets(all);
      // What the group holds before this consumer reads anything: apply's commits.
      for (Map.Entry<TopicPartition, OffsetAndMetadata> e : c.committed(all).entrySet()) {
        if (e.getValue() != null) {
          committedAtStart.put(e.getKey(), e.getValue().offset());
        }
      }
      c.subscribe(s.topics());
      while (true) {
        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
          TopicPartition tp = new TopicPartition(r.topic(), r.partition());
          seen.computeIfAbsent(tp, k -> new ArrayList<>()).add(new long[] {r.offset(), seqOf(r)});
        }
        boolean done = c.assignment().containsAll(all)
            && all.stream().allMatch(tp -> c.position(tp) >= ends.get(tp));
        if (done) {
          break;
        }
        if (System.currentTimeMillis() > deadline) {
          throw new IllegalStateException("group " + s.group() + " did not reach the end on the backup");
        }
      }
    }
    StringBuilder sb = new StringBuilder("{\"group\":\"" + s.group() + "\",\"partitions\":{");
    String sep = "";
    List<TopicPartition> sorted = new ArrayList<>(all);
    sorted.sort((a, b) -> key(a).compareTo(key(b)));
    for (TopicPartition tp : sorted) {
      List<long[]> rs = seen.getOrDefault(tp, List.of());
      sb.append(sep).append('"').append(key(tp)).append("\":{\"committed\":")
          .append(committedAtStart.containsKey(tp) ? committedAtStart.get(tp).toString() : "null")
          .append(",\"first_offset\":").append(rs.isEmpty() ? "null" : Long.toString(rs.get(0)[0]))
          .append(",\"seqs\":[");
      for (int i = 0; i < rs.size(); i++) {
        sb.append(i == 0 ? "" : ",").append(rs.get(i)[1]);
      }
      sb.append("]}");
      sep = ",";
    }
    return sb.append("}}").toString();
  }

  private static void produceTx(String bootstrap, String topic, int records, int txnSize, int abortEvery,
      int firstSeq) throws Exception {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "fo-tx-" + topic);
    p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
    p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    int aborted = 0;
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
      producer.initTransactions();
      int txn = 0;
      for (int seq = firstSeq; seq < firstSeq + records; txn++) {
        producer.beginTransaction();
        for (int i = 0; i < txnSize && seq < firstSeq + records; i++, seq++) {
          producer.send(new ProducerRecord<>(topic, 0, "k" + seq, topic + "|0|" + seq));
        }
        // Sent before the transaction ends: an abort drops the records still unsent, and this
        // transaction's records must reach the log (and then be aborted there).
        producer.flush();
        if (abortEvery > 0 && txn % abortEvery == abortEvery - 1) {
          producer.abortTransaction();
          aborted++;
        } else {
          producer.commitTransaction();
        }
      }
    }
    System.out.println("{\"topic\":\"" + topic + "\",\"records\":" + records + ",\"aborted_transactions\":" + aborted + "}");
  }

  /**
   * {@code append}: COUNTS[p] more records on partition p (idempotent, not transactional), SEQ
   * continuing from the partition's log end, so that SEQ stays the record's offset; prints per
   * partition the first offset written, the count and every record's timestamp as the broker
   * acknowledged it (the producer's own view of what it wrote).
   */
  private static void append(String bootstrap, String topic, String counts) throws Exception {
    String[] c = counts.split(",");
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
    p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
    p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    Properties cp = new Properties();
    cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    List<TopicPartition> tps = new ArrayList<>();
    for (int part = 0; part < c.length; part++) {
      tps.add(new TopicPartition(topic, part));
    }
    Map<TopicPartition, Long> ends;
    try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(cp)) {
      ends = consumer.endOffsets(tps);
    }
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
      for (int part = 0; part < c.length; part++) {
        long first = ends.get(tps.get(part));
        int n = Integer.parseInt(c[part]);
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        for (long seq = first; seq < first + n; seq++) {
          sent.add(producer.send(new ProducerRecord<>(topic, part, "k" + seq, topic + "|" + part + "|" + seq)));
        }
        producer.flush();
        StringBuilder ts = new StringBuilder();
        for (int i = 0; i < sent.size(); i++) {
          RecordMetadata m = sent.get(i).get(60, TimeUnit.SECONDS);
          if (m.offset() != first + i) {
            throw new IllegalStateException("record " + (first + i) + " of partition " + part
                + " landed at offset " + m.offset() + ": another producer wrote meanwhile or a send was retried");
          }
          ts.append(i == 0 ? "" : ",").append(m.timestamp());
        }
        System.out.println("{\"topic\":" + json(topic) + ",\"partition\":" + part + ",\"first_offset\":" + first
            + ",\"count\":" + n + ",\"timestamps\":[" + ts + "]}");
      }
    }
  }

  private static String consumeToStops(String bootstrap, Spec s) throws Exception {
    Map<TopicPartition, Long> started = new TreeMap<>((a, b) -> key(a).compareTo(key(b)));
    Map<TopicPartition, OffsetAndMetadata> commit = new HashMap<>();
    long deadline = System.currentTimeMillis() + 90_000;
    try (KafkaConsumer<String, String> c = new KafkaConsumer<>(consumerProps(bootstrap, s))) {
      c.subscribe(s.topics());
      Set<TopicPartition> done = new HashSet<>();
      while (true) {
        ConsumerRecords<String, String> records = c.poll(Duration.ofMillis(200));
        Set<TopicPartition> pause = new HashSet<>();
        for (TopicPartition tp : c.assignment()) {
          if (!started.containsKey(tp) && !c.paused().contains(tp)) {
            // Where the group stands: its committed offset, or the reset position.
            started.put(tp, records.isEmpty() || records.records(tp).isEmpty()
                ? c.position(tp) : records.records(tp).get(0).offset());
          }
          long stop = s.stops().getOrDefault(tp, -1L);
          if (stop < 0 || (started.containsKey(tp) && stop <= started.get(tp))) {
            pause.add(tp);
            done.add(tp);
          } else if (c.position(tp) >= stop) {
            pause.add(tp);
            done.add(tp);
            commit.put(tp, new OffsetAndMetadata(stop, ""));
          }
        }
        c.pause(pause);
        boolean all = s.stops().keySet().stream().allMatch(done::contains);
        if (all && !c.assignment().isEmpty()) {
          if (!commit.isEmpty()) {
            c.commitSync(commit);
          }
          break;
        }
        if (System.currentTimeMillis() > deadline) {
          throw new IllegalStateException("group " + s.group() + " did not reach its stops " + s.stops()
              + "; positions reached for " + done);
        }
      }
    }
    StringBuilder sb = new StringBuilder("{\"group\":" + json(s.group()) + ",\"started\":{");
    String sep = "";
    for (Map.Entry<TopicPartition, Long> e : started.entrySet()) {
      sb.append(sep).append(json(key(e.getKey()))).append(':').append(e.getValue());
      sep = ",";
    }
    sb.append("},\"committed\":{");
    sep = "";
    for (Map.Entry<TopicPartition, OffsetAndMetadata> e : commit.entrySet()) {
      sb.append(sep).append(json(key(e.getKey()))).append(':').append(e.getValue().offset());
      sep = ",";
    }
    return sb.append("}}").toString();
  }

  private static void dump(String bootstrap, String topic) throws Exception {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
      List<TopicPartition> tps = new ArrayList<>();
      for (PartitionInfo pi : c.partitionsFor(topic)) {
        tps.add(new TopicPartition(topic, pi.partition()));
      }
      c.assign(tps);
      c.seekToBeginning(tps);
      Map<TopicPartition, Long> ends = c.endOffsets(tps);
      Map<TopicPartition, List<Long>> seqs = new HashMap<>();
      long deadline = System.currentTimeMillis() + 60_000;
      while (!tps.stream().allMatch(tp -> c.position(tp) >= ends.get(tp))) {
        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
          TopicPartition tp = new TopicPartition(r.topic(), r.partition());
          List<Long> l = seqs.computeIfAbsent(tp, k -> new ArrayList<>());
          // Offsets may have gaps; index i of the list is the record at offset first+i only
          // when there are none, so the offset travels with each SEQ.
          l.add(r.offset());
          l.add(seqOf(r));
        }
        if (System.currentTimeMillis() > deadline) {
          throw new IllegalStateException("dump of " + topic + " did not reach the end");
        }
      }
      for (TopicPartition tp : tps) {
        StringBuilder sb = new StringBuilder("{\"topic\":\"" + topic + "\",\"partition\":" + tp.partition()
            + ",\"offset_seq\":[");
        List<Long> l = seqs.getOrDefault(tp, List.of());
        for (int i = 0; i < l.size(); i++) {
          sb.append(i == 0 ? "" : ",").append(l.get(i));
        }
        System.out.println(sb.append("]}"));
      }
    }
  }

  private static String json(String s) {
    StringBuilder sb = new StringBuilder("\"");
    for (char ch : s.toCharArray()) {
      if (ch == '"' || ch == '\\') {
        sb.append('\\').append(ch);
      } else if (ch < 0x20) {
        sb.append(String.format("\\u%04x", (int) ch));
      } else {
        sb.append(ch);
      }
    }
    return sb.append('"').toString();
  }

  private static void committed(String bootstrap, Collection<String> groups) throws Exception {
    try (Admin a = Admin.create(admin(bootstrap))) {
      for (String g : groups) {
        Map<TopicPartition, OffsetAndMetadata> offsets =
            a.listConsumerGroupOffsets(g).partitionsToOffsetAndMetadata().get(60, TimeUnit.SECONDS);
        StringBuilder sb = new StringBuilder("{\"group\":" + json(g) + ",\"offsets\":{");
        String sep = "";
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet()) {
          if (e.getValue() == null) {
            continue;
          }
          sb.append(sep).append(json(key(e.getKey()))).append(":[").append(e.getValue().offset()).append(',')
              .append(json(e.getValue().metadata())).append(']');
          sep = ",";
        }
        System.out.println(sb.append("}}"));
      }
    }
  }

  private static void deleteGroups(String bootstrap, String prefix) throws Exception {
    try (Admin a = Admin.create(admin(bootstrap))) {
      List<String> ids = new ArrayList<>();
      for (var g : a.listGroups().all().get(120, TimeUnit.SECONDS)) {
        if (g.groupId().startsWith(prefix)) {
          ids.add(g.groupId());
        }
      }
      // In slices: one request for ten thousand groups times out on the coordinator.
      for (int i = 0; i < ids.size(); i += 500) {
        a.deleteConsumerGroups(ids.subList(i, Math.min(ids.size(), i + 500))).all().get(300, TimeUnit.SECONDS);
      }
      System.out.println("{\"deleted\":" + ids.size() + "}");
    }
  }

  private static void reset(String bootstrap, Path jobs) throws Exception {
    // ConsumerGroupCommand prints its errors and returns; a usage error would exit the JVM.
    Exit.setExitProcedure((code, message) -> {
      throw new IllegalStateException("kafka-consumer-groups exited with " + code + ": " + message);
    });
    int n = 0;
    for (String raw : Files.readAllLines(jobs, StandardCharsets.UTF_8)) {
      String line = raw.strip();
      if (line.isEmpty()) {
        continue;
      }
      String[] f = line.split(" ", 2);
      // Its plan table goes to stdout: keep stdout for our JSON.
      java.io.PrintStream out = System.out;
      System.setOut(System.err);
      try {
        org.apache.kafka.tools.consumer.group.ConsumerGroupCommand.main(new String[] {
            "--bootstrap-server", bootstrap, "--reset-offsets", "--group", f[0], "--from-file", f[1], "--execute"});
      } finally {
        System.setOut(out);
      }
      n++;
    }
    System.out.println("{\"reset_groups\":" + n + "}");
  }
}
