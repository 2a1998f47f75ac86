package dev.mm2offsets.reference;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * {@code --key value} argument parsing. Every option takes exactly one value (so a value may start
 * with "--" or be empty); options listed as repeatable may occur more than once, the others at most
 * once. Anything else is a {@link UsageException}.
 */
final class Args {
  private final String command;
  private final Map<String, List<String>> values;

  private Args(String command, Map<String, List<String>> values) {
    this.command = command;
    this.values = values;
  }

  static Args parse(String command, List<String> argv, Set<String> single, Set<String> repeatable)
      throws UsageException {
    Map<String, List<String>> values = new LinkedHashMap<>();
    for (int i = 0; i < argv.size(); i += 2) {
      String arg = argv.get(i);
      if (!arg.startsWith("--")) {
        throw new UsageException(command + ": expected an option like --name, found '" + arg + "'");
      }
      String key = arg.substring(2);
      if (!single.contains(key) && !repeatable.contains(key)) {
        throw new UsageException(command + ": unknown option --" + key);
      }
      if (i + 1 >= argv.size()) {
        throw new UsageException(command + ": option --" + key + " needs a value");
      }
      List<String> list = values.computeIfAbsent(key, k -> new ArrayList<>());
      if (!list.isEmpty() && !repeatable.contains(key)) {
        throw new UsageException(command + ": option --" + key + " given more than once");
      }
      list.add(argv.get(i + 1));
    }
    return new Args(command, values);
  }

  String command() {
    return command;
  }

  List<String> all(String key) {
    return values.getOrDefault(key, List.of());
  }

  String optional(String key) {
    List<String> list = values.get(key);
    return list == null ? null : list.get(0);
  }

  String required(String key) throws UsageException {
    String value = optional(key);
    if (value == null) {
      throw new UsageException(command + ": missing required option --" + key);
    }
    return value;
  }

  long requiredNonNegativeLong(String key) throws UsageException {
    String text = required(key);
    try {
      long value = Long.parseLong(text);
      if (value < 0) {
        throw new UsageException(command + ": --" + key + " must be >= 0, got " + text);
      }
      return value;
    } catch (NumberFormatException e) {
      throw new UsageException(command + ": --" + key + " must be an integer, got '" + text + "'");
    }
  }

  /** A command-line mistake: reported with the usage text, exit code 2. */
  static final class UsageException extends Exception {
    private static final long serialVersionUID = 1L;

    UsageException(String message) {
      super(message);
    }
  }
}
