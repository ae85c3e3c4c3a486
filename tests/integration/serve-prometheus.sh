#!/bin/bash
# A real Prometheus (Debian's) scrapes 'gpureap serve''s /metrics, with the shipped rules
# (contrib/prometheus/gpureap-rules.yml) loaded:
#   - the series it stores carry dcgm-exporter's GPU labels (gpu, UUID, pci_bus_id, device,
#     modelName, Hostname: the node name) and the scrape's own job and instance, never an
#     exported_job or exported_instance (gpureap writes no label a scrape renames); the
#     per-process series name gpureap's grouping gpureap_job; gpureap_build_info its versions;
#   - every rule evaluates without error, the leftover alert is pending for the dirty GPU
#     alone; every query of the Grafana dashboard (contrib/grafana/gpureap.json) is accepted,
#     and returns series where gpureap writes what it reads;
#   - the query for "GPUs with a leftover for more than 60 s" returns exactly the GPU that has
#     one, once it has had it that long, and nothing before;
#   - serve stopped: the serve-down alert goes pending.
# Takes a little over a minute: the minute is the point.
. "$TESTLIB"
command -v prometheus >/dev/null || { echo "1..0 # SKIP prometheus is not installed (scripts/install-deps.sh)"; exit 77; }
command -v curl >/dev/null || { echo "1..0 # SKIP no curl"; exit 77; }
command -v python3 >/dev/null || { echo "1..0 # SKIP no python3"; exit 77; }
ROOT=$(cd "$(dirname "$TESTLIB")/../.." && pwd)
names() { python3 "$ROOT/tests/helper/promql-names.py" "$@"; }
scenario "gpu 0 minor=0" "gpu 1 minor=1" "gpu 2 minor=2"
export GPUREAP_SYSLOG_SOCKET=$T/nolog
sport=$(free_port)
"$GPUREAP" serve --interval 250ms --listen "127.0.0.1:$sport" --process-metrics >"$T/serve.out" 2>&1 &
SERVE=$!
LAUNCHED="$LAUNCHED $SERVE"

# GPU 1: a ghost (a leftover); GPU 2: a live process (busy); GPU 0: clean
launch pidfile "$PIDS" owner cuda 1 1 512 spawn-holder "$PIDS" child exit
launch pidfile "$PIDS" live cuda 2 2 256 sleep
wait_role owner child live

pport=$(free_port)
cat >"$T/prometheus.yml" <<EOC
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $ROOT/contrib/prometheus/gpureap-rules.yml
scrape_configs:
  - job_name: gpureap
    static_configs:
      - targets: ['127.0.0.1:$sport']
EOC
promtool check config "$T/prometheus.yml" >"$T/err" 2>&1 || fail "promtool check config: $(cat "$T/err")"
prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/tsdb" \
        --web.listen-address="127.0.0.1:$pport" --log.level=warn >"$T/prometheus.log" 2>&1 &
LAUNCHED="$LAUNCHED $!"

query() { # PROMQL: the result's series as "gpu=N" lines
        curl -s --max-time 5 -G "http://127.0.0.1:$pport/api/v1/query" --data-urlencode "query=$1" |
                jq -r 'if .status == "success" then .data.result[] | "gpu=\(.metric.gpu)" else "error: \(.error)" end'
}
i=0
until [ "$(query 'up{job="gpureap"}' | wc -l)" = 1 ] && query 'gpureap_up == 1' | grep -q .; do
        i=$((i + 1)); [ $i -lt 300 ] || fail "Prometheus never scraped serve: $(tail -5 "$T/prometheus.log")"; sleep 0.1
done
ok "Prometheus scrapes serve's /metrics"
api() { # PATH [curl args...]: Prometheus's answer, in $T/api.json
        local path=$1
        shift
        curl -s --max-time 5 -G "http://127.0.0.1:$pport$path" "$@" >"$T/api.json"
        jq -e '.status == "success"' "$T/api.json" >/dev/null
}
# the series stored once the per-process series has the ghost's dead owner and the live process
i=0
until api /api/v1/series --data-urlencode 'match[]={__name__=~"gpureap_.+"}' &&
        jq -e '[.data[] | select(.__name__ == "gpureap_process_gpu_memory_bytes")] | length == 2' "$T/api.json" >/dev/null; do
        i=$((i + 1)); [ $i -lt 300 ] || fail "no per-process series stored: $(cat "$T/api.json")"; sleep 0.1
done
cp "$T/api.json" "$T/series.json"
host=$(uname -n)
gpu_series=$(jq '[.data[] | select(.gpu)] | length' "$T/series.json")
[ "$gpu_series" -ge 30 ] || fail "only $gpu_series series with a gpu label"
jq -e --arg host "$host" '[.data[] | select(.gpu)] | all(
        .UUID != null and (.pci_bus_id | test("^[0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\\.[0-9A-F]$")) and
        .device == "nvidia\(.gpu)" and .modelName == "NVIDIA H200" and .Hostname == $host)' "$T/series.json" >/dev/null ||
        fail "a GPU series without dcgm-exporter's labels: $(jq -c --arg host "$host" '[.data[] | select(.gpu) | select(.Hostname != $host or .pci_bus_id == null or .modelName == null)][0]' "$T/series.json")"
ok "all $gpu_series GPU series stored carry gpu, UUID, pci_bus_id (00000000:1A:00.0), device, modelName, Hostname ($host)"
jq -e --arg inst "127.0.0.1:$sport" '(.data | length > 0) and (.data | all(.job == "gpureap" and .instance == $inst and
        (keys | any(startswith("exported_")) | not)))' "$T/series.json" >/dev/null ||
        fail "a series with another job or instance, or a renamed label: $(jq -c '[.data[] | select(keys | any(startswith("exported_")))][0]' "$T/series.json")"
ok "every series has the scrape's job and instance: none exported_job or exported_instance"
jq -e --arg live "$(pid_of live)" '[.data[] | select(.__name__ == "gpureap_process_gpu_memory_bytes" and .pid == $live)] |
        length == 1 and (.[0].gpureap_job | test("^process group [0-9]+$")) and .[0].judgement == "live"' "$T/series.json" >/dev/null ||
        fail "the live process: $(jq -c '[.data[] | select(.__name__ == "gpureap_process_gpu_memory_bytes")]' "$T/series.json")"
ok "the per-process series names gpureap's grouping gpureap_job (the live process: $(jq -r --arg live "$(pid_of live)" '.data[] | select(.__name__ == "gpureap_process_gpu_memory_bytes" and .pid == $live) | .gpureap_job' "$T/series.json"))"
jq -e --arg v "$("$GPUREAP" --version | awk '{print $2}')" '[.data[] | select(.__name__ == "gpureap_build_info")] |
        length == 1 and .[0].version == $v and (.[0].driver | test("^[0-9]+\\.[0-9.]+$"))' "$T/series.json" >/dev/null ||
        fail "build info: $(jq -c '[.data[] | select(.__name__ == "gpureap_build_info")]' "$T/series.json")"
ok "gpureap_build_info{version, driver}"

# the rules: each evaluated, without error; the leftover alert pending for GPU 1 alone
i=0
until api /api/v1/rules && jq -e '[.data.groups[] | select(.name == "gpureap") | .rules[]] | length == 7 and all(.health != "unknown")' "$T/api.json" >/dev/null; do
        i=$((i + 1)); [ $i -lt 300 ] || fail "the rules were not evaluated: $(cat "$T/api.json")"; sleep 0.1
done
jq -e '[.data.groups[].rules[]] | all(.health == "ok")' "$T/api.json" >/dev/null ||
        fail "a rule does not evaluate: $(jq -c '[.data.groups[].rules[] | select(.health != "ok") | {name, lastError}]' "$T/api.json")"
ok "the 7 rules of gpureap-rules.yml evaluate on serve's series without error"
i=0
until api /api/v1/alerts && jq -e '[.data.alerts[] | select(.labels.alertname == "GPULeftoverMemory")] | length > 0' "$T/api.json" >/dev/null; do
        i=$((i + 1)); [ $i -lt 300 ] || fail "no leftover alert: $(cat "$T/api.json")"; sleep 0.1
done
jq -e '[.data.alerts[] | select(.labels.alertname == "GPULeftoverMemory")] | length == 1 and .[0].state == "pending" and
        .[0].labels.gpu == "1" and (.[0].value | tonumber) == 536870912' "$T/api.json" >/dev/null ||
        fail "leftover alerts: $(jq -c '[.data.alerts[] | select(.labels.alertname == "GPULeftoverMemory")]' "$T/api.json")"
ok "GPULeftoverMemory is pending for GPU 1 alone (its ghost's 512 MiB), not for the busy and the clean GPU"
[ "$(jq '[.data.alerts[] | select(.labels.alertname != "GPULeftoverMemory")] | length' "$T/api.json")" = 0 ] ||
        fail "other alerts: $(jq -c '[.data.alerts[] | select(.labels.alertname != "GPULeftoverMemory") | .labels]' "$T/api.json")"
ok "no other alert while serve and the driver answer"

# the dashboard's queries ($instance: every node): accepted, and with series where Prometheus
# has every metric they read
api /api/v1/label/__name__/values
jq -r '.data[]' "$T/api.json" | sort >"$T/stored"
n=0
while read -r expr; do
        q=${expr//\$instance/.*}
        api /api/v1/query --data-urlencode "query=$q" || fail "Prometheus rejects the dashboard's query '$q': $(cat "$T/api.json")"
        if [ -z "$(names names <<<"$q" | comm -23 - "$T/stored")" ]; then
                jq -e '.data.result | length > 0' "$T/api.json" >/dev/null || fail "the dashboard's query '$q' returns nothing"
                n=$((n + 1))
        fi
done < <(names exprs-dashboard "$ROOT/contrib/grafana/gpureap.json")
[ "$n" -ge 15 ] || fail "only $n of the dashboard's queries could be checked for series"
ok "every query of the dashboard is accepted; the $n whose metrics serve writes return series"
LEFTOVER_60='gpureap_gpu_state_duration_seconds{state="dirty"} > 60'
[ -z "$(query "$LEFTOVER_60")" ] || fail "a leftover for more than 60 s already: $(query "$LEFTOVER_60")"
[ "$(query 'gpureap_gpu_state{state="dirty"} == 1')" = "gpu=1" ] || fail "dirty GPUs: $(query 'gpureap_gpu_state{state="dirty"} == 1')"
ok "GPU 1 is dirty, but not yet for 60 s: the query returns nothing"
i=0
until [ -n "$(query "$LEFTOVER_60")" ]; do i=$((i + 1)); [ $i -lt 180 ] || fail "no series after 90 s"; sleep 0.5; done
[ "$(query "$LEFTOVER_60")" = "gpu=1" ] || fail "the query returned: $(query "$LEFTOVER_60")"
ok "after a minute: '$LEFTOVER_60' returns GPU 1 alone (GPU 2 is busy, GPU 0 clean)"
[ "$(query 'gpureap_gpu_state_duration_seconds{state="busy"} > 60')" = "gpu=2" ] || fail "busy for a minute: $(query 'gpureap_gpu_state_duration_seconds{state="busy"} > 60')"
ok "and GPU 2 has been busy for as long"

kill -TERM "$SERVE"
wait "$SERVE" 2>/dev/null || true
i=0
until api /api/v1/alerts && jq -e '[.data.alerts[] | select(.labels.alertname == "GpureapServeDown")] | length == 1' "$T/api.json" >/dev/null; do
        i=$((i + 1)); [ $i -lt 300 ] || fail "no serve-down alert: $(cat "$T/api.json")"; sleep 0.1
done
jq -e --arg inst "127.0.0.1:$sport" '.data.alerts[] | select(.labels.alertname == "GpureapServeDown") | .state == "pending" and .labels.instance == $inst' "$T/api.json" >/dev/null ||
        fail "serve-down: $(jq -c '.data.alerts' "$T/api.json")"
ok "serve stopped: GpureapServeDown is pending for its instance"
done_testing
