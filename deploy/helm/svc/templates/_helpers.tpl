{{/*
Names, labels and the derived settings every template shares.
*/}}

{{- define "svc.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "svc.fullname" -}}
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

{{/* A component's resource name: <fullname>-<component>, within 63 characters. */}}
{{- define "svc.componentName" -}}
{{- printf "%s-%s" (include "svc.fullname" .root | trunc 50 | trimSuffix "-") .component }}
{{- end }}

{{- define "svc.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "svc.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "svc.selectorLabels" -}}
app.kubernetes.io/name: {{ include "svc.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Labels of a component's objects; takes (dict "root" $ "component" "control"). */}}
{{- define "svc.componentLabels" -}}
{{ include "svc.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "svc.componentSelectorLabels" -}}
{{ include "svc.selectorLabels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "svc.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "svc.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "svc.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/*
Secrets. The chart's own Secret holds whatever credential is given as a value
rather than as an existing Secret; the key ring has a Secret of its own, kept
on uninstall.
*/}}
{{- define "svc.secretName" -}}
{{- include "svc.fullname" . }}
{{- end }}

{{- define "svc.keyringSecretName" -}}
{{- default (printf "%s-keyring" (include "svc.fullname" .)) .Values.keyring.existingSecret }}
{{- end }}

{{- define "svc.keyringSecretKey" -}}
{{- if .Values.keyring.existingSecret }}{{ .Values.keyring.existingSecretKey }}{{ else }}keyring.json{{ end }}
{{- end }}

{{/* Whether the chart creates its credentials Secret (some credential is a value). */}}
{{- define "svc.ownSecret" -}}
{{- if or (not .Values.database.existingSecret) (not .Values.redis.existingSecret) (not .Values.objectStore.existingSecret) }}true{{ end }}
{{- end }}

{{/* The variable SVC_DATABASE__URL, from its Secret; takes (dict "root" $ "secret" NAME). */}}
{{- define "svc.env.database" -}}
- name: SVC_DATABASE__URL
  valueFrom:
    secretKeyRef:
      name: {{ .secret }}
      key: {{ ternary .root.Values.database.existingSecretKey "database-url" (ne .root.Values.database.existingSecret "") }}
{{- end }}

{{/* The credentials of a replica, from the Secrets that hold them. */}}
{{- define "svc.env.credentials" -}}
{{ include "svc.env.database" (dict "root" . "secret" (default (include "svc.secretName" .) .Values.database.existingSecret)) }}
- name: SVC_REDIS__URL
  valueFrom:
    secretKeyRef:
      name: {{ default (include "svc.secretName" .) .Values.redis.existingSecret }}
      key: {{ ternary .Values.redis.existingSecretKey "redis-url" (ne .Values.redis.existingSecret "") }}
- name: SVC_OBJECT_STORE__ACCESS_KEY_ID
  valueFrom:
    secretKeyRef:
      name: {{ default (include "svc.secretName" .) .Values.objectStore.existingSecret }}
      key: {{ ternary .Values.objectStore.accessKeyIdKey "s3-access-key-id" (ne .Values.objectStore.existingSecret "") }}
- name: SVC_OBJECT_STORE__SECRET_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ default (include "svc.secretName" .) .Values.objectStore.existingSecret }}
      key: {{ ternary .Values.objectStore.secretAccessKeyKey "s3-secret-access-key" (ne .Values.objectStore.existingSecret "") }}
{{- end }}

{{/*
The configuration file: the values' config with the keys the chart owns.
*/}}
{{- define "svc.config" -}}
{{- $cfg := deepCopy (default dict .Values.config) }}
{{- $server := default dict (get $cfg "server") }}
{{- $_ := set $server "listen" ":8080" }}
{{- $_ := set $cfg "server" $server }}
{{- $db := default dict (get $cfg "database") }}
{{- $_ := set $db "auto_migrate" false }}
{{- $_ := set $cfg "database" $db }}
{{- $enc := default dict (get $cfg "encryption") }}
{{- $_ := set $enc "key_file" (printf "/etc/svc/keyring/%s" (include "svc.keyringSecretKey" .)) }}
{{- $_ := set $cfg "encryption" $enc }}
{{- if .Values.metrics.enabled }}
{{- $metrics := default dict (get $cfg "metrics") }}
{{- $_ := set $metrics "listen" (printf ":%d" (int .Values.metrics.port)) }}
{{- $_ := set $cfg "metrics" $metrics }}
{{- end }}
{{- include "svc.toml" $cfg }}
{{- end }}

{{/* TOML of a map of sections (tables); nested maps become dotted tables. */}}
{{- define "svc.toml" -}}
{{- $root := . }}
{{- $tables := list }}
{{- range $section := keys $root | sortAlpha }}
{{- $table := get $root $section }}
{{- if not (kindIs "map" $table) }}
{{- fail (printf "config.%s: a configuration key belongs to a section (config.SECTION.KEY)" $section) }}
{{- end }}
{{- $tables = append $tables (include "svc.toml.table" (dict "path" $section "table" $table)) }}
{{- end }}
{{- join "\n\n" $tables }}
{{- end }}

{{/* One table and the tables nested in it, separated by blank lines. */}}
{{- define "svc.toml.table" -}}
{{- $table := .table }}
{{- $path := .path }}
{{- $lines := list (printf "[%s]" $path) }}
{{- $nested := list }}
{{- range $k := keys $table | sortAlpha }}
{{- if not (regexMatch "^[A-Za-z0-9_-]+$" $k) }}
{{- fail (printf "config.%s.%s: not a configuration key" $path $k) }}
{{- end }}
{{- $v := get $table $k }}
{{- if kindIs "map" $v }}
{{- $nested = append $nested (include "svc.toml.table" (dict "path" (printf "%s.%s" $path $k) "table" $v)) }}
{{- else }}
{{- $lines = append $lines (printf "%s = %s" $k (include "svc.toml.value" (dict "path" (printf "%s.%s" $path $k) "value" $v))) }}
{{- end }}
{{- end }}
{{- join "\n\n" (prepend $nested (join "\n" $lines)) }}
{{- end }}

{{/* A TOML value; numbers without a fraction are written as integers. */}}
{{- define "svc.toml.value" -}}
{{- $v := .value }}
{{- if kindIs "string" $v }}
{{- toJson $v }}
{{- else if kindIs "bool" $v }}
{{- $v }}
{{- else if or (kindIs "float64" $v) (kindIs "int" $v) (kindIs "int64" $v) }}
{{- if eq (float64 $v) (floor $v) }}{{ int64 $v }}{{ else }}{{ $v }}{{ end }}
{{- else if kindIs "slice" $v }}
{{- $path := .path }}
{{- $items := list }}
{{- range $e := $v }}
{{- $items = append $items (include "svc.toml.value" (dict "path" $path "value" $e)) }}
{{- end }}
{{- printf "[%s]" (join ", " $items) }}
{{- else }}
{{- fail (printf "config.%s: a value must be a string, number, boolean or list, not %s" .path (kindOf $v)) }}
{{- end }}
{{- end }}

{{/* Whole seconds (rounded up) of a Go duration string such as "30s" or "1m30s". */}}
{{- define "svc.durationSeconds" -}}
{{- $d := toString .value }}
{{- $unit := "[0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h)" }}
{{- if eq $d "0" }}0
{{- else if not (regexMatch (printf "^(%s)+$" $unit) $d) }}
{{- fail (printf "%s: %q is not a duration such as \"30s\" or \"1m30s\"" .path $d) }}
{{- else }}
{{- $seconds := dict "h" 3600.0 "m" 60.0 "s" 1.0 "ms" 0.001 "us" 0.000001 "µs" 0.000001 "ns" 0.000000001 }}
{{- $total := 0.0 }}
{{- range $part := regexFindAll $unit $d -1 }}
{{- $number := regexFind "^[0-9]+(\\.[0-9]+)?" $part }}
{{- $total = addf $total (mulf (float64 $number) (get $seconds (trimPrefix $number $part))) }}
{{- end }}
{{- ceil $total | int }}
{{- end }}
{{- end }}

{{/* How long a stopping control process may take: server.shutdown_timeout (30s by default). */}}
{{- define "svc.shutdownSeconds" -}}
{{- $server := default dict .Values.config.server }}
{{- include "svc.durationSeconds" (dict "path" "config.server.shutdown_timeout" "value" (default "30s" $server.shutdown_timeout)) }}
{{- end }}

{{/*
The longest a stopping process of a component may take, preStop sleep included:
a worker waits for the longer of server.shutdown_timeout and
worker.drain_seconds + 10 s (internal/app, Shutdown).
*/}}
{{- define "svc.stopSeconds" -}}
{{- $root := .root }}
{{- $shutdown := include "svc.shutdownSeconds" $root | int }}
{{- if eq .component "worker" }}
{{- $worker := default dict $root.Values.config.worker }}
{{- $drain := ternary 30 (int $worker.drain_seconds) (kindIs "invalid" $worker.drain_seconds) }}
{{- max $shutdown (add $drain 10) }}
{{- else }}
{{- add $shutdown (int $root.Values.control.preStopSleepSeconds) }}
{{- end }}
{{- end }}

{{/* terminationGracePeriodSeconds: derived, or the value given if it leaves the process time to stop. */}}
{{- define "svc.terminationGracePeriodSeconds" -}}
{{- $stop := include "svc.stopSeconds" . | int }}
{{- $values := get .root.Values .component }}
{{- $given := index $values "terminationGracePeriodSeconds" }}
{{- if or (kindIs "invalid" $given) (eq (toString $given) "") }}
{{- add $stop 10 }}
{{- else if le (int $given) $stop }}
{{- if eq .component "worker" }}
{{- fail (printf "worker.terminationGracePeriodSeconds (%d) must exceed the %d s a worker may take to stop: the longer of config.server.shutdown_timeout and config.worker.drain_seconds + 10. Raise it, lower drain_seconds, or leave it empty to derive it." (int $given) $stop) }}
{{- else }}
{{- fail (printf "control.terminationGracePeriodSeconds (%d) must exceed config.server.shutdown_timeout plus control.preStopSleepSeconds (%d s). Raise it, or leave it empty to derive it." (int $given) $stop) }}
{{- end }}
{{- else }}
{{- int $given }}
{{- end }}
{{- end }}

{{/* GOMEMLIMIT for a component: its goMemLimit, or 90% of a memory limit in Mi or Gi. */}}
{{- define "svc.goMemLimit" -}}
{{- $values := get .root.Values .component }}
{{- if $values.goMemLimit }}
{{- $values.goMemLimit }}
{{- else }}
{{- $limit := toString (dig "limits" "memory" "" (default dict $values.resources)) }}
{{- if regexMatch "^[0-9]+Mi$" $limit }}
{{- printf "%dMiB" (div (mul (trimSuffix "Mi" $limit | int) 9) 10) }}
{{- else if regexMatch "^[0-9]+Gi$" $limit }}
{{- printf "%dMiB" (div (mul (trimSuffix "Gi" $limit | int) 1024 9) 10) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Checks that fail templating with a message naming the value to fix.
*/}}
{{- define "svc.validate" -}}
{{- $cfg := default dict .Values.config }}
{{- $owned := dict "server" (list "listen") "metrics" (list "listen") "encryption" (list "key_file") "database" (list "auto_migrate" "url") "redis" (list "url") "object_store" (list "access_key_id" "secret_access_key") }}
{{- range $section := keys $owned | sortAlpha }}
{{- range $key := get $owned $section }}
{{- if hasKey (default dict (get $cfg $section)) $key }}
{{- fail (printf "config.%s.%s is set by the chart (listeners, key ring path, migrations) or comes from a Secret (credentials); remove it from config" $section $key) }}
{{- end }}
{{- end }}
{{- end }}
{{- $store := default dict (get $cfg "object_store") }}
{{- if not (hasPrefix "s3://" (toString $store.url)) }}
{{- fail "config.object_store.url must be s3://BUCKET[/PREFIX]: replicas on several nodes share one object store" }}
{{- end }}
{{- if and (not .Values.database.existingSecret) (not .Values.database.url) }}
{{- fail "database.url or database.existingSecret is required (PostgreSQL URL)" }}
{{- end }}
{{- if and (not .Values.redis.existingSecret) (not .Values.redis.url) }}
{{- fail "redis.url or redis.existingSecret is required (Redis URL)" }}
{{- end }}
{{- if and (not .Values.objectStore.existingSecret) (or (not .Values.objectStore.accessKeyId) (not .Values.objectStore.secretAccessKey)) }}
{{- fail "objectStore.accessKeyId and objectStore.secretAccessKey, or objectStore.existingSecret, are required (S3 keys)" }}
{{- end }}
{{- if and (not .Values.keyring.existingSecret) (not .Values.keyring.json) }}
{{- fail "keyring.existingSecret or keyring.json is required: make a key ring with `svc keyring generate --out keyring.json` and pass --set-file keyring.json=keyring.json (or put it in a Secret)" }}
{{- end }}
{{- if .Values.keyring.json }}
{{- $ring := fromJson .Values.keyring.json }}
{{- if or (hasKey $ring "Error") (not (hasKey $ring "keys")) }}
{{- fail "keyring.json is not a key ring file (JSON with \"keys\"): pass the file svc keyring generate wrote" }}
{{- end }}
{{- end }}
{{- $_ := include "svc.terminationGracePeriodSeconds" (dict "root" . "component" "control") }}
{{- $_ := include "svc.terminationGracePeriodSeconds" (dict "root" . "component" "worker") }}
{{- end }}
