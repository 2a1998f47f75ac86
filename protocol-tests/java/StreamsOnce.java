import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.api.RecordMetadata;

/**
 * A Kafka Streams application on the Streams rebalance protocol (KIP-1071,
 * group.protocol=streams) that copies INPUT to OUTPUT until it has seen COUNT records, then
 * closes (committing its offsets), leaving an empty Streams group APP_ID with committed offsets.
 *
 * Usage: StreamsOnce BOOTSTRAP APP_ID INPUT OUTPUT COUNT STATE_DIR
 * Prints one JSON line: {"app_id":...,"seen":N}. Exit 1 when fewer than COUNT arrive in 60 s.
 *
 * <p>The Streams failover suite (protocol-tests/tests/streams_failover.rs) uses two more modes,
 * each one JVM; a record's value is {@code TOPIC|PARTITION|SEQ} (SEQ counting the partition's
 * records from 0, as FailoverClient writes them), so every value names one upstream record:
 * <ul>
 *   <li>{@code primary BOOTSTRAP APP_ID TOPIC STATE_DIR FIRST TOTAL} (FIRST and TOTAL
 *       comma-separated per partition): produces the first FIRST[p] records of each partition
 *       (in transactions of 10, so SEQ s is at offset s + s / 10: the markers are not copied),
 *       runs the application until it has processed exactly those (nothing else exists yet, so
 *       it commits exactly FIRST[p]), closes it, then produces the rest up to TOTAL[p]. Prints
 *       {"processed":{"0":N,...}}.
 *   <li>{@code backup BOOTSTRAP APP_ID TOPIC STATE_DIR LAST_SEQ}: the same application on a
 *       replica TOPIC, from where its group stands; once every partition has processed the
 *       record of upstream SEQ LAST_SEQ[p] it prints {"first":{"0":[OFFSET,"VALUE"],...},
 *       "read":{"0":N,...}} and keeps running (a live member) until a line or EOF on stdin,
 *       then closes and prints {"closed":true}.
 * </ul>
 */
public final class StreamsOnce {
    public static void main(String[] args) throws Exception {
        if (args.length == 7 && args[0].equals("primary")) {
            primary(args[1], args[2], args[3], args[4], ints(args[5]), ints(args[6]));
            return;
        }
        if (args.length == 6 && args[0].equals("backup")) {
            backup(args[1], args[2], args[3], args[4], ints(args[5]));
            return;
        }
        if (args.length != 6) {
            System.err.println("usage: StreamsOnce BOOTSTRAP APP_ID INPUT OUTPUT COUNT STATE_DIR");
            System.exit(2);
        }
        String bootstrap = args[0], appId = args[1], input = args[2], output = args[3];
        int count = Integer.parseInt(args[4]);
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("application.id", appId);
        props.put("group.protocol", "streams");
        props.put("state.dir", args[5]);
        props.put("commit.interval.ms", "200");
        props.put("default.key.serde", Serdes.ByteArraySerde.class);
        props.put("default.value.serde", Serdes.ByteArraySerde.class);
        props.put("consumer.auto.offset.reset", "earliest");
        CountDownLatch seen = new CountDownLatch(count);
        StreamsBuilder builder = new StreamsBuilder();
        builder.<byte[], byte[]>stream(input).peek((k, v) -> seen.countDown()).to(output);
        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        streams.start();
        boolean all = seen.await(60, TimeUnit.SECONDS);
        streams.close();
        System.out.println("{\"app_id\":\"" + appId + "\",\"seen\":" + (count - seen.getCount()) + "}");
        System.exit(all ? 0 : 1);
    }

    private static int[] ints(String csv) {
        String[] parts = csv.split(",");
        int[] out = new int[parts.length];
        for (int i = 0; i < parts.length; i++) {
            out[i] = Integer.parseInt(parts[i]);
        }
        return out;
    }

    private static Properties streamsProps(String bootstrap, String appId, String stateDir) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("application.id", appId);
        props.put("group.protocol", "streams");
        props.put("processing.guarantee", "at_least_once");
        props.put("state.dir", stateDir);
        props.put("commit.interval.ms", "100");
        props.put("default.key.serde", Serdes.ByteArraySerde.class);
        props.put("default.value.serde", Serdes.ByteArraySerde.class);
        props.put("consumer.auto.offset.reset", "earliest");
        return props;
    }

    /** Sees every record: per partition the first (offset, value), the count and the last SEQ. */
    private static final class Seen {
        final Map<Integer, Object[]> first = new ConcurrentHashMap<>();
        final Map<Integer, Integer> count = new ConcurrentHashMap<>();
        final Map<Integer, Integer> lastSeq = new ConcurrentHashMap<>();

        void see(int partition, long offset, String value) {
            first.putIfAbsent(partition, new Object[] {offset, value});
            count.merge(partition, 1, Integer::sum);
            lastSeq.put(partition, Integer.parseInt(value.substring(value.lastIndexOf('|') + 1)));
        }
    }

    private static KafkaStreams app(Properties props, String topic, Seen seen) {
        StreamsBuilder builder = new StreamsBuilder();
        builder.<byte[], byte[]>stream(topic).process(() -> new Processor<byte[], byte[], Void, Void>() {
            private ProcessorContext<Void, Void> context;

            @Override
            public void init(ProcessorContext<Void, Void> context) {
                this.context = context;
            }

            @Override
            public void process(Record<byte[], byte[]> record) {
                RecordMetadata m = context.recordMetadata().orElseThrow();
                seen.see(m.partition(), m.offset(), new String(record.value(), StandardCharsets.UTF_8));
            }
        });
        return new KafkaStreams(builder.build(), props);
    }

    /**
     * SEQs FROM[p] to TO[p] to each partition, in committed transactions of TXN records each: every
     * transaction leaves a commit marker in the primary's log, which MM2 does not copy, so a
     * record's offset on the primary and on the replica differ (SEQ + SEQ / TXN on the primary,
     * SEQ on the replica).
     */
    private static void produce(KafkaProducer<byte[], byte[]> producer, String topic, int[] from, int[] to) {
        try {
            for (int partition = 0; partition < to.length; partition++) {
                for (int seq = from[partition]; seq < to[partition]; seq += TXN) {
                    producer.beginTransaction();
                    java.util.List<java.util.concurrent.Future<org.apache.kafka.clients.producer.RecordMetadata>> sent =
                            new java.util.ArrayList<>();
                    for (int s = seq; s < Math.min(seq + TXN, to[partition]); s++) {
                        byte[] value = (topic + "|" + partition + "|" + s).getBytes(StandardCharsets.UTF_8);
                        sent.add(producer.send(new ProducerRecord<>(topic, partition, null, value)));
                    }
                    producer.commitTransaction();
                    for (int i = 0; i < sent.size(); i++) {
                        long s = seq + i;
                        long offset = sent.get(i).get().offset();
                        if (offset != s + s / TXN) {
                            throw new IllegalStateException(topic + "-" + partition + ": SEQ " + s + " at offset " + offset);
                        }
                    }
                }
            }
        } catch (Exception e) {
            throw new RuntimeException(e);
        }
    }

    /** Records per transaction in the primary mode. */
    private static final int TXN = 10;

    private static String counts(Map<Integer, Integer> m) {
        StringBuilder b = new StringBuilder("{");
        for (Map.Entry<Integer, Integer> e : new TreeMap<>(m).entrySet()) {
            if (b.length() > 1) {
                b.append(',');
            }
            b.append('"').append(e.getKey()).append("\":").append(e.getValue());
        }
        return b.append('}').toString();
    }

    private static void await(String what, java.util.function.BooleanSupplier done) throws InterruptedException {
        long giveUp = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
        while (!done.getAsBoolean()) {
            if (System.nanoTime() > giveUp) {
                System.err.println("StreamsOnce: " + what + " not reached within 90 s");
                System.exit(1);
            }
            Thread.sleep(20);
        }
    }

    private static void primary(String bootstrap, String appId, String topic, String stateDir, int[] first, int[] total)
            throws Exception {
        // One transactional producer for both rounds: a second one of the same transactional.id
        // can find the first one's last transaction still completing (InvalidTxnStateException).
        Properties pp = new Properties();
        pp.put("bootstrap.servers", bootstrap);
        pp.put("key.serializer", ByteArraySerializer.class);
        pp.put("value.serializer", ByteArraySerializer.class);
        pp.put("acks", "all");
        pp.put("transactional.id", appId + "-producer");
        KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(pp);
        producer.initTransactions();
        produce(producer, topic, new int[first.length], first);
        Seen seen = new Seen();
        KafkaStreams streams = app(streamsProps(bootstrap, appId, stateDir), topic, seen);
        streams.start();
        await("the first records processed", () -> {
            for (int p = 0; p < first.length; p++) {
                if (seen.count.getOrDefault(p, 0) < first[p]) {
                    return false;
                }
            }
            return true;
        });
        // Close commits what was processed: exactly FIRST[p] per partition.
        streams.close();
        produce(producer, topic, first, total);
        producer.close();
        System.out.println("{\"processed\":" + counts(seen.count) + "}");
        System.out.flush();
        System.exit(0);
    }

    private static void backup(String bootstrap, String appId, String topic, String stateDir, int[] lastSeq)
            throws Exception {
        Seen seen = new Seen();
        KafkaStreams streams = app(streamsProps(bootstrap, appId, stateDir), topic, seen);
        streams.start();
        await("the last records processed", () -> {
            for (int p = 0; p < lastSeq.length; p++) {
                if (seen.lastSeq.getOrDefault(p, -1) < lastSeq[p]) {
                    return false;
                }
            }
            return true;
        });
        StringBuilder firsts = new StringBuilder("{");
        for (Map.Entry<Integer, Object[]> e : new TreeMap<>(seen.first).entrySet()) {
            if (firsts.length() > 1) {
                firsts.append(',');
            }
            firsts.append('"').append(e.getKey()).append("\":[").append(e.getValue()[0]).append(",\"")
                    .append(e.getValue()[1]).append("\"]");
        }
        System.out.println("{\"first\":" + firsts + "},\"read\":" + counts(seen.count) + "}");
        System.out.flush();
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
        streams.close();
        System.out.println("{\"closed\":true}");
        System.out.flush();
        System.exit(0);
    }
}
