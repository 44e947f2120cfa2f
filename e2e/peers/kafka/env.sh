# Sourced by the Kafka peer's scripts: where the pinned release lives and how to run it.
#
#   KAFKA_VERSION   the pinned release (same as <kafka.version> in pom.xml)
#   KAFKA_HOME      ${OXBOW_CACHE:-~/.cache/oxbow}/kafka/<version>   (outside the clone)
#   KAFKA_LIBS      $KAFKA_HOME/libs, every jar of the broker and the tools
#   kafka_java      runs a Java main class on that classpath:  kafka_java CLASS ARGS...
#                   heap from KAFKA_HEAP_OPTS (default -Xmx256M, as kafka-run-class.sh)
KAFKA_PEER_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
KAFKA_VERSION="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$KAFKA_PEER_DIR/pom.xml")"
OXBOW_CACHE="${OXBOW_CACHE:-$HOME/.cache/oxbow}"
KAFKA_HOME="$OXBOW_CACHE/kafka/$KAFKA_VERSION"
KAFKA_LIBS="$KAFKA_HOME/libs"

kafka_require_installed() {
  if [ ! -e "$KAFKA_LIBS/.complete" ]; then
    echo "Kafka $KAFKA_VERSION is not installed in $KAFKA_LIBS; run $KAFKA_PEER_DIR/install" >&2
    exit 1
  fi
}

# kafka_java CLASS ARGS... — the same JVM flags as Kafka's kafka-run-class.sh.
kafka_java() {
  kafka_require_installed
  local log_config="${KAFKA_LOG4J_CONFIG:-$KAFKA_PEER_DIR/config/log4j2-tools.properties}"
  # shellcheck disable=SC2086  # the option strings are word lists on purpose
  exec java ${KAFKA_HEAP_OPTS:--Xmx256M} \
    ${KAFKA_JVM_PERFORMANCE_OPTS:--server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -Djava.awt.headless=true} \
    ${KAFKA_OPTS:-} \
    -Dlog4j2.configurationFile="$log_config" \
    -cp "$KAFKA_LIBS/*" "$@"
}
