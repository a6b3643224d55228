{{/*
The pod template of a replica; takes (dict "root" $ "component" "control"|"worker").
Both roles run the same image with the same configuration file, key ring and
credentials; only the role, the probes' timing and the stop timing differ.
*/}}
{{- define "svc.podTemplate" -}}
{{- $root := .root }}
{{- $component := .component }}
{{- $values := get $root.Values $component -}}
metadata:
  labels:
    {{- include "svc.componentSelectorLabels" . | nindent 4 }}
    {{- with $values.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  annotations:
    checksum/config: {{ include "svc.config" $root | sha256sum }}
    {{- if include "svc.ownSecret" $root }}
    checksum/secret: {{ include (print $root.Template.BasePath "/secret.yaml") $root | sha256sum }}
    {{- end }}
    {{- if not $root.Values.keyring.existingSecret }}
    checksum/keyring: {{ $root.Values.keyring.json | sha256sum }}
    {{- end }}
    {{- with $values.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  serviceAccountName: {{ include "svc.serviceAccountName" $root }}
  automountServiceAccountToken: false
  {{- with $root.Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  securityContext:
    {{- toYaml $root.Values.podSecurityContext | nindent 4 }}
  terminationGracePeriodSeconds: {{ include "svc.terminationGracePeriodSeconds" . }}
  containers:
    - name: {{ $component }}
      image: {{ include "svc.image" $root }}
      imagePullPolicy: {{ $root.Values.image.pullPolicy }}
      args: ["--config", "/etc/svc/svc.toml", "run", "--role", {{ $component | quote }}]
      ports:
        - name: http
          containerPort: 8080
          protocol: TCP
        {{- if $root.Values.metrics.enabled }}
        - name: metrics
          containerPort: {{ $root.Values.metrics.port }}
          protocol: TCP
        {{- end }}
      env:
        {{- include "svc.env.credentials" $root | nindent 8 }}
        {{- with include "svc.goMemLimit" . }}
        - name: GOMEMLIMIT
          value: {{ . | quote }}
        {{- end }}
        {{- with $root.Values.extraEnv }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- with $root.Values.extraEnvFrom }}
      envFrom:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      readinessProbe:
        httpGet:
          path: /readyz
          port: http
        {{- toYaml $values.readinessProbe | nindent 8 }}
      livenessProbe:
        httpGet:
          path: /healthz
          port: http
        {{- toYaml $values.livenessProbe | nindent 8 }}
      {{- if and (eq $component "control") (gt (int $values.preStopSleepSeconds) 0) }}
      lifecycle:
        preStop:
          sleep:
            seconds: {{ int $values.preStopSleepSeconds }}
      {{- end }}
      resources:
        {{- toYaml $values.resources | nindent 8 }}
      securityContext:
        {{- toYaml $root.Values.securityContext | nindent 8 }}
      volumeMounts:
        - name: config
          mountPath: /etc/svc/svc.toml
          subPath: svc.toml
          readOnly: true
        - name: keyring
          mountPath: /etc/svc/keyring
          readOnly: true
        - name: tmp
          mountPath: /tmp
  volumes:
    - name: config
      configMap:
        name: {{ include "svc.fullname" $root }}
    - name: keyring
      secret:
        secretName: {{ include "svc.keyringSecretName" $root }}
        defaultMode: 0440
        items:
          - key: {{ include "svc.keyringSecretKey" $root }}
            path: {{ include "svc.keyringSecretKey" $root }}
    - name: tmp
      emptyDir:
        sizeLimit: 64Mi
  {{- with $values.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $values.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $values.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  topologySpreadConstraints:
    {{- if $values.topologySpreadConstraints }}
    {{- toYaml $values.topologySpreadConstraints | nindent 4 }}
    {{- else }}
    - maxSkew: 1
      topologyKey: kubernetes.io/hostname
      whenUnsatisfiable: ScheduleAnyway
      labelSelector:
        matchLabels:
          {{- include "svc.componentSelectorLabels" . | nindent 10 }}
    {{- end }}
{{- end }}
