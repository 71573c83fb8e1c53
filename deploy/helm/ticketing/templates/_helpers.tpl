{{/* Names: <release>-<service>[-<deployment>], cut to Kubernetes' 63 characters. */}}
{{- define "ticketing.name" -}}
{{- printf "%s-%s" .root.Release.Name .name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "ticketing.labels" -}}
app.kubernetes.io/name: {{ .service }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/part-of: ticketing
app.kubernetes.io/version: {{ .root.Values.image.tag | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
{{- if .component }}
app.kubernetes.io/component: {{ .component }}
{{- end }}
{{- end -}}

{{- define "ticketing.selector" -}}
app.kubernetes.io/name: {{ .service }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "ticketing.image" -}}
{{ printf "%s:%s" .Values.image.repository .Values.image.tag | quote }}
{{- end -}}

{{/* The Kafka settings of one client identity (user = SASL username), as a YAML map of env var -> value. */}}
{{- define "ticketing.kafkaEnv" -}}
{{- $k := .root.Values.kafka -}}
KAFKA_BOOTSTRAP_SERVERS: {{ $k.bootstrapServers | quote }}
KAFKA_SECURITY_PROTOCOL: {{ $k.securityProtocol | quote }}
{{- if $k.groupPrefix }}
KAFKA_GROUP_PREFIX: {{ $k.groupPrefix | quote }}
{{- end }}
{{- if hasPrefix "SASL" $k.securityProtocol }}
KAFKA_SASL_MECHANISM: {{ $k.saslMechanism | quote }}
KAFKA_SASL_USERNAME: {{ .user | quote }}
{{- end }}
{{- if hasSuffix "SSL" $k.securityProtocol }}
KAFKA_SSL_CHECK_HOSTNAME: {{ $k.tls.checkHostname | quote }}
{{- if $k.tls.caSecret }}
KAFKA_SSL_CAFILE: {{ printf "/etc/ticketing/kafka-ca/%s" $k.tls.caKey | quote }}
{{- end }}
{{- end }}
KAFKA_TOPIC_REPLICATION_FACTOR: {{ $k.topics.replicationFactor | quote }}
{{- if $k.topics.minInsyncReplicas }}
KAFKA_TOPIC_MIN_INSYNC_REPLICAS: {{ $k.topics.minInsyncReplicas | quote }}
{{- end }}
KAFKA_TOPIC_PARTITIONS: {{ $k.topics.partitions | toJson | quote }}
{{- end -}}

{{/* env entries for keys of existing Secrets: secretRefs (name -> {name, key}) and, with `jwt`, the JWT key. */}}
{{- define "ticketing.secretRefEnv" -}}
{{- range $env, $ref := .refs }}
- name: {{ $env }}
  valueFrom:
    secretKeyRef: {name: {{ $ref.name | quote }}, key: {{ $ref.key | quote }}}
{{- end }}
{{- if .jwt }}
- name: JWT_SECRET
  valueFrom:
    secretKeyRef: {name: {{ include "ticketing.jwtSecretName" .root | quote }}, key: {{ .root.Values.jwt.key | quote }}}
{{- end }}
{{- end -}}

{{/* The Secret holding the JWT key: jwt.existingSecret, else the chart's own (secrets.yaml). */}}
{{- define "ticketing.jwtSecretName" -}}
{{- .Values.jwt.existingSecret | default (include "ticketing.name" (dict "root" . "name" "jwt")) -}}
{{- end -}}

{{/* Volumes every pod has: a writable /tmp (the root filesystem is read-only) and the Kafka CA if any. */}}
{{- define "ticketing.volumes" -}}
- name: tmp
  emptyDir: {sizeLimit: 256Mi}
{{- if .Values.kafka.tls.caSecret }}
- name: kafka-ca
  secret: {secretName: {{ .Values.kafka.tls.caSecret | quote }}}
{{- end }}
{{- end -}}

{{- define "ticketing.volumeMounts" -}}
- {name: tmp, mountPath: /tmp}
{{- if .Values.kafka.tls.caSecret }}
- {name: kafka-ca, mountPath: /etc/ticketing/kafka-ca, readOnly: true}
{{- end }}
{{- end -}}

{{- define "ticketing.podCommon" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets: {{- toYaml . | nindent 2 }}
{{- end }}
securityContext: {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.nodeSelector }}
nodeSelector: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity: {{- toYaml . | nindent 2 }}
{{- end }}
volumes: {{- include "ticketing.volumes" . | nindent 2 }}
{{- end -}}

{{/* Whether the chart renders the service's own Secret (something to put in it, no existingSecret). */}}
{{- define "ticketing.ownSecret" -}}
{{- if and (not .svc.existingSecret) .svc.secretEnv -}}true{{- end -}}
{{- end -}}

{{/* The Secret a service's pods read whole (envFrom): its own, or the one named by existingSecret. */}}
{{- define "ticketing.secretName" -}}
{{- .svc.existingSecret | default (include "ticketing.name" (dict "root" .root "name" .service)) -}}
{{- end -}}

{{/* TRUSTED_PROXIES of hold-service: the peers whose X-Forwarded-For is believed. With the chart's Ingress,
its controller's addresses (ingress.controllerCidrs, required then); without, trustedProxies (default none:
the peer's address decides). */}}
{{- define "ticketing.trustedProxies" -}}
{{- if .Values.ingress.enabled -}}
{{- if not .Values.ingress.controllerCidrs -}}
{{- fail "ingress.enabled needs ingress.controllerCidrs: the ingress controller pods' addresses (CIDRs). Without them every customer would count as the controller's one address, or anyone could forge X-Forwarded-For" -}}
{{- end -}}
{{- join "," (concat .Values.ingress.controllerCidrs .Values.trustedProxies | uniq) -}}
{{- else -}}
{{- join "," .Values.trustedProxies -}}
{{- end -}}
{{- end -}}
