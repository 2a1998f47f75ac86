import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;

/**
 * A Kafka Streams application on the Streams rebalance protocol (KIP-1071,
 * group.protocol=streams) that copies INPUT to OUTPUT until it has seen COUNT records, then
 * closes (committing its offsets), leaving an empty Streams group APP_ID with committed offsets.
 *
 * Usage: StreamsOnce BOOTSTRAP APP_ID INPUT OUTPUT COUNT STATE_DIR
 * Prints one JSON line: {"app_id":...,"seen":N}. Exit 1 when fewer than COUNT arrive in 60 s.
 */
public final class StreamsOnce {
    public static void main(String[] args) throws Exception {
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
}
