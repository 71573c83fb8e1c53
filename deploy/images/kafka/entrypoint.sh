#!/usr/bin/env bash
# Render server.properties from the template and the KAFKA_* variables, format the storage once, run the broker.
set -euo pipefail
DATA=/var/lib/kafka/data
PROPS=/var/lib/kafka/server.properties
CP="/opt/kafka/libs/*"

python3 - "$PROPS" "$DATA" <<'PY'
import os, sys
props, data = sys.argv[1], sys.argv[2]
settings = {}
for line in open("/opt/kafka/server.properties.in").read().replace("@LOG_DIRS@", data).splitlines():
    if line.strip() and not line.lstrip().startswith("#"):
        key, _, value = line.partition("=")
        settings[key.strip()] = value.strip()
special = {"KAFKA_HEAP_OPTS", "KAFKA_CLUSTER_ID", "KAFKA_SCRAM_USERS"}
for name, value in os.environ.items():
    if name.startswith("KAFKA_") and name not in special:
        key = name[6:].lower().replace("___", "-").replace("__", "\0").replace("_", ".").replace("\0", "_")
        settings[key] = value
with open(props, "w") as fh:
    fh.writelines(f"{k}={v}\n" for k, v in settings.items())
PY

if [[ ! -s "$DATA/meta.properties" ]]; then
  # As `kafka-storage random-uuid` makes one: never starting with "-", which the storage tool would take for an
  # option (1 id in 64 did, and the broker exited at its first start).
  cluster_id="${KAFKA_CLUSTER_ID:-$(python3 -c 'import base64, uuid
while (id_ := base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")).startswith("-"): pass
print(id_)')}"
  scram=()
  for user in ${KAFKA_SCRAM_USERS:-}; do
    scram+=(--add-scram "SCRAM-SHA-512=[name=${user%%:*},password=${user#*:}]")
  done
  java -cp "$CP" kafka.tools.StorageTool format -t "$cluster_id" -c "$PROPS" "${scram[@]}" >/dev/null
fi
# shellcheck disable=SC2086 # KAFKA_HEAP_OPTS holds several JVM flags
exec java $KAFKA_HEAP_OPTS -XX:+UseG1GC -Dorg.slf4j.simpleLogger.showDateTime=true -cp "$CP" kafka.Kafka "$PROPS"
