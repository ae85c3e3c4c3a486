#!/bin/bash
# 'gpureap run' returns before its tree's GPU memory is back: a short-lived member S (never
# looked at, reaped by its own parent) makes a context and hands its GPU fds over SCM_RIGHTS to
# member K, looked at earlier (holding nothing then) and not due again. At the end K is not walked
# (looked at before) and S's PID is not among the tree's PIDs, so no GPU is awaited.
. "$(dirname "$0")/common.inc"
printf 'contexts %s\ngpu 0 minor=0\nteardown_ms 1500\n' "$T/ctx" >"$T/scenario"
cat >"$T/scm.c" <<'C'
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
static void rec(const char *f, const char *role) { FILE *o = fopen(f, "a"); fprintf(o, "%s %d\n", role, getpid()); fclose(o); }
static int dev(const char *n) { char p[512]; snprintf(p, sizeof p, "%s/%s", getenv("GPUREAP_DEV_DIR"), n); return open(p, O_RDWR); }
int main(int argc, char **argv) {
        struct sockaddr_un a = { .sun_family = AF_UNIX };
        strncpy(a.sun_path, argv[2], sizeof(a.sun_path) - 1);
        int s = socket(AF_UNIX, SOCK_STREAM, 0);
        char cbuf[CMSG_SPACE(8 * sizeof(int))], b = 'x';
        struct iovec io = { &b, 1 };
        struct msghdr m = { .msg_iov = &io, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf };
        if (strcmp(argv[1], "recv") == 0) {          /* recv SOCK PIDFILE ROLE */
                bind(s, (void *)&a, sizeof a); listen(s, 1); rec(argv[3], argv[4]);
                int c = accept(s, NULL, NULL);
                recvmsg(c, &m, 0);                     /* keeps the fds: holds the memory */
                for (;;) pause();
        }
        /* send SOCK PIDFILE ROLE MIB: a context on GPU 0 made as gpuhold's 'cuda' does */
        int fds[5] = { dev("nvidiactl"), dev("nvidia-uvm"), dev("nvidia0"), dev("nvidia0") };
        char p[512]; snprintf(p, sizeof p, "%s/ctx-%d-0-0", getenv("GPUREAP_FAKE_CTX_DIR"), getpid());
        fds[4] = open(p, O_RDWR | O_CREAT | O_EXCL, 0644);
        struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1 };
        fcntl(fds[4], F_OFD_SETLK, &fl);
        dprintf(fds[4], "pid=%d gpu=0 mib=%s\n", getpid(), argv[5]);
        rec(argv[3], argv[4]);
        if (connect(s, (void *)&a, sizeof a) < 0) return 1;
        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_SOCKET; c->cmsg_type = SCM_RIGHTS; c->cmsg_len = CMSG_LEN(5 * sizeof(int));
        memcpy(CMSG_DATA(c), fds, 5 * sizeof(int)); m.msg_controllen = c->cmsg_len;
        return sendmsg(s, &m, 0) == 1 ? 0 : 1;
}
C
gcc -o "$T/scm" "$T/scm.c" || exit 2
# K starts at once (looked at at 50, 300, 800 ms; next at 1.8 s); S at 1.0 s lives a few ms
"$GPUREAP" run --drain-timeout 10s -- bash -c '"$0" recv "$1/sock" "$1/pids" k & sleep 1.0; "$0" send "$1/sock" "$1/pids" s 700; sleep 100' "$T/scm" "$T" 2>"$T/err" &
STARTED=$!
until grep -q '^s ' "$T/pids"; do sleep 0.01; done
sleep 0.2
kill -TERM $STARTED; wait $STARTED
cat "$T/err"
used=$("$GPUREAP" status --json --direct | jq '.gpus[0].memory.used')
echo "GPU 0 used right after run returned: $used"
if [ "$used" != 0 ]; then echo "BUG: run returned before the tree's GPU memory was back (no drain)"; exit 1; fi
echo "held"
