{{/* GreptimeDB's HTTP base URL without credentials (controller.metrics.url wins). */}}
{{- define "tf.greptimeURL" -}}
{{- if .Values.controller.metrics.url -}}
{{- .Values.controller.metrics.url -}}
{{- else -}}
{{- if has (int .Values.greptime.port) (list 4001 4002 4003) -}}
{{- fail (printf "greptime.port %v is one of GreptimeDB's gRPC/MySQL/PostgreSQL ports; TensorFusion writes and queries through its HTTP API (default 4000)" .Values.greptime.port) -}}
{{- end -}}
{{- if .Values.greptime.isCloud }}https{{ else }}http{{ end }}://{{ .Values.greptime.host }}:{{ .Values.greptime.port }}
{{- end -}}
{{- end -}}

{{/* The env var TF_GREPTIME_URL (the base URL, with credentials from the Secret when set). */}}
{{- define "tf.greptimeEnv" -}}
- name: TF_GREPTIME_URL
{{- if and (not .Values.controller.metrics.url) .Values.greptime.user }}
  valueFrom:
    secretKeyRef: {name: tensor-fusion-greptime, key: url}
{{- else }}
  value: {{ include "tf.greptimeURL" . | quote }}
{{- end }}
{{- end -}}

{{/* Alertmanager's base URL: an existing one, else the chart's. */}}
{{- define "tf.alertmanagerURL" -}}
{{- if .Values.alert.url -}}
{{- .Values.alert.url -}}
{{- else -}}
http://alert-manager.{{ .Release.Namespace }}.svc:9093
{{- end -}}
{{- end -}}
