{{/*
The database connections the release's pods may hold at most, and the check against database.maxConnections
(values.yaml, "database"): per service, the API's maxReplicas (its replicas without an HPA) x WEB_CONCURRENCY
(uvicorn's processes, default 1) x DB_POOL_MAX (default 20, the notifier's 5), plus each worker Deployment's
replicas x DB_POOL_MAX (a worker is one process, one pool). An HPA that may add pods the database cannot
serve turns an opening's peak into "too many connections" on every pod; the render stops instead.
*/}}
{{- define "ticketing.connectionBudget" -}}
{{- $total := 0 }}
{{- $lines := list }}
{{- range $service, $svc := .Values.services }}
{{- $env := $svc.env | default dict }}
{{- $pool := int (index $env "DB_POOL_MAX" | default (ternary 5 20 (eq $service "notifier"))) }}
{{- if $svc.api }}
{{- $a := $svc.api.autoscaling | default dict }}
{{- $pods := int (ternary ($a.maxReplicas | default 0) ($svc.api.replicas | default 1) (and $a.enabled true)) }}
{{- $procs := int (index $env "WEB_CONCURRENCY" | default 1) }}
{{- $total = add $total (mul $pods $procs $pool) }}
{{- $lines = append $lines (printf "%s api %d pods x %d processes x %d" $service $pods $procs $pool) }}
{{- end }}
{{- range $name, $worker := $svc.workers }}
{{- $total = add $total (mul ($worker.replicas | default 1) $pool) }}
{{- $lines = append $lines (printf "%s %s %d pods x %d" $service $name (int ($worker.replicas | default 1)) $pool) }}
{{- end }}
{{- end }}
{{- $max := int .Values.database.maxConnections }}
{{- if and $max (gt (int $total) $max) }}
{{- fail (printf "database.maxConnections is %d but the pods may open %d connections (%s): lower the APIs' autoscaling.maxReplicas or DB_POOL_MAX (a service's env), or put PgBouncer in front and give its pool size" $max (int $total) (join ", " $lines)) }}
{{- end }}
{{- $total -}}
{{- end -}}
