#!/bin/bash
# 'gpureap run' returns while a process of its tree lives: a member whose main thread ended
# (pthread_exit) shows state Z in /proc/PID/stat while its other threads run; the teardown takes
# it for a zombie, never signals it, waits 1000 x 1 ms and returns. Usage: B=/path/to/build-root
. "$(dirname "$0")/common.inc"
cat >"$T/zl.c" <<'C'
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
static void *sleeper(void *a) { (void)a; for (;;) pause(); return NULL; }
int main(void) {
        pid_t p = fork();
        if (p > 0) { printf("%d\n", p); fflush(stdout); usleep(300000); return 0; }
        setsid(); /* out of the command's process group */
        usleep(150000); /* moved into run's leaf cgroup first (at 50 ms) */
        pthread_t t; pthread_create(&t, NULL, sleeper, NULL);
        pthread_exit(NULL);
}
C
gcc -pthread -o "$T/zl" "$T/zl.c" || exit 2
"$GPUREAP" run --grace 1s -- "$T/zl" >"$T/out" 2>"$T/err" &
STARTED=$!
wait $STARTED; rc=$?
z=$(head -1 "$T/out"); EXTRA_PIDS=$z
cat "$T/err"
if alive "$z"; then
        echo "BUG: run returned ($rc) while member $z lives: $(grep -E '^(State|Threads)' /proc/$z/status | tr '\n' ' ')"
        find "$CGMNT" -maxdepth 6 -type d -name "gpureap-run-$STARTED-*" | sed 's/^/left behind: cgroup /'
        exit 1
fi
echo "held: member $z is gone"
