# Helper F's additions to tests/integration/lib.sh (source it after lib.sh): cgroups of our own
# under the cgroup v2 mount, removed at exit; a wait for a process to be gone.
F_CG_MNT=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo 2>/dev/null)
# the cgroups we made, one a line (f_cgroup runs in $(...): a variable would not come back)
F_CGS=$T/f-cgroups
: >"$F_CGS"
f_cleanup() {
        local d i list
        list=$(awk '{ print length, $0 }' "$F_CGS" 2>/dev/null | sort -rn | cut -d' ' -f2-)
        cleanup
        # deepest first; a process that just died leaves its cgroup in a moment
        for d in $list; do
                i=0
                while [ -d "$d" ] && ! rmdir "$d" 2>/dev/null && [ $i -lt 200 ]; do i=$((i + 1)); sleep 0.01; done
        done
}
trap f_cleanup EXIT

# f_cgroup PATH: create PATH (relative to the cgroup v2 mount, every component) and echo its dir
f_cgroup() {
        [ -n "$F_CG_MNT" ] && [ -w "$F_CG_MNT" ] || { echo "1..0 # SKIP no writable cgroup v2"; exit 77; }
        local rel=$1 acc="" c
        for c in $(echo "$rel" | tr '/' ' '); do
                acc="$acc/$c"
                if [ ! -d "$F_CG_MNT$acc" ]; then
                        mkdir "$F_CG_MNT$acc" || fail "mkdir cgroup $acc"
                        echo "$F_CG_MNT$acc" >>"$F_CGS"
                fi
        done
        echo "$F_CG_MNT$acc"
}

# f_move PID CGROUP_DIR
f_move() {
        echo "$1" >"$2/cgroup.procs" || fail "cannot move $1 into $2"
}

alive() { [ -d "/proc/$1" ] && [ "$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)" != Z ]; }

# bad DESCRIPTION: a finding, in TAP ("not ok"); the script goes on and fails at f_done
F_BROKE=0
bad() {
        CHECKS=$((CHECKS + 1))
        echo "not ok $CHECKS - $*"
        F_BROKE=1
}
# check CONDITION-COMMAND... -- OK-TEXT -- BAD-TEXT
f_done() {
        echo "1..$CHECKS"
        [ "$F_BROKE" -eq 0 ]
}
f_show() { sed 's/^/#   /' "$T/out" "$T/err"; }
