#!/bin/bash
# nvmlDeviceGetComputeRunningProcesses_v3 writes 24-byte entries on driver 580 although newer
# headers describe 32: gpureap must read the right PIDs and memory either way.
. "$TESTLIB"

for stride in 24 32; do
        rm -f "$T/ctx"/ctx-*
        scenario "gpu 0" "stride $stride"
        : >"$PIDS"
        for mib in 100 200 300; do
                # recorded once its context is made (a record first raced the status below)
                launch cuda 0 0 "$mib" pidfile "$PIDS" "o$mib" sleep
        done
        wait_role o100 o200 o300
        gr status --json
        jqok ".gpus[0].process_entry_bytes == $stride" "stride $stride detected"
        for mib in 100 200 300; do
                p=$(pid_of "o$mib")
                jqok ".gpus[0].context_owners | map(select(.pid == $p and .used_memory == $mib*1048576)) | length == 1" "stride $stride: owner $mib MiB"
        done
        jqok '.gpus[0].context_owners | length == 3' "stride $stride: exactly three owners"
        for p in $(awk '{print $2}' "$PIDS"); do kill -KILL "$p"; done
        for p in $LAUNCHED; do wait "$p" 2>/dev/null || true; done
        LAUNCHED=""
done
done_testing
