#!/usr/bin/env bash
# A throwaway single-node Kafka (KRaft, combined broker+controller) on 127.0.0.1, run from a flat
# directory of jars, for exercising the Java oracle.
#
#   scripts/broker.sh start WORKDIR        format a fresh log dir under WORKDIR and start the broker
#   scripts/broker.sh stop  WORKDIR        SIGTERM the broker started there, wait, then SIGKILL
#
# Environment:
#   KAFKA_LIB   directory of Kafka jars incl. kafka_2.13, kafka-tools (or storage), log4j2 + slf4j binding.
#               Make one with the harness pom:
#               mvn -q -f protocol-tests/harness/maven/pom.xml -Dkafka.version=4.3.1 -P kafka4 \
#                   dependency:copy-dependencies -DoutputDirectory=/tmp/kafka-4.3.1
#   PORT_BASE   broker listens on PORT_BASE+1, controller on PORT_BASE+2 (default 39100, i.e. the
#               39100-39199 range kept for this module so it does not collide with other brokers)
#   AUTO_CREATE auto.create.topics.enable for the broker (default: true, Kafka's own default)
set -euo pipefail

cmd=${1:?usage: broker.sh start|stop WORKDIR}
work=${2:?usage: broker.sh start|stop WORKDIR}
KAFKA_LIB=${KAFKA_LIB:-/tmp/warm/4.3.1}
PORT_BASE=${PORT_BASE:-39100}
AUTO_CREATE=${AUTO_CREATE:-true}
broker_port=$((PORT_BASE + 1))
controller_port=$((PORT_BASE + 2))

case "$cmd" in
start)
  [ -d "$KAFKA_LIB" ] || { echo "broker.sh: KAFKA_LIB=$KAFKA_LIB is not a directory" >&2; exit 1; }
  if [ -f "$work/broker.pid" ] && kill -0 "$(cat "$work/broker.pid")" 2>/dev/null; then
    echo "broker.sh: a broker from $work is still running (pid $(cat "$work/broker.pid"))" >&2
    exit 1
  fi
  mkdir -p "$work"
  cat >"$work/server.properties" <<EOF
process.roles=broker,controller
node.id=1
listeners=PLAINTEXT://127.0.0.1:${broker_port},CONTROLLER://127.0.0.1:${controller_port}
advertised.listeners=PLAINTEXT://127.0.0.1:${broker_port}
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
controller.quorum.bootstrap.servers=127.0.0.1:${controller_port}
log.dirs=${work}/data
num.partitions=1
auto.create.topics.enable=${AUTO_CREATE}
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
EOF
  cat >"$work/log4j2.properties" <<'EOF'
rootLogger.level=INFO
rootLogger.appenderRef.out.ref=out
appender.out.type=Console
appender.out.name=out
appender.out.layout.type=PatternLayout
appender.out.layout.pattern=[%d] %p %m (%c)%n
EOF
  cp="$KAFKA_LIB/*"
  cluster_id=$(java -cp "$cp" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -1)
  java -cp "$cp" -Dlog4j2.configurationFile="$work/log4j2.properties" kafka.tools.StorageTool format \
    -t "$cluster_id" -c "$work/server.properties" --standalone >"$work/format.log" 2>&1 \
    || { cat "$work/format.log" >&2; exit 1; }
  nohup java -Xms256m -Xmx768m -cp "$cp" -Dlog4j2.configurationFile="$work/log4j2.properties" \
    kafka.Kafka "$work/server.properties" >"$work/broker.log" 2>&1 &
  echo $! >"$work/broker.pid"
  # Ready = the broker logged that it started (its client listener is open only after unfencing).
  for _ in $(seq 1 240); do
    if grep -q "Kafka Server started" "$work/broker.log"; then
      echo "127.0.0.1:${broker_port}"
      exit 0
    fi
    if ! kill -0 "$(cat "$work/broker.pid")" 2>/dev/null; then
      echo "broker.sh: broker exited during start-up; last log lines:" >&2
      tail -20 "$work/broker.log" >&2
      exit 1
    fi
    sleep 0.5
  done
  echo "broker.sh: broker not ready after 120 s; see $work/broker.log" >&2
  exit 1
  ;;
stop)
  [ -f "$work/broker.pid" ] || exit 0
  pid=$(cat "$work/broker.pid")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
  fi
  rm -f "$work/broker.pid"
  ;;
*)
  echo "usage: broker.sh start|stop WORKDIR" >&2
  exit 2
  ;;
esac
