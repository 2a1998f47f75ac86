package org.apache.kafka.connect.mirror;

import java.util.*;

/**
 * Prints ReplicationPolicy and MirrorClient results for mm2-offsets' conformance tests
 * (src/mm2/policy_tests.rs). Regenerate with a Kafka 4.x classpath (connect-mirror-client,
 * kafka-clients, slf4j-api):
 *
 *   javac -cp "$CP" -d out PolicyVectors.java
 *   java -cp "$CP:out" org.apache.kafka.connect.mirror.PolicyVectors > policy_vectors.tsv
 *
 * It sits in MirrorClient's package to reach the package-private constructor and methods.
 */
public class PolicyVectors {
    static final String[] TOPICS = {
        "a.b", "a.b.c", "topic", ".b", "a.", "a..b", ".", "..", "a..", ".a.", "", "a...b", "ab", "a",
        "heartbeats", "x.heartbeats", "my-heartbeats", "heartbeats!", "!heartbeats", "source1heartbeats",
        "source1-heartbeats", "s2.s1.heartbeats", "s.s.heartbeats", "heartbeats.x", "heartbeatsheartbeats",
        "source1__topic4", "source1__source2__topic5", "a__b__", "__a", "a___b", "__", "a_b_c",
        "A.checkpoints.internal", "A__checkpoints__internal", "A_checkpoints_internal", "checkpoints.internal",
        ".checkpoints.internal", "checkpoints-internal", "mm2-offsets.C.internal", "mm2-offsets-C-internal",
        "mm2-offsets_C_internal", "x__internal", "x.internal", "__consumer_offsets", "_schemas",
        "mm2-offset-syncs.A.internal", "mm2-offset-syncs__A__internal", "backup.heartbeats", "topic1",
        "primary.orders", "b__a__heartbeats", "a...heartbeats", "s1.s2.s1.heartbeats"
    };
    /** Aliases for hop counts, in this order. */
    static final String[] ALIASES = {"a", "A", "s", "s1", "s2", "source1", "source2", "primary", "backup", "", "x", "a.b"};

    static String show(Object o) {
        if (o == null) return "\\N";
        if (o instanceof Set) { TreeSet<String> s = new TreeSet<>(); for (Object x : (Set<?>) o) s.add(x == null ? "\\N" : x.toString()); return String.join("|", s); }
        return o.toString();
    }


    public static void main(String[] args) throws Exception {
        List<String[]> configs = new ArrayList<>();
        configs.add(new String[]{"default"});
        configs.add(new String[]{"sep__", "replication.policy.separator", "__"});
        configs.add(new String[]{"sep__noint", "replication.policy.separator", "__", "replication.policy.internal.topic.separator.enabled", "false"});
        configs.add(new String[]{"sep__spacetrue", "replication.policy.separator", "__", "replication.policy.internal.topic.separator.enabled", " TRUE "});
        configs.add(new String[]{"sep_", "replication.policy.separator", "_"});
        configs.add(new String[]{"sepdots", "replication.policy.separator", "..."});
        configs.add(new String[]{"sepempty", "replication.policy.separator", ""});
        configs.add(new String[]{"flagonly", "replication.policy.internal.topic.separator.enabled", "false"});
        configs.add(new String[]{"identity", "replication.policy.class", "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"});
        configs.add(new String[]{"identity_primary", "replication.policy.class", " org.apache.kafka.connect.mirror.IdentityReplicationPolicy ", "source.cluster.alias", "primary"});
        configs.add(new String[]{"identity_sep", "replication.policy.class", "org.apache.kafka.connect.mirror.IdentityReplicationPolicy", "source.cluster.alias", "s", "replication.policy.separator", "__"});
        configs.add(new String[]{"identity_empty", "replication.policy.class", "org.apache.kafka.connect.mirror.IdentityReplicationPolicy", "source.cluster.alias", ""});
        for (String[] c : configs) {
            Map<String, Object> props = new HashMap<>(); props.put("bootstrap.servers", "localhost:9092");
            StringBuilder line = new StringBuilder("config");
            for (int i = 1; i < c.length; i += 2) { props.put(c[i], c[i + 1]); line.append('\t').append(c[i]).append('\t').append(c[i + 1]); }
            System.out.println(line);
            ReplicationPolicy p = new MirrorClientConfig(props).replicationPolicy();
            final List<String> all = Arrays.asList(TOPICS);
            MirrorClient client = new MirrorClient(null, p, null) {
                @Override Set<String> listTopics() { return new HashSet<>(all); }
            };
            System.out.println("heartbeatsTopic\t" + p.heartbeatsTopic());
            for (String t : TOPICS) {
                StringBuilder hops = new StringBuilder();
                for (String a : ALIASES) { if (hops.length() > 0) hops.append(','); hops.append(client.countHopsForTopic(t, a)); }
                System.out.println(String.join("\t", "topic", t, show(p.topicSource(t)), show(p.upstreamTopic(t)),
                    show(p.originalTopic(t)), show(p.isHeartbeatsTopic(t)), show(p.isCheckpointsTopic(t)),
                    show(p.isMM2InternalTopic(t)), show(p.isInternalTopic(t)), show(p.formatRemoteTopic("src", t)),
                    show(client.allSources(t)), hops.toString()));
            }
            for (String a : ALIASES) {
                System.out.println(String.join("\t", "alias", a, p.checkpointsTopic(a), p.offsetSyncsTopic(a),
                    show(client.remoteTopics(a)), show(client.replicationHops(a))));
            }
            System.out.println("heartbeatTopics\t" + show(client.heartbeatTopics()));
            System.out.println("checkpointTopics\t" + show(client.checkpointTopics()));
            System.out.println("upstreamClusters\t" + show(client.upstreamClusters()));
            System.out.println("remoteTopics\t" + show(client.remoteTopics()));
        }
        // Rejected configurations.
        String[][] bad = {
            {"replication.policy.class", "com.example.MyPolicy"},
            {"replication.policy.internal.topic.separator.enabled", "yes"},
        };
        for (String[] b : bad) {
            Map<String, Object> props = new HashMap<>(); props.put("bootstrap.servers", "localhost:9092");
            props.put(b[0], b[1]);
            try { new MirrorClientConfig(props).replicationPolicy(); System.out.println("accepted\t" + b[0] + "\t" + b[1]); }
            catch (Exception e) { System.out.println("rejected\t" + b[0] + "\t" + b[1] + "\t" + e.getClass().getSimpleName()); }
        }
    }
}
