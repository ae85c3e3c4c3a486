/* The kernel-side holder scan (proc-bpf.c, lib/proc/bpf/holders.bpf.c): which processes may
 * hold an NVIDIA device file, found by one pass of a BPF task-file iterator instead of reading
 * every process's fd directory. Internal to lib/proc. */
#ifndef GPUREAP_PROC_BPF_H
#define GPUREAP_PROC_BPF_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct gr_bpf_scan gr_bpf_scan;

/* Load the program for the device files under devdir. 0, or -errno with why filled (a line,
 * for the JSON): not built with BPF, no kernel BTF, not allowed, the verifier refused it */
int gr_bpf_open(const char *devdir, gr_bpf_scan **ret, char *why, size_t why_size);

/* Run it once: the sorted, distinct thread-group IDs whose leader, or a thread with a file table
 * of its own, has a file open that may be one of the NVIDIA device files under devdir: a character device of an "nvidia*" major of /proc/devices,
 * a file named nvidia* (or in a directory so named), or one of the inodes under devdir's
 * nvidia* entries. A superset: the caller reads those processes' fd directories and classifies
 * the paths as the /proc scan does. 0, or -errno with why filled. */
int gr_bpf_run(gr_bpf_scan *b, pid_t **ret, size_t *ret_n, char *why, size_t why_size);
void gr_bpf_close(gr_bpf_scan *b);
/* Was b loaded for the device files devdir holds now (the same nvidia* inodes under it, the
 * same nvidia majors in /proc/devices)? A kept program is used again only then. */
bool gr_bpf_fits(const gr_bpf_scan *b, const char *devdir);

#endif
