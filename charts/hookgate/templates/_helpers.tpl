{{/*
Names and labels.
*/}}
{{- define "hookgate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "hookgate.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "hookgate.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "hookgate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "hookgate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "hookgate.labels" -}}
helm.sh/chart: {{ include "hookgate.chart" . }}
{{ include "hookgate.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
The headless Service that exposes the admin port to a ServiceMonitor, its
extra label (so the ServiceMonitor selects it and not the public Service), and
the dashboard ConfigMap: the full name plus a suffix, within 63 characters.
*/}}
{{- define "hookgate.metricsName" -}}
{{- printf "%s-metrics" (include "hookgate.fullname" . | trunc 55 | trimSuffix "-") }}
{{- end }}

{{- define "hookgate.metricsLabels" -}}
app.kubernetes.io/component: metrics
{{- end }}

{{- define "hookgate.dashboardName" -}}
{{- printf "%s-dashboard" (include "hookgate.fullname" . | trunc 53 | trimSuffix "-") }}
{{- end }}

{{- define "hookgate.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "hookgate.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
Image references: repository, then ":tag" when a tag is set.
*/}}
{{- define "hookgate.appImage" -}}
{{- $repo := required "app.image.repository is required: the image of the application hookgate fronts" .Values.app.image.repository }}
{{- with .Values.app.image.tag }}{{ printf "%s:%s" $repo . }}{{ else }}{{ $repo }}{{ end }}
{{- end }}

{{- define "hookgate.hookgateImage" -}}
{{- printf "%s:%s" .Values.hookgate.image.repository (default .Chart.AppVersion .Values.hookgate.image.tag) }}
{{- end }}

{{/*
Where Kubernetes Secrets named by sources[].secrets[].secretName are mounted in
the hookgate container: <dir>/<secretName>/<key>.
*/}}
{{- define "hookgate.secretsDir" -}}
/var/run/secrets/hookgate
{{- end }}

{{/*
The sqlite store: the directory of store.path (where its volume is mounted),
the volume's name, and the claim it uses with persistence.enabled.
*/}}
{{- define "hookgate.storeDir" -}}
{{- dir (clean (toString .Values.store.path)) }}
{{- end }}

{{- define "hookgate.storeClaimName" -}}
{{- default (printf "%s-store" (include "hookgate.fullname" . | trunc 57 | trimSuffix "-")) .Values.persistence.existingClaim }}
{{- end }}

{{/*
The distinct secretName values of all sources, sorted, one per line.
*/}}
{{- define "hookgate.secretNames" -}}
{{- $names := list }}
{{- range ((.Values.store.encryption | default dict).keys | default list) }}
{{- if and (kindIs "map" .) (hasKey . "secretName") }}
{{- $names = append $names (toString .secretName) }}
{{- end }}
{{- end }}
{{- range .Values.sources }}
{{- range .secrets }}
{{- if and (kindIs "map" .) (hasKey . "secretName") }}
{{- $names = append $names (toString .secretName) }}
{{- end }}
{{- end }}
{{- end }}
{{- $names | uniq | sortAlpha | join "\n" }}
{{- end }}

{{/*
The pod volume name for a Secret name (a DNS label: no dots, at most 63
characters, unique through a hash of the full name).
*/}}
{{- define "hookgate.secretVolumeName" -}}
{{- printf "secret-%s" (. | replace "." "-" | trunc 40 | trimSuffix "-") }}-{{ sha256sum . | trunc 8 }}
{{- end }}

{{/*
Refuse values hookgate could not run with. Included by every manifest that
depends on them, so `helm template` and `helm install` stop with the reason.
*/}}
{{- define "hookgate.validate" -}}
{{- $kind := .Values.store.kind }}
{{- if not (has $kind (list "sqlite" "memory" "redis" "redis-cluster")) }}
{{- fail (printf "store.kind must be sqlite, memory, redis or redis-cluster, not %q" (toString $kind)) }}
{{- end }}
{{- if and (eq $kind "memory") (gt (int .Values.replicaCount) 1) }}
{{- fail "store.kind \"memory\" keeps seen event ids inside one process: with replicaCount > 1 a duplicate could get through another pod. Use a Redis store (store.kind \"redis\" or \"redis-cluster\"), or replicaCount: 1" }}
{{- end }}
{{- if and (eq $kind "sqlite") (gt (int .Values.replicaCount) 1) }}
{{- fail "store.kind \"sqlite\" keeps seen event ids, the queue and dead letters in one file of one pod: with replicaCount > 1 each pod would have its own and a duplicate could get through another pod. Use a Redis store (store.kind \"redis\" or \"redis-cluster\"), or replicaCount: 1" }}
{{- end }}
{{- if eq $kind "sqlite" }}
{{- $path := toString .Values.store.path }}
{{- if not (isAbs $path) }}
{{- fail (printf "store.path must be an absolute file path (the chart mounts the store's volume at its directory), not %q" $path) }}
{{- end }}
{{- $dir := include "hookgate.storeDir" . }}
{{- if or (eq $dir "/") (hasSuffix "/" $path) }}
{{- fail (printf "store.path %q must name a file in a directory below /, e.g. /var/lib/hookgate/hookgate.db" $path) }}
{{- end }}
{{- $under := printf "%s/" $dir }}
{{- range $taken := list "/etc/hookgate/" (printf "%s/" (include "hookgate.secretsDir" $)) }}
{{- if or (hasPrefix $taken $under) (hasPrefix $under $taken) }}
{{- fail (printf "store.path %q: the store's volume at %s would overlap the mount at %s; use e.g. /var/lib/hookgate/hookgate.db" $path $dir (trimSuffix "/" $taken)) }}
{{- end }}
{{- end }}
{{- if not (has .Values.store.sync (list "full" "normal")) }}
{{- fail (printf "store.sync must be full or normal, not %q" (toString .Values.store.sync)) }}
{{- end }}
{{- range $mode := .Values.persistence.accessModes }}
{{- if and $.Values.persistence.enabled (not $.Values.persistence.existingClaim) (not (has $mode (list "ReadWriteOnce" "ReadWriteOncePod"))) }}
{{- fail (printf "persistence.accessModes: %s is not for the sqlite store: a volume several pods or nodes share is a network filesystem, where SQLite's WAL is not safe; use ReadWriteOnce or ReadWriteOncePod" $mode) }}
{{- end }}
{{- end }}
{{- if and .Values.persistence.enabled (eq (toString (.Values.strategy).type) "RollingUpdate") }}
{{- fail "store.kind \"sqlite\" with persistence.enabled needs strategy.type Recreate (or strategy: {}): in a rolling update the new pod waits for a ReadWriteOnce volume the old pod holds, or two pods serve one database file" }}
{{- end }}
{{- end }}
{{- if and (eq $kind "redis") (not .Values.store.url) }}
{{- fail "store.kind \"redis\" needs store.url" }}
{{- end }}
{{- if and (eq $kind "redis-cluster") (not .Values.store.urls) }}
{{- fail "store.kind \"redis-cluster\" needs store.urls" }}
{{- end }}
{{- if not (has .Values.hookgate.configKind (list "ConfigMap" "Secret")) }}
{{- fail "hookgate.configKind must be ConfigMap or Secret" }}
{{- end }}
{{- if not .Values.sources }}
{{- fail "sources is empty: list at least one webhook source for hookgate to verify" }}
{{- end }}
{{- if eq (int .Values.hookgate.port) (int .Values.app.port) }}
{{- fail "hookgate.port and app.port must differ: both containers share the pod's network" }}
{{- end }}
{{- if eq (int .Values.hookgate.adminPort) (int .Values.app.port) }}
{{- fail "hookgate.adminPort and app.port must differ: both containers share the pod's network" }}
{{- end }}
{{- end }}

{{/*
A value rendered as TOML: strings as basic strings (JSON string escapes are
valid TOML), booleans, integers, arrays and inline tables.
*/}}
{{- define "hookgate.tomlValue" -}}
{{- $v := . }}
{{- if kindIs "string" $v }}{{ toJson $v }}
{{- else if kindIs "bool" $v }}{{ $v }}
{{- else if or (kindIs "float64" $v) (kindIs "int" $v) (kindIs "int64" $v) (kindIs "uint64" $v) }}{{ int64 $v }}
{{- else if kindIs "slice" $v }}[{{ range $i, $e := $v }}{{ if $i }}, {{ end }}{{ include "hookgate.tomlValue" $e }}{{ end }}]
{{- else if kindIs "map" $v }}{ {{- range $i, $k := keys $v | sortAlpha }}{{ if $i }},{{ end }} {{ include "hookgate.tomlKey" $k }} = {{ include "hookgate.tomlValue" (index $v $k) }}{{ end }} }
{{- else }}{{ fail (printf "cannot write %v (%s) into the TOML config" $v (kindOf $v)) }}
{{- end }}
{{- end }}

{{- define "hookgate.tomlKey" -}}
{{- if regexMatch "^[A-Za-z0-9_-]+$" . }}{{ . }}{{ else }}{{ toJson . }}{{ end }}
{{- end }}

{{/*
One secret entry of a source: { file = … } for a Kubernetes Secret key mounted
by the chart, { env = … } for an environment variable.
*/}}
{{- define "hookgate.secretRef" -}}
{{- $s := .secret }}
{{- if and (kindIs "map" $s) (hasKey $s "secretName") }}
{{- $key := required (printf "sources[%s].secrets: an entry with secretName needs a key" .source) $s.key }}
{{- printf "{ file = %s }" (printf "%s/%s/%s" (include "hookgate.secretsDir" .) $s.secretName $key | toJson) }}
{{- else if and (kindIs "map" $s) (hasKey $s "env") }}
{{- printf "{ env = %s }" (toString $s.env | toJson) }}
{{- else }}
{{- fail (printf "sources[%s].secrets: each entry is { secretName: NAME, key: KEY } or { env: VARIABLE }; literal secrets would be stored in a ConfigMap" .source) }}
{{- end }}
{{- end }}

{{/*
The hookgate config file (TOML), as in hookgate's documentation.
*/}}
{{- define "hookgate.config" -}}
# Rendered by the {{ .Chart.Name }} chart ({{ .Chart.Version }}) for release {{ .Release.Name }}.
[server]
listen = {{ printf "0.0.0.0:%d" (int .Values.hookgate.port) | toJson }}
upstream = {{ printf "http://127.0.0.1:%d" (int .Values.app.port) | toJson }}
upstream_timeout = {{ .Values.hookgate.server.upstreamTimeout | toString | toJson }}
max_body_bytes = {{ int64 .Values.hookgate.server.maxBodyBytes }}
unmatched = {{ .Values.hookgate.server.unmatched | toJson }}
{{- with .Values.hookgate.server.trustedProxies }}
trusted_proxies = {{ include "hookgate.tomlValue" . }}
{{- end }}

[admin]
listen = {{ printf "0.0.0.0:%d" (int .Values.hookgate.adminPort) | toJson }}

[store]
kind = {{ .Values.store.kind | toJson }}
{{- if eq .Values.store.kind "sqlite" }}
path = {{ clean (toString .Values.store.path) | toJson }}
sync = {{ .Values.store.sync | toJson }}
{{- else if eq .Values.store.kind "redis" }}
url = {{ .Values.store.url | toJson }}
{{- else if eq .Values.store.kind "redis-cluster" }}
urls = {{ include "hookgate.tomlValue" .Values.store.urls }}
{{- end }}
nonce_ttl = {{ .Values.store.nonceTtl | toString | toJson }}
key_prefix = {{ .Values.store.keyPrefix | toJson }}
{{- if eq .Values.store.kind "memory" }}
memory_max_entries = {{ int64 .Values.store.memoryMaxEntries }}
{{- end }}
{{- with ((.Values.store.encryption | default dict).keys | default list) }}

[store.encryption]
keys = [
{{- range $i, $k := . }}
  { id = {{ required (printf "store.encryption.keys[%d] needs an id" $i) $k.id | toString | toJson }}, key = {{ include "hookgate.secretRef" (dict "secret" $k "source" "store.encryption") }} },
{{- end }}
]
{{- end }}
{{- range $i, $src := .Values.sources }}
{{- $name := required (printf "sources[%d] needs a name" $i) $src.name }}

[[source]]
name = {{ $name | toJson }}
path = {{ required (printf "sources[%s] needs a path" $name) $src.path | toJson }}
scheme = {{ required (printf "sources[%s] needs a scheme" $name) $src.scheme | toJson }}
secrets = [
{{- range $j, $secret := (required (printf "sources[%s] needs secrets" $name) $src.secrets) }}
  {{ include "hookgate.secretRef" (dict "secret" $secret "source" $name) }},
{{- end }}
]
{{- range $k := keys $src | sortAlpha }}
{{- if not (has $k (list "name" "path" "scheme" "secrets" "ordering" "generic")) }}
{{ include "hookgate.tomlKey" $k }} = {{ include "hookgate.tomlValue" (index $src $k) }}
{{- end }}
{{- end }}
{{- range $table := list "ordering" "generic" }}
{{- $t := index $src $table }}
{{- if $t }}

[source.{{ $table }}]
{{- range $k := keys $t | sortAlpha }}
{{ include "hookgate.tomlKey" $k }} = {{ include "hookgate.tomlValue" (index $t $k) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- with .Values.tracing }}
{{- if .otlpEndpoint }}

[tracing]
otlp_endpoint = {{ .otlpEndpoint | toJson }}
sample_ratio = {{ .sampleRatio | float64 }}
{{- with .serviceName }}
service_name = {{ . | toJson }}
{{- end }}
{{- with .traceUrl }}
trace_url = {{ . | toJson }}
{{- end }}
{{- end }}
{{- end }}
{{ end }}
