import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;

/**
 * Creates consumer groups fast: one {@code Admin.alterConsumerGroupOffsets} per group, all in
 * flight at once. An admin offset commit for a group that does not exist creates an Empty classic
 * group, which MirrorMaker 2's checkpoint connector lists like any other consumer group.
 *
 * <p>Usage: {@code GroupCommitter --bootstrap HOST:PORT --file SPEC [--timeout-ms MS]}. SPEC has one
 * commit per line, fields separated by runs of spaces or tabs: {@code GROUP TOPIC PARTITION OFFSET
 * [METADATA]}; METADATA is the rest of the line, verbatim (it may contain spaces). Empty lines and
 * lines starting with {@code #} are skipped. Prints {@code {"groups":N,"offsets":M}} on stdout;
 * exit 1 on a failed commit, 2 on a usage or spec error.
 */
public final class GroupCommitter {
  private GroupCommitter() {}

  public static void main(String[] args) {
    String bootstrap = null;
    String file = null;
    long timeoutMs = 60_000;
    for (int i = 0; i < args.length; i += 2) {
      if (i + 1 >= args.length) {
        usage("option " + args[i] + " needs a value");
      }
      switch (args[i]) {
        case "--bootstrap" -> bootstrap = args[i + 1];
        case "--file" -> file = args[i + 1];
        case "--timeout-ms" -> timeoutMs = Long.parseLong(args[i + 1]);
        default -> usage("unknown option " + args[i]);
      }
    }
    if (bootstrap == null || file == null) {
      usage("--bootstrap and --file are required");
    }
    Map<String, Map<TopicPartition, OffsetAndMetadata>> commits;
    try {
      commits = parse(Path.of(file));
    } catch (Exception e) {
      System.err.println("GroupCommitter: " + e.getMessage());
      System.exit(2);
      return;
    }
    Properties props = new Properties();
    props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(AdminClientConfig.CLIENT_ID_CONFIG, "mm2o-group-committer");
    props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) timeoutMs);
    int offsets = 0;
    try (Admin admin = Admin.create(props)) {
      Map<String, KafkaFuture<Void>> pending = new LinkedHashMap<>();
      for (Map.Entry<String, Map<TopicPartition, OffsetAndMetadata>> e : commits.entrySet()) {
        pending.put(e.getKey(), admin.alterConsumerGroupOffsets(e.getKey(), e.getValue()).all());
        offsets += e.getValue().size();
      }
      for (Map.Entry<String, KafkaFuture<Void>> e : pending.entrySet()) {
        try {
          e.getValue().get(timeoutMs, TimeUnit.MILLISECONDS);
        } catch (Exception ex) {
          System.err.println("GroupCommitter: committing group '" + e.getKey() + "' failed: " + ex);
          System.exit(1);
        }
      }
    }
    System.out.println("{\"groups\":" + commits.size() + ",\"offsets\":" + offsets + "}");
  }

  private static Map<String, Map<TopicPartition, OffsetAndMetadata>> parse(Path file) throws Exception {
    Map<String, Map<TopicPartition, OffsetAndMetadata>> out = new LinkedHashMap<>();
    List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
    for (int n = 0; n < lines.size(); n++) {
      String line = lines.get(n).strip();
      if (line.isEmpty() || line.startsWith("#")) {
        continue;
      }
      String[] f = line.split("[ \t]+", 5);
      if (f.length < 4) {
        throw new IllegalArgumentException(file + ":" + (n + 1) + ": want GROUP TOPIC PARTITION OFFSET [METADATA]");
      }
      int partition = Integer.parseInt(f[2]);
      long offset = Long.parseLong(f[3]);
      String metadata = f.length == 5 ? f[4] : "";
      out.computeIfAbsent(f[0], g -> new LinkedHashMap<>())
          .put(new TopicPartition(f[1], partition), new OffsetAndMetadata(offset, metadata));
    }
    return out;
  }

  private static void usage(String why) {
    System.err.println("GroupCommitter: " + why);
    System.err.println("usage: GroupCommitter --bootstrap HOST:PORT --file SPEC [--timeout-ms MS]");
    System.exit(2);
  }
}
