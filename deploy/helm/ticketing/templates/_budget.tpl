{{/*
The database connections the release's pods may hold at most, and the check against database.maxConnections
(values.yaml, "database"): per service, each API's maxReplicas (its replicas without an HPA) x WEB_CONCURRENCY
(uvicorn's processes, default 1) x DB_POOL_MAX (default 20, the notifier's 5), plus each worker Deployment's
replicas x DB_POOL_MAX (a worker is one process, one pool), plus the connections of a session of their own
outside the pools: hold-service's seat-map feed (LISTEN, one per API process) and the outbox relay's leadership
(an advisory lock and LISTEN, one per relay pod). An HPA that may add pods the database cannot serve turns an
opening's peak into "too many connections" on every pod; the render stops instead.

With database.cloudnativepg.pooler on, the pools reach PostgreSQL through PgBouncer (transaction mode): the
server then sees the pooler's instances x 4 roles x defaultPoolSize plus the session connections, and the
pools' sum must fit the pooler's instances x maxClientConn.
*/}}
{{- define "ticketing.connectionBudget" -}}
{{- $total := 0 }}
{{- $sessions := 0 }}
{{- $lines := list }}
{{- range $service, $svc := .Values.services }}
{{- $env := $svc.env | default dict }}
{{- $pool := int (index $env "DB_POOL_MAX" | default (ternary 5 20 (eq $service "notifier"))) }}
{{- range $component, $api := include "ticketing.apis" $svc | fromJson }}
{{- $a := $api.autoscaling | default dict }}
{{- $pods := int (ternary ($a.maxReplicas | default 0) ($api.replicas | default 1) (and $a.enabled true)) }}
{{- $procs := int (index $env "WEB_CONCURRENCY" | default 1) }}
{{- $feed := ternary 1 0 (eq $service "hold-service") }}
{{- $total = add $total (mul $pods $procs $pool) }}
{{- $sessions = add $sessions (mul $pods $procs $feed) }}
{{- $lines = append $lines (printf "%s %s %d pods x %d processes x %d%s" $service $component $pods $procs $pool (ternary " + 1 LISTEN" "" (eq $feed 1))) }}
{{- end }}
{{- range $name, $worker := $svc.workers }}
{{- $relay := ternary 1 0 (has "relay" ($worker.roles | default list)) }}
{{- $total = add $total (mul ($worker.replicas | default 1) $pool) }}
{{- $sessions = add $sessions (mul ($worker.replicas | default 1) $relay) }}
{{- $lines = append $lines (printf "%s %s %d pods x %d%s" $service $name (int ($worker.replicas | default 1)) $pool (ternary " + 1 relay session" "" (eq $relay 1))) }}
{{- end }}
{{- end }}
{{- $max := int .Values.database.maxConnections }}
{{- $cnpg := .Values.database.cloudnativepg | default dict }}
{{- if and $cnpg.enabled (not $max) }}
{{- $max = sub (int (index $cnpg.parameters "max_connections")) 10 }}
{{- end }}
{{- $pooler := $cnpg.pooler | default dict }}
{{- $server := add $total $sessions }}
{{- if and $cnpg.enabled $pooler.enabled }}
{{- $clients := mul (int $pooler.instances) (int $pooler.maxClientConn) }}
{{- if gt (int $total) (int $clients) }}
{{- fail (printf "the pooler takes %d client connections (%d instances x maxClientConn %d) but the pods' pools may open %d (%s)" (int $clients) (int $pooler.instances) (int $pooler.maxClientConn) (int $total) (join ", " $lines)) }}
{{- end }}
{{- $server = add (mul (int $pooler.instances) 4 (int $pooler.defaultPoolSize)) $sessions }}
{{- end }}
{{- if and $max (gt (int $server) $max) }}
{{- fail (printf "database.maxConnections is %d but the pods may open %d connections (%s; %d of them sessions of their own): lower the APIs' autoscaling.maxReplicas or DB_POOL_MAX (a service's env), or put a pooler in front (database.cloudnativepg.pooler) and give its pool size" $max (int $server) (join ", " $lines) (int $sessions)) }}
{{- end }}
{{- $server -}}
{{- end -}}
