{{/* The prefix of every name: fullnameOverride; else the release name, followed by nameOverride when that is
set and the release name does not contain it (Helm's convention; without either, the release name, as before). */}}
{{- define "ticketing.prefix" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else if and .Values.nameOverride (not (contains .Values.nameOverride .Release.Name)) -}}
{{- printf "%s-%s" .Release.Name .Values.nameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- .Release.Name -}}
{{- end -}}
{{- end -}}

{{/* Names: <prefix>-<service>[-<deployment>], cut to Kubernetes' 63 characters. */}}
{{- define "ticketing.name" -}}
{{- printf "%s-%s" (include "ticketing.prefix" .root) .name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The ServiceAccount of a service's pods (`name`: the service, or "hooks"). */}}
{{- define "ticketing.serviceAccountName" -}}
{{- if .root.Values.serviceAccount.create -}}
{{- include "ticketing.name" (dict "root" .root "name" .name) -}}
{{- else -}}
{{- .root.Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "ticketing.labels" -}}
app.kubernetes.io/name: {{ .service }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/part-of: ticketing
app.kubernetes.io/version: {{ .root.Values.image.tag | default .root.Chart.AppVersion | quote }}
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

{{/* repository@digest when image.digest is set (the image that was tested, whatever the tag points at now). */}}
{{- define "ticketing.image" -}}
{{- if .Values.image.digest -}}
{{ printf "%s@%s" .Values.image.repository .Values.image.digest | quote }}
{{- else -}}
{{ printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) | quote }}
{{- end -}}
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

{{/* env entries for keys of existing Secrets: secretRefs (name -> {name, key}), with `jwt` the JWT key and with
`contacts` the buyers' contacts key (unless secretRefs already names CONTACTS_API_KEY). */}}
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
{{- if and .contacts .root.Values.contacts.enabled (not (hasKey (.refs | default dict) "CONTACTS_API_KEY")) }}
- name: CONTACTS_API_KEY
  valueFrom:
    secretKeyRef: {name: {{ include "ticketing.contactsSecretName" .root | quote }}, key: {{ .root.Values.contacts.key | quote }}}
{{- end }}
{{- end -}}

{{/* The Secret holding the buyers' contacts key: contacts.existingSecret, else the chart's own (secrets.yaml). */}}
{{- define "ticketing.contactsSecretName" -}}
{{- .Values.contacts.existingSecret | default (include "ticketing.name" (dict "root" . "name" "contacts")) -}}
{{- end -}}

{{/* A key the chart keeps in a Secret of its own (secrets.yaml): `value`, else the one the cluster holds in
`secret` (read back, so an upgrade never rotates it), else a new one when the render can see the cluster; a
render that cannot (helm template, GitOps) stops and says which values to set. */}}
{{- define "ticketing.keptKey" -}}
{{- $key := .value }}
{{- if not $key }}
{{- $existing := lookup "v1" "Secret" .root.Release.Namespace .secret }}
{{- if $existing }}
{{- $key = index ($existing.data | default dict) .key | default "" | b64dec }}
{{- else if lookup "v1" "Secret" .root.Release.Namespace "" }}
{{- $key = randAlphaNum 48 }}
{{- else }}
{{- fail (printf "%s: this render cannot read the cluster, so a generated %s would change at every render: set %s.existingSecret to a Secret you manage (key %s.key), or %s.value (deploy/README.md, \"Secrets\")" .values .what .values .values .values) }}
{{- end }}
{{- end }}
{{- $key -}}
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

{{/* The pod fields every workload shares; `.sa`: its ServiceAccount (no API token is mounted: no pod calls the
Kubernetes API, and a stolen token could). */}}
{{- define "ticketing.podCommon" -}}
{{- $root := .root -}}
serviceAccountName: {{ include "ticketing.serviceAccountName" (dict "root" $root "name" .sa) }}
automountServiceAccountToken: false
{{- with $root.Values.imagePullSecrets }}
imagePullSecrets: {{- toYaml . | nindent 2 }}
{{- end }}
securityContext: {{- toYaml $root.Values.podSecurityContext | nindent 2 }}
{{- with $root.Values.nodeSelector }}
nodeSelector: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $root.Values.tolerations }}
tolerations: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $root.Values.affinity }}
affinity: {{- toYaml . | nindent 2 }}
{{- end }}
volumes: {{- include "ticketing.volumes" $root | nindent 2 }}
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

{{/* A service's API Deployments, as JSON (fromJson): component -> its values; `api` and hold-service's
`internal-api` (services.<name>.internalApi), those that are set. */}}
{{- define "ticketing.apis" -}}
{{- $apis := dict }}
{{- if .api }}{{ $_ := set $apis "api" .api }}{{ end }}
{{- if .internalApi }}{{ $_ := set $apis "internal-api" .internalApi }}{{ end }}
{{- toJson $apis }}
{{- end -}}

{{/* The API Deployment the release's other services call (its component): hold-service's internal API when it has
one (values.yaml, internalApi), else the public one. */}}
{{/* hold-service's door for the other services, as a URL (payment's HOLD_SERVICE_URL, the notifier's CONTACTS_URL). */}}
{{- define "ticketing.holdDoorUrl" -}}
{{- $hold := index .Values.services "hold-service" }}
{{- $door := include "ticketing.door" $hold }}
{{- printf "http://%s:%v" (include "ticketing.name" (dict "root" . "name" (printf "hold-service-%s" $door))) (index (include "ticketing.apis" $hold | fromJson) $door).port -}}
{{- end -}}

{{- define "ticketing.door" -}}
{{- ternary "internal-api" "api" (not (empty .internalApi)) -}}
{{- end -}}
