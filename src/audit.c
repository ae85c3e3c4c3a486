/* The audit trail: every signal gpureap sends, and the verdict that led to it, goes to syslog
 * (the journal takes it from /dev/log). A small client of our own rather than syslog(3): the
 * socket is configurable ($GPUREAP_SYSLOG_SOCKET) so that the tests read the log back, and a
 * missing log daemon costs nothing (the trail is also kept by the caller's own output).
 * The socket that variable names is trusted only as far as gr_open_trusted() trusts a path (root
 * or the caller own every directory and link on the way, and the socket): root's trail carries
 * other users' command lines, and it went to a socket in a directory of nobody's. The socket
 * checked is the one written to: through /proc/self/fd/N of its O_PATH descriptor (a connect
 * through that magic link reaches the checked inode, whatever the path names since). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "gpureap/basic.h"
#include "gpureap.h"

static int audit_fd = -1;
static int audit_path_fd = -1; /* the checked socket of $GPUREAP_SYSLOG_SOCKET (O_PATH) */

/* printable ASCII only: a process name is anyone's to set */
static void safe_copy(char *dst, const char *src, size_t size)
{
        size_t o = 0;
        for (; *src && o + 1 < size; src++)
                dst[o++] = (unsigned char)*src >= 0x20 && (unsigned char)*src < 0x7f ? *src : '?';
        dst[o] = '\0';
}
static struct sockaddr_un audit_addr;
static char audit_who[160];

void audit_open(const char *command)
{
        if (audit_fd >= 0)
                return;
        const char *path = getenv("GPUREAP_SYSLOG_SOCKET");
        char self[64];
        if (path && *path) {
                char why[512];
                int fd = gr_open_trusted(path, O_PATH | O_NOFOLLOW, getuid(), why, sizeof(why));
                if (fd >= 0) {
                        struct stat st;
                        if (fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode)) {
                                audit_path_fd = fd;
                                snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
                                path = self;
                        } else {
                                close(fd);
                                fd = -ENOTSOCK;
                        }
                }
                if (fd == -ENOENT) {
                        return; /* a log nobody listens on (the tests' own): the trail goes nowhere */
                } else if (fd < 0) {
                        fprintf(stderr, "gpureap: ignoring GPUREAP_SYSLOG_SOCKET '%s': %s; the audit trail goes to /dev/log\n",
                                path, why[0] ? why : strerror(-fd));
                        path = NULL;
                }
        } else {
                path = NULL;
        }
        if (!path)
                path = "/dev/log";
        memset(&audit_addr, 0, sizeof(audit_addr));
        audit_addr.sun_family = AF_UNIX;
        if (!gr_strlcpy(audit_addr.sun_path, path, sizeof(audit_addr.sun_path)))
                return;
        audit_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        /* who acted: the real and effective user, and the program that ran gpureap */
        char parent[64] = "?", path_buf[64], buf[1024];
        snprintf(path_buf, sizeof(path_buf), "/proc/%d/comm", (int)getppid());
        FILE *f = fopen(path_buf, "re");
        if (f) {
                if (fgets(buf, sizeof(buf), f)) {
                        buf[strcspn(buf, "\n")] = '\0';
                        safe_copy(parent, buf, sizeof(parent));
                }
                fclose(f);
        }
        snprintf(audit_who, sizeof(audit_who), "%s by uid %u (euid %u, parent %d %s)", command, (unsigned)getuid(),
                 (unsigned)geteuid(), (int)getppid(), parent);
}

void audit_log(int priority, const char *fmt, ...)
{
        if (audit_fd < 0)
                return;
        char msg[1536], line[2048], stamp[32];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        strftime(stamp, sizeof(stamp), "%b %e %H:%M:%S", &tm);
        /* RFC 3164, as syslog(3) writes it: <facility*8+severity>TIMESTAMP TAG[PID]: MESSAGE */
        int n = snprintf(line, sizeof(line), "<%d>%s gpureap[%d]: %s: %s", LOG_AUTHPRIV | priority, stamp,
                         (int)getpid(), audit_who, msg);
        if (n <= 0)
                return;
        size_t len = (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1;
        while (sendto(audit_fd, line, len, MSG_NOSIGNAL, (struct sockaddr *)&audit_addr, sizeof(audit_addr)) < 0 &&
               errno == EINTR)
                ;
}

void audit_close(void)
{
        if (audit_fd >= 0)
                close(audit_fd);
        if (audit_path_fd >= 0)
                close(audit_path_fd);
        audit_fd = audit_path_fd = -1;
}
