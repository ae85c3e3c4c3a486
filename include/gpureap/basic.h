/* gpureap basic layer: bounded file reads, number/size/duration parsing, cleanup helpers.
 * Functions return 0 or a positive count on success and -errno on failure; outputs are named
 * ret_* and are left untouched on failure. Nothing here prints or exits. */
#ifndef GPUREAP_BASIC_H
#define GPUREAP_BASIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

/* What the public headers declare is exported from the shared library; the rest of lib/ is built
 * hidden (-fvisibility=hidden), and lib/libgpureap.sym exports only gr_* (docs/architecture.md) */
#pragma GCC visibility push(default)

#define GR_ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))
#define GR_UNKNOWN_U64 UINT64_MAX
#define GR_PROC_PID_MAX 4194304 /* PID_MAX_LIMIT on 64-bit kernels */

/* cleanup helpers: every early return frees what it owns */
static inline void gr_freep(void *p) { free(*(void **)p); }
static inline void gr_closep(int *fd) { if (*fd >= 0) close(*fd); }
#define _cleanup_free_ __attribute__((cleanup(gr_freep)))
#define _cleanup_close_ __attribute__((cleanup(gr_closep)))

/* Copy src into dst (size bytes), always NUL-terminated; returns true when it fit. */
bool gr_strlcpy(char *dst, const char *src, size_t size);

/* Make text that another process or the driver chose (process names, command lines, cgroup
 * paths, NVML strings, anything replayed) safe for a terminal and for JSON, in place: valid
 * UTF-8 is kept; a control character (C0, DEL, C1 U+0080..U+009F) becomes one '?', and so does
 * every byte of an invalid or truncated UTF-8 sequence. The text never grows. Returns how many
 * '?' were put in. */
size_t gr_text_sanitize(char *s);
/* Would gr_text_sanitize leave s as it is? */
bool gr_text_is_clean(const char *s);
/* Quote text that a user gave (an argument, an option's value, a file name, an environment
 * variable) for a one-line message, into buf (size bytes, at least 8): what gr_text_sanitize
 * would replace becomes \xNN, a byte each (ESC: \x1b, a newline: \x0a, a stray 0xff: \xff),
 * valid UTF-8 is kept, and text that does not fit is cut with "..." between characters.
 * Returns buf. */
#define GR_QUOTE_MAX 128
char *gr_text_quote(const char *s, char *buf, size_t size);

/* Read a whole (small, virtual) file relative to dirfd into buf (size bytes, NUL-terminated).
 * Reads one byte more than fits to notice truncation: returns -EFBIG when the file did not fit,
 * with the first size-1 bytes in buf and *ret_len set (callers that can use a prefix may).
 * ENOENT/ESRCH of a vanished process come back as -ESRCH. Only regular files are read (every
 * /proc file is one): a FIFO or device planted in a recorded tree is -EINVAL, and it is
 * opened without blocking, so a FIFO with no writer cannot hang the reader. */
int gr_read_file_at(int dirfd, const char *name, char *buf, size_t size, size_t *ret_len);

/* Stream a file relative to dirfd line by line (lines longer than the internal buffer are cut,
 * never overflow). cb returns 0 to go on, >0 to stop early, <0 on error. */
typedef int (*gr_line_cb)(const char *line, size_t len, void *userdata);
int gr_read_lines_at(int dirfd, const char *name, gr_line_cb cb, void *userdata);

/* Parsing. Each accepts the whole string and nothing else, or returns -EINVAL / -ERANGE. */
int gr_parse_u64(const char *s, uint64_t *ret);
int gr_parse_int(const char *s, int *ret);
/* qsort/bsearch order of pid_t values */
int gr_cmp_pid(const void *a, const void *b);
/* "1500", "1.5s", "250ms", "2m" -> milliseconds; plain numbers are seconds */
int gr_parse_duration_ms(const char *s, uint64_t *ret_ms);
/* "512", "512K", "20MiB", "1.5G" (powers of 1024) -> bytes */
int gr_parse_size(const char *s, uint64_t *ret_bytes);

/* Render bytes as "20.0 GiB", "615 MiB", "0 B" into buf */
const char *gr_format_bytes(uint64_t bytes, char *buf, size_t size);

/* The one clock (lib/basic/clock.c): every time gpureap reads comes from these */
uint64_t gr_now_ms(void);   /* monotonic: for deadlines */
uint64_t gr_now_us(void);   /* monotonic, in microseconds */
uint64_t gr_wall_ms(void);  /* the wall clock, ms since the epoch: for times that are shown */
uint64_t gr_boot_ticks(long hz); /* CLOCK_BOOTTIME in clock ticks: /proc/PID/stat's start times */
struct timespec gr_deadline_in(uint64_t ms); /* CLOCK_MONOTONIC now + ms, for timed waits */

/* Open a path that the environment named, for a process (uid) that will load, run or trust
 * what it finds there (lib/basic/trust.c): every directory on the way, and every symbolic link,
 * must belong to root or uid, and no directory may be writable by others unless it is sticky;
 * the file itself belongs to root or uid and others may not write it. Links are followed only
 * once their directory passed, and the file checked is the one opened (flags as open(2);
 * O_PATH for a descriptor that is only to be named). Returns the fd, -EPERM with why (the
 * directory or file at fault, in words) when something on the way is not trusted, -ENOENT when
 * it is missing (never use the name then: in a sticky directory another user may create it
 * after this look), or another -errno. */
int gr_open_trusted(const char *path, int flags, uid_t uid, char *why, size_t why_size);

/* fn on each of n items (items + i * size): the first in the calling thread, each other in a
 * thread of its own (which the caller's signal mask is inherited by), all joined before it
 * returns; an item whose thread cannot be started is run by the caller. n at most 16
 * (lib/basic/threads.c) */
#define GR_PARALLEL_MAX 16
void gr_run_parallel(void *(*fn)(void *), void *items, size_t size, size_t n);
/* The CPUs online (sysconf), read once; at least 1 */
long gr_cpus_online(void);

/* pidfds (lib/basic/pidfd.c): fd or -errno (-ENOSYS before Linux 5.3) */
int gr_pidfd_open(pid_t pid);
int gr_pidfd_send_signal(int fd, int sig);
/* sig to the process group that fd's process leads (led: also once it is reaped, while members
 * are left); -EINVAL before Linux 6.9, -ESRCH when the group has no member */
int gr_pidfd_signal_group(int fd, int sig);
/* Has the process exited (a zombie counts)? Waits up to timeout_ms (0: look now) */
bool gr_pidfd_exited(int fd, int timeout_ms);
/* Raise the soft limit of open files to the hard one (0 or -errno) */
int gr_raise_fd_limit(void);
/* About how many more files this process may open, a small reserve kept */
unsigned gr_fd_headroom(void);

#pragma GCC visibility pop

#endif
