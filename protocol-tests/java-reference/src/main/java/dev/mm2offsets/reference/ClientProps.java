package dev.mm2offsets.reference;

import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;

/**
 * Builds the {@code Map<String, Object>} handed to RemoteClusterUtils / MirrorClient.
 *
 * <p>Sources, later ones winning: {@code --property-file F} (java.util.Properties syntax, handy for
 * secrets that should not sit on a command line), each {@code --property k=v} in order, then
 * {@code --bootstrap-server}. Values are passed as strings, exactly as a user of the Java API
 * typically would; MirrorClientConfig parses and, for keys it does not know, silently drops them.
 */
final class ClientProps {
  private ClientProps() {}

  static Map<String, Object> from(Args args) throws Args.UsageException, IOException {
    Map<String, Object> props = new HashMap<>();
    String file = args.optional("property-file");
    if (file != null) {
      Properties loaded = new Properties();
      try (Reader reader = Files.newBufferedReader(Path.of(file), StandardCharsets.UTF_8)) {
        loaded.load(reader);
      }
      for (String name : loaded.stringPropertyNames()) {
        props.put(name, loaded.getProperty(name));
      }
    }
    for (String pair : args.all("property")) {
      int eq = pair.indexOf('=');
      if (eq <= 0) {
        throw new Args.UsageException(
            args.command() + ": --property wants key=value, got '" + redactValue(pair) + "'");
      }
      props.put(pair.substring(0, eq), pair.substring(eq + 1));
    }
    String bootstrap = args.optional("bootstrap-server");
    if (bootstrap != null) {
      props.put("bootstrap.servers", bootstrap);
    }
    if (!props.containsKey("bootstrap.servers")) {
      throw new Args.UsageException(
          args.command()
              + ": no bootstrap servers: pass --bootstrap-server HOST:PORT"
              + " (or bootstrap.servers in --property / --property-file)");
    }
    return props;
  }

  /** A malformed --property may still hold a secret; show only its shape. */
  private static String redactValue(String pair) {
    return pair.isEmpty() ? "" : pair.charAt(0) + "...(" + pair.length() + " chars)";
  }
}
