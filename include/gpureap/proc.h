/* gpureap proc layer: a bounded, race-tolerant reader of /proc and of who holds GPU device
 * files. Pure parsers (stat, status, cgroup, device paths) are separate from the scan so they are
 * tested on fixtures. The /proc root and the device directory are configurable so tests can point
 * them at recorded trees and fake device files. */
#ifndef GPUREAP_PROC_H
#define GPUREAP_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define GR_COMM_MAX 64          /* the kernel keeps 16; fixtures may hold more, cut to fit */
#define GR_CMDLINE_MAX 1024
#define GR_CGROUP_MAX 512
#define GR_NSPID_MAX 8          /* PID namespace nesting depth the kernel allows is 32; 8 shown */
#define GR_HOLD_GPUS_MAX 64     /* distinct GPU minors one process can be seen holding */
#define GR_PROC_MAX 4194304     /* pid_max limit of the kernel: never more processes than this */

/* ---- pure parsers ---- */

typedef struct gr_stat {
        pid_t pid;
        char comm[GR_COMM_MAX];
        char state;
        pid_t ppid, pgrp, session;
        uint64_t start_time; /* clock ticks after boot (field 22) */
        uint64_t cpu_ticks;  /* utime + stime (fields 14 and 15) */
} gr_stat;

/* Parse /proc/PID/stat. comm may hold spaces, ')' and newlines: it ends at the last ')'. */
int gr_parse_stat(const char *buf, size_t len, gr_stat *ret);

typedef struct gr_status {
        uid_t uid;       /* real uid */
        bool has_uid;
        pid_t nspid[GR_NSPID_MAX]; /* outermost first, as the kernel lists them */
        unsigned n_nspid;
} gr_status;

int gr_parse_status(const char *buf, size_t len, gr_status *ret);

/* The cgroup v2 path ("0::/path") or, on a v1-only system, the first hierarchy's path. */
int gr_parse_cgroup(const char *buf, size_t len, char *ret, size_t size);

/* NUL-separated argv to one line with spaces; control characters shown as '?'. */
void gr_render_cmdline(const char *buf, size_t len, char *ret, size_t size);

typedef enum gr_dev_kind {
        GR_DEV_NONE = 0, /* not an NVIDIA device file */
        GR_DEV_GPU,      /* nvidia<minor> */
        GR_DEV_CTL,      /* nvidiactl */
        GR_DEV_UVM,      /* nvidia-uvm, nvidia-uvm-tools */
        GR_DEV_CAPS,     /* nvidia-caps/... and nvidia-cap<N> */
        GR_DEV_OTHER,    /* nvidia-modeset, nvidia-nvswitch*, nvidia-nvlink, ... */
} gr_dev_kind;

/* Classify the target of an fd symlink against the device directory ("/dev" normally).
 * For GR_DEV_GPU the minor number is stored in *ret_minor. */
gr_dev_kind gr_classify_device_path(const char *devdir, size_t devdir_len, const char *path,
                                    unsigned *ret_minor);

/* Is one line of /proc/PID/maps a mapping of an NVIDIA device file under devdir? */
bool gr_maps_line_is_nvidia(const char *line, size_t len, const char *devdir, size_t devdir_len);

/* Container id (first 12 hex digits) named by a cgroup path (docker, containerd, CRI-O,
 * podman), and the Slurm job id ("job_42"); -ENOENT when the path names none. */
int gr_cgroup_container_id(const char *cgroup, char *ret, size_t size);
int gr_cgroup_slurm_job(const char *cgroup, char *ret, size_t size);

/* The PID in GPUREAP_RUN_PID=N among NUL-separated environment strings, or 0 */
pid_t gr_parse_environ_run_pid(const char *buf, size_t len);

/* One line of /proc/PID/net/tcp or tcp6: true for a listening socket, with its port and inode */
bool gr_parse_tcp_listen(const char *line, size_t len, unsigned *ret_port, uint64_t *ret_inode);

/* ---- the scan ---- */

typedef struct gr_holding {
        unsigned n_fds;          /* fds on any NVIDIA device file */
        unsigned n_ctl, n_uvm, n_caps, n_other;
        unsigned n_maps;         /* mappings of NVIDIA device files (when maps_read) */
        bool maps_read;          /* not read when the fds alone show a CUDA context: the maps of a
                                    PyTorch process run to thousands of lines (~7 ms each) */
        unsigned n_gpus;         /* distinct GPU minors held */
        struct {
                unsigned minor;
                unsigned n_fds;
        } gpus[GR_HOLD_GPUS_MAX];
        bool gpus_truncated;
        unsigned n_listen;       /* TCP ports it listens on (a leftover still holding :8000) */
        uint16_t listen_ports[8];
} gr_holding;

typedef struct gr_process {
        pid_t pid, ppid, pgrp, session;
        char state;              /* R S D T t Z X I ... as in stat */
        uint64_t start_time;     /* clock ticks after boot: PID + start time names a process */
        char comm[GR_COMM_MAX];
        /* details: read for holders and for PIDs asked for (context owners) */
        bool has_details;
        bool has_uid;
        uid_t uid;
        pid_t nspid[GR_NSPID_MAX];
        unsigned n_nspid;
        char *cmdline;           /* NULL when unreadable (kernel thread, gone) */
        char *cgroup;
        pid_t run_pid;           /* the 'gpureap run' that started it (GPUREAP_RUN_PID), 0 none */
        gr_holding *hold;        /* NULL unless it holds an NVIDIA device file */
} gr_process;

typedef struct gr_proc_table {
        gr_process *procs;       /* sorted by pid */
        size_t n, cap;
        size_t n_holders;
        unsigned n_vanished;     /* processes that went away while being read */
        unsigned n_unreadable;   /* fd directories we were not allowed to read */
        uint64_t boot_time;      /* seconds since the epoch, from stat's btime (0 unknown) */
        long clock_ticks;        /* sysconf(_SC_CLK_TCK) */
} gr_proc_table;

typedef struct gr_proc_options {
        const char *proc_root;   /* default $GPUREAP_PROC_ROOT or /proc */
        const char *dev_dir;     /* default $GPUREAP_DEV_DIR or /dev */
        const pid_t *skip;       /* PIDs left out (gpureap's own NVML helper) */
        size_t n_skip;
        unsigned threads;        /* 0: one per CPU (at most 8) when there are many processes */
} gr_proc_options;

const char *gr_proc_root_default(void);
const char *gr_dev_dir_default(void);

int gr_proc_scan(const gr_proc_options *opts, gr_proc_table **ret);
/* Read status, cmdline and cgroup of one process of the table (no-op when already read). */
int gr_proc_load_details(const gr_proc_options *opts, gr_process *p);
gr_process *gr_proc_table_find(const gr_proc_table *t, pid_t pid);
void gr_proc_table_free(gr_proc_table *t);

/* The NVIDIA device files one process holds (fds only: no maps, no details); 0 with *ret NULL
 * when it holds none, -errno when its fd directory cannot be read */
int gr_proc_holding(const char *proc_root, const char *dev_dir, pid_t pid, gr_holding **ret);

/* Identity check before acting: does pid still name the process that started at start_time? */
int gr_proc_same_process(const char *proc_root, pid_t pid, uint64_t start_time);

#endif
