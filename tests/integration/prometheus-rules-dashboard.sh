#!/bin/bash
# The shipped Prometheus rules (contrib/prometheus/gpureap-rules.yml) and Grafana dashboard
# (contrib/grafana/gpureap.json) read only what gpureap writes:
#   - promtool checks the rules and runs their unit tests, which fail once a rule is changed;
#   - every metric name in their expressions is one that gpureap's real output on the fake
#     driver has (the one-shot metrics of clean, busy, ghost, stale and hung-driver GPUs and
#     after a reap; serve's /metrics with --process-metrics), or Prometheus's own 'up', the one
#     series docs/integrations.md says the rules read besides;
#   - every input series of the rules' tests has the name and label names of a series gpureap
#     writes (plus the scrape's job and instance).
# Each check is shown to fail on a copy with one thing changed.
. "$TESTLIB"
command -v promtool >/dev/null || { echo "1..0 # SKIP promtool is not installed (scripts/install-deps.sh)"; exit 77; }
command -v python3 >/dev/null || { echo "1..0 # SKIP no python3"; exit 77; }
command -v curl >/dev/null || { echo "1..0 # SKIP no curl"; exit 77; }
ROOT=$(cd "$(dirname "$TESTLIB")/../.." && pwd)
RULES=$ROOT/contrib/prometheus/gpureap-rules.yml
RTEST=$ROOT/contrib/prometheus/gpureap-rules.test.yml
DASH=$ROOT/contrib/grafana/gpureap.json
names() { python3 "$ROOT/tests/helper/promql-names.py" "$@"; }
export GPUREAP_SYSLOG_SOCKET=$T/nolog

promtool check rules "$RULES" >"$T/err" 2>&1 || fail "promtool check rules: $(cat "$T/err")"
ok "promtool check rules: $(grep -o '[0-9]* rules found' "$T/err")"
# test_rules DIR: promtool test rules in DIR (the test file names the rules beside it)
test_rules() { (cd "$1" && promtool test rules gpureap-rules.test.yml) >"$T/err" 2>&1; }
test_rules "$(dirname "$RTEST")" || fail "promtool test rules: $(cat "$T/err")"
ok "promtool test rules: every alert fires when it should, and not before"
mkdir "$T/rules"
cp "$RTEST" "$T/rules/"
sed '0,/for: 10m/s//for: 9m/' "$RULES" >"$T/rules/gpureap-rules.yml"
! test_rules "$T/rules" || fail "the rules' tests pass with the leftover alert after 9 minutes"
grep -q 'alertname: GPULeftoverMemory' "$T/err" || fail "not the leftover alert that failed: $(cat "$T/err")"
ok "and fail when the leftover alert waits 9 minutes instead of 10"
sed 's/kind=~"ghost|orphan"/kind=~"orphan"/' "$RULES" >"$T/rules/gpureap-rules.yml"
! test_rules "$T/rules" || fail "the rules' tests pass with ghosts left out of the leftover alert"
ok "and when ghosts' memory is left out of it"

# gpureap's real output: the one-shot metrics of each case, then serve's
scenario "gpu 0 minor=0" "gpu 1 minor=1"
gr metrics
cp "$T/out" "$T/real.prom"
launch pidfile "$PIDS" live cuda 1 1 256 sleep
launch pidfile "$PIDS" owner cuda 0 0 512 spawn-holder "$PIDS" child exit
wait_role live owner child
wait_state "$(pid_of owner)" "Z gone"
gr metrics
has out 'gpureap_gpu_leftovers\{gpu="0",.*kind="ghost"\} 1$' "a ghost on GPU 0, a live process on GPU 1"
cat "$T/out" >>"$T/real.prom"
gr reap --yes --gpu 0
expect_rc 0 "the ghost's holder reaped"
gr metrics
has out '^gpureap_last_reap_success 1$' "the last reap's series"
cat "$T/out" >>"$T/real.prom"
scenario "gpu 0 minor=0" "stale 0 1024"
gr metrics
cat "$T/out" >>"$T/real.prom"
scenario "gpu 0 minor=0" "hang nvmlDeviceGetMemoryInfo_v2"
gr metrics --nvml-timeout 300ms
has out '^gpureap_up 0$' "a hung driver"
cat "$T/out" >>"$T/real.prom"
scenario "gpu 0 minor=0" "gpu 1 minor=1"
port=$(free_port)
serve_start --interval 100ms --listen "127.0.0.1:$port" --process-metrics
i=0
until curl -s --max-time 5 -o "$T/out" "http://127.0.0.1:$port/metrics" && grep -q '^gpureap_process_gpu_memory_bytes{' "$T/out"; do
        i=$((i + 1)); [ $i -lt 300 ] || fail "serve's /metrics: $(cat "$T/serve.out")"; sleep 0.05
done
grep -q '^gpureap_gpu_state_duration_seconds{' "$T/out" || fail "no serve-only series in serve's /metrics"
cat "$T/out" >>"$T/real.prom"
kill -TERM "$SERVE"
wait "$SERVE" 2>/dev/null || true
grep -v '^#' "$T/real.prom" | sed -E 's/[{ ].*//' | sort -u >"$T/real.names"
ok "gpureap's real output: $(wc -l <"$T/real.names") metric names"

# unknown_names FILE...: the names the rules (.yml) and dashboards (.json) read that gpureap's
# output does not have, but the documented 'up'
unknown_names() {
        local f
        for f in "$@"; do
                case $f in *.json) names exprs-dashboard "$f" ;; *) names exprs-rules "$f" ;; esac
        done | names names | grep -vx up | comm -23 - "$T/real.names"
}
[ "$(names exprs-rules "$RULES" | wc -l)" -ge 7 ] || fail "the rules' expressions were not found: $(names exprs-rules "$RULES")"
[ "$(names exprs-dashboard "$DASH" | wc -l)" -ge 15 ] || fail "the dashboard's queries were not found"
bad=$(unknown_names "$RULES" "$DASH")
[ -z "$bad" ] || fail "the rules or the dashboard read what gpureap does not write: $bad"
ok "the rules and the dashboard read $( { names exprs-rules "$RULES"; names exprs-dashboard "$DASH"; } | names names | wc -l) metrics, each gpureap's (or 'up')"
jq '.panels[0].targets[0].expr = "gpureap_gpu_temperature_celsius"' "$DASH" >"$T/dash.json"
[ "$(unknown_names "$T/dash.json")" = gpureap_gpu_temperature_celsius ] || fail "a dashboard that reads a metric gpureap lacks passed: $(unknown_names "$T/dash.json")"
ok "a dashboard that reads a metric gpureap does not write is caught (gpureap_gpu_temperature_celsius)"
jq -e '.templating.list[] | select(.name == "instance") | .query.query | test("^label_values\\(gpureap_")' "$DASH" >/dev/null ||
        fail "the dashboard's node variable does not come from a gpureap series"
ok "its node variable comes from gpureap's series"

# the rules' test series: gpureap's names and labels, plus the scrape's job and instance
names series-text <"$T/real.prom" | sort -u >"$T/real.series"
# unknown_series FILE: its input series that no series of gpureap's output matches
unknown_series() {
        names series-test "$1" | while IFS=$'\t' read -r name labels; do
                [ "$name" != up ] || continue
                want=$(tr , '\n' <<<"$labels" | grep -vxE 'job|instance' | paste -sd, -)
                grep -qxF "$name"$'\t'"$want" "$T/real.series" || echo "$name{$labels}"
        done
}
[ "$(names series-test "$RTEST" | wc -l)" -ge 4 ] || fail "the rules' test series were not found"
bad=$(unknown_series "$RTEST")
[ -z "$bad" ] || fail "the rules' tests use series gpureap does not write: $bad"
ok "the rules' tests feed series named and labelled as gpureap writes them"
sed '0,/modelName=/s//model_name=/' "$RTEST" >"$T/rtest.yml"
[ -n "$(unknown_series "$T/rtest.yml")" ] || fail "a test series with a label gpureap does not write passed"
ok "a test series labelled otherwise is caught (model_name)"
done_testing
