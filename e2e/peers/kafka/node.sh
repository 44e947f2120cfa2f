# Sourced by start-single and start-cluster: writes one KRaft node's config, formats its
# storage, launches it and waits until it serves. Layout of a node directory:
#   server.properties   the node's config        data/       log.dirs (formatted KRaft storage)
#   server.log          the broker's output      kafka.pid   its process id (used by stop)
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"

# A Kafka cluster id: 16 random bytes, URL-safe base64 without padding (as Uuid.randomUuid()),
# and like it never starting with '-': kafka-storage would take such an id for an option
# ("argument --cluster-id/-t: expected one argument", one start in 64).
kafka_random_cluster_id() {
  local id="-"
  while [ "${id#-}" != "$id" ]; do
    id="$(head -c16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')"
  done
  echo "$id"
}

# kafka_write_node_config DIR NODE_ID PORT CONTROLLER_PORT VOTERS REPLICATION [KEY=VALUE...]
kafka_write_node_config() {
  local dir="$1" node_id="$2" port="$3" controller_port="$4" voters="$5" rf="$6"
  shift 6
  mkdir -p "$dir/data"
  {
    echo "# Written by e2e/peers/kafka for one combined broker+controller on loopback."
    echo "process.roles=broker,controller"
    echo "node.id=$node_id"
    echo "controller.quorum.voters=$voters"
    echo "listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$controller_port"
    echo "advertised.listeners=PLAINTEXT://127.0.0.1:$port"
    echo "controller.listener.names=CONTROLLER"
    echo "inter.broker.listener.name=PLAINTEXT"
    echo "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"
    echo "log.dirs=$dir/data"
    # The distribution's config/server.properties values that matter on a small cluster.
    echo "num.partitions=1"
    echo "offsets.topic.replication.factor=$rf"
    echo "transaction.state.log.replication.factor=$rf"
    echo "transaction.state.log.min.isr=$(( rf < 2 ? 1 : 2 ))"
    echo "share.coordinator.state.topic.replication.factor=$rf"
    echo "share.coordinator.state.topic.min.isr=$(( rf < 2 ? 1 : 2 ))"
    echo "group.initial.rebalance.delay.ms=0"
    local kv
    for kv in "$@"; do echo "$kv"; done
  } >"$dir/server.properties"
}

# kafka_format_node DIR CLUSTER_ID
kafka_format_node() {
  local dir="$1" cluster_id="$2"
  KAFKA_HEAP_OPTS=-Xmx256M "$KAFKA_PEER_DIR/bin/kafka-storage" format \
    -t "$cluster_id" -c "$dir/server.properties" --ignore-formatted >"$dir/format.log" 2>&1 || {
    echo "kafka: formatting $dir failed:" >&2; cat "$dir/format.log" >&2; return 1; }
}

# kafka_launch_node DIR — starts the node in the background with the distribution's server
# JVM settings (default heap -Xmx1G -Xms1G, as kafka-server-start.sh) and records its pid.
kafka_launch_node() {
  local dir="$1"
  if [ -e "$dir/kafka.pid" ] && kill -0 "$(cat "$dir/kafka.pid")" 2>/dev/null; then
    echo "kafka: a node already runs from $dir (pid $(cat "$dir/kafka.pid"))" >&2
    return 1
  fi
  (
    export KAFKA_HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xmx1G -Xms1G}"
    export KAFKA_LOG4J_CONFIG="$KAFKA_PEER_DIR/config/log4j2-server.properties"
    export KAFKA_OPTS="${KAFKA_OPTS:-} -Dkafka.logs.dir=$dir"
    exec setsid bash -c '. "$1/env.sh"; kafka_java kafka.Kafka "$2"' _ "$KAFKA_PEER_DIR" \
      "$dir/server.properties" >"$dir/server.log" 2>&1 </dev/null
  ) &
  echo $! >"$dir/kafka.pid"
}

# kafka_wait_ready DIR PORT [TIMEOUT_SECONDS] — until the node logs that it started and its
# broker port accepts connections; fails early if the process dies.
kafka_wait_ready() {
  local dir="$1" port="$2" timeout="${3:-90}" pid
  pid="$(cat "$dir/kafka.pid")"
  local deadline=$(( $(date +%s) + timeout ))
  while :; do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "kafka: node in $dir exited during start; last lines of server.log:" >&2
      tail -n 30 "$dir/server.log" >&2
      return 1
    fi
    if grep -q "Kafka Server started" "$dir/server.log" 2>/dev/null &&
       (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      return 0
    fi
    if [ "$(date +%s)" -ge "$deadline" ]; then
      echo "kafka: node in $dir not ready after ${timeout}s; last lines of server.log:" >&2
      tail -n 30 "$dir/server.log" >&2
      return 1
    fi
    sleep 0.2
  done
}
