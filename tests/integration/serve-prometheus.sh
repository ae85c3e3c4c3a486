#!/bin/bash
# A real Prometheus (Debian's) scrapes 'gpureap serve''s /metrics; the query for "GPUs with a
# leftover for more than 60 s" returns exactly the GPU that has one, once it has had it that
# long, and nothing before. Takes a little over a minute: the minute is the point.
. "$TESTLIB"
command -v prometheus >/dev/null || { echo "1..0 # SKIP prometheus is not installed (scripts/install-deps.sh)"; exit 77; }
command -v curl >/dev/null || { echo "1..0 # SKIP no curl"; exit 77; }
scenario "gpu 0 minor=0" "gpu 1 minor=1" "gpu 2 minor=2"
export GPUREAP_SYSLOG_SOCKET=$T/nolog
sport=$(free_port)
"$GPUREAP" serve --interval 250ms --listen "127.0.0.1:$sport" >"$T/serve.out" 2>&1 &
LAUNCHED="$LAUNCHED $!"

# GPU 1: a ghost (a leftover); GPU 2: a live process (busy); GPU 0: clean
launch pidfile "$PIDS" owner cuda 1 1 512 spawn-holder "$PIDS" child exit
launch pidfile "$PIDS" live cuda 2 2 256 sleep
wait_role owner child live

pport=$(free_port)
cat >"$T/prometheus.yml" <<EOC
global:
  scrape_interval: 1s
  evaluation_interval: 1s
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
done_testing
