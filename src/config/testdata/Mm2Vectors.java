package org.apache.kafka.connect.mirror;

import java.util.*;

/**
 * Random MirrorMaker 2 configurations and what MirrorMakerConfig.clientConfig("A") makes of them:
 * the consumer's connection settings and the replication policy's separator. Produces
 * mm2_vectors.tsv for src/config/mm2_props.rs.
 */
public class Mm2Vectors {
    public static void main(String[] args) {
        Random r = new Random(11);
        String[] prefixes = {"", "consumer.", "A.", "A.consumer.", "B.", "admin.", "A.admin.", "producer."};
        String[] keys = {"bootstrap.servers", "security.protocol", "ssl.truststore.location", "sasl.mechanism", "replication.policy.separator"};
        for (int i = 0; i < 300; i++) {
            Map<String, String> props = new LinkedHashMap<>();
            props.put("clusters", "A, B");
            int n = 1 + r.nextInt(7);
            for (int j = 0; j < n; j++) {
                String key = keys[r.nextInt(keys.length)];
                String prefix = prefixes[r.nextInt(prefixes.length)];
                String value;
                if (key.equals("security.protocol")) value = r.nextBoolean() ? "SSL" : "PLAINTEXT";
                else if (key.equals("replication.policy.separator")) value = new String[]{"_", "__", "-"}[r.nextInt(3)];
                else value = "v" + r.nextInt(100);
                props.put(prefix + key, value);
            }
            if (!props.containsKey("A.bootstrap.servers") && !props.containsKey("bootstrap.servers")) {
                // MirrorClientConfig (4.3) requires bootstrap.servers.
                props.put(r.nextBoolean() ? "A.bootstrap.servers" : "bootstrap.servers", "base");
            }
            MirrorClientConfig client = new MirrorMakerConfig(props).clientConfig("A");
            Map<String, Object> consumer = client.consumerConfig();
            StringBuilder line = new StringBuilder();
            for (Map.Entry<String, String> e : props.entrySet()) line.append(e.getKey()).append('=').append(e.getValue()).append(';');
            line.append('\t');
            for (String k : keys) {
                if (k.startsWith("replication")) continue;
                Object v = consumer.get(k);
                String shown = v == null ? "\\N" : (v instanceof List ? String.join(",", (List<String>) v) : v.toString());
                line.append(k).append('=').append(shown).append(';');
            }
            line.append('\t').append(client.replicationPolicy().formatRemoteTopic("x", "y"));
            System.out.println(line);
        }
    }
}
