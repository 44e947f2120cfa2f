{{/* Full name of the release's objects. */}}
{{- define "oxbow.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "oxbow.operatorName" -}}
{{- printf "%s-operator" (include "oxbow.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "oxbow.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "oxbow.operatorName" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* ClusterRole bound to each Cluster's broker ServiceAccount so rack-init can read its node. */}}
{{- define "oxbow.rackRole" -}}
{{- printf "%s-broker-rack" (include "oxbow.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "oxbow.selectorLabels" -}}
app.kubernetes.io/name: oxbow-operator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "oxbow.labels" -}}
{{ include "oxbow.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "oxbow.operatorImage" -}}
{{- printf "%s:%s" .Values.operator.image.repository (default .Chart.AppVersion .Values.operator.image.tag) -}}
{{- end -}}

{{- define "oxbow.brokerImage" -}}
{{- printf "%s:%s" .Values.broker.image.repository (default .Chart.AppVersion .Values.broker.image.tag) -}}
{{- end -}}

{{/* Alert text naming the Cluster an aggregated alert is about: " in namespace=… job=…", from metrics.prometheusRule.groupBy. */}}
{{- define "oxbow.alertScope" -}}
{{- range .Values.metrics.prometheusRule.groupBy -}}
{{- printf " %s={{ $labels.%s }}" . . -}}
{{- end -}}
{{- end -}}
