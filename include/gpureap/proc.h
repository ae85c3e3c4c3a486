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
#include "gpureap/context.h"

#pragma GCC visibility push(default)

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
        int tty_nr;          /* controlling terminal (field 7), 0 none */
        pid_t tpgid;         /* foreground process group of that terminal (field 8), -1 none */
        bool kthread;        /* PF_KTHREAD in the flags (field 9) */
        bool exiting;        /* PF_EXITING in the flags: it is ending (its memory, then its files, go) */
        uint64_t start_time; /* clock ticks after boot (field 22) */
        uint64_t cpu_ticks;  /* utime + stime (fields 14 and 15) */
        unsigned n_threads;  /* num_threads (field 20); 0 where a recorded tree has none */
} gr_stat;

/* Is a process of this name an init that takes in orphans (systemd, tini, a container
 * runtime's shim, gpureap run...)? A name is what a process says of itself (prctl): alone it
 * proves nothing; gr_proc_is_init_program asks its executable too. */
bool gr_proc_comm_is_init(const char *comm);
/* What a process is: its executable's file name (/proc/PID/exe, without " (deleted)"), when
 * it could be read */
typedef enum gr_exe_state {
        GR_EXE_UNKNOWN,          /* not read (a recording made before it was kept) */
        GR_EXE_READ,
        GR_EXE_UNREADABLE,       /* no right to look (another user's), or a kernel thread */
} gr_exe_state;
#define GR_EXE_NAME_MAX 64
/* Is a process of this name and executable an init or subreaper by what it is: its name an
 * init's and its executable one too (a python that named itself 'init' is not one). Where the
 * executable is unknown (an older recording), the name decides; unreadable: not an init. */
bool gr_proc_is_init_program(const char *comm, gr_exe_state exe_state, const char *exe);
/* An init shim that starts one command at its start and then only takes in orphans (tini,
 * docker-init, dumb-init, catatonit, gpureap run): its first child is its command, its job */
bool gr_proc_comm_is_shim(const char *comm);
/* The file name of /proc/PID/exe relative to piddir into buf; 0, or -errno (-EACCES) */
int gr_proc_read_exe_at(int piddir, char *buf, size_t size);

/* Parse /proc/PID/stat. comm may hold spaces, ')' and newlines: it ends at the last ')'. comm
 * comes back made safe to show (gr_text_sanitize); a state that is not a letter as '?'. */
int gr_parse_stat(const char *buf, size_t len, gr_stat *ret);
/* /proc/PID/stat of proc_root (NULL: the default) read and parsed in three system calls;
 * -ESRCH when there is no such process */
int gr_proc_read_stat(const char *proc_root, pid_t pid, gr_stat *st);
/* A process whose stat says Z although other threads of it still run (its main thread called
 * pthread_exit): alive, and to be ended like any other */
bool gr_proc_zombie_leader_alive(const char *proc_root, pid_t pid);
/* The same for a zombie whose stat line st was just read: its num_threads answers where it is 1
 * (the leader alone), task/ is read otherwise */
bool gr_proc_zombie_threads_alive(const char *proc_root, pid_t pid, const gr_stat *st);

typedef struct gr_status {
        uid_t uid;       /* real uid */
        bool has_uid;
        pid_t nspid[GR_NSPID_MAX]; /* outermost first, as the kernel lists them */
        unsigned n_nspid;
        uint64_t sig_ignored;      /* SigIgn: bit n-1 for signal n */
        bool has_sig_ignored;
} gr_status;

int gr_parse_status(const char *buf, size_t len, gr_status *ret);

/* The cgroup v2 path ("0::/path") or, on a v1-only system, the first hierarchy's path, made
 * safe to show (gr_text_sanitize): it is for reading, not a path to open. */
int gr_parse_cgroup(const char *buf, size_t len, char *ret, size_t size);

/* NUL-separated argv to one line with spaces, made safe to show (gr_text_sanitize). */
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

/* Container id (first 12 of its 64 hex digits) named by a cgroup path (docker, containerd,
 * CRI-O, podman), and the Slurm job id ("job_42"); -ENOENT when the path names none. */
int gr_cgroup_container_id(const char *cgroup, char *ret, size_t size);
/* All 64 digits (size at least 65): what a --container id is matched against */
int gr_cgroup_container_full_id(const char *cgroup, char *ret, size_t size);
int gr_cgroup_slurm_job(const char *cgroup, char *ret, size_t size);

/* The PID in GPUREAP_RUN_PID=N among NUL-separated environment strings, or 0 */
pid_t gr_parse_environ_run_pid(const char *buf, size_t len);

/* The few environment variables the diagnosis reads (worker markers and supervisors); nothing
 * else of a process's environment is ever kept */
typedef struct gr_env_marks {
        pid_t run_pid;                 /* GPUREAP_RUN_PID, 0 none */
        uint64_t run_start;            /* GPUREAP_RUN_REF=N@T where N is run_pid: the start time
                                          of that run (stat field 22), 0 none. Where the scan
                                          runs in a time namespace of its own, 0 (its view of
                                          start times is not the run's) */
        char torchelastic_run_id[64];  /* TORCHELASTIC_RUN_ID, "" none */
        int local_rank, rank, group_rank; /* LOCAL_RANK, RANK, GROUP_RANK; -1 none */
        char slurm_job_id[24];         /* SLURM_JOB_ID, "" none */
} gr_env_marks;

void gr_parse_environ_marks(const char *buf, size_t len, gr_env_marks *ret);
/* GPUREAP_RUN_REF's value, "PID@START" (n bytes, no NUL needed): 0, or -EINVAL */
int gr_parse_run_ref(const char *s, size_t n, pid_t *ret_pid, uint64_t *ret_start);

/* One line of /proc/PID/net/tcp or tcp6: true for a listening socket, with its port and inode */
bool gr_parse_tcp_listen(const char *line, size_t len, unsigned *ret_port, uint64_t *ret_inode);

#define GR_TCP_ESTABLISHED 0x01
#define GR_TCP_LISTEN 0x0A
/* Any socket line: its state, local port and inode */
bool gr_parse_tcp_socket(const char *line, size_t len, unsigned *ret_state, unsigned *ret_port,
                         uint64_t *ret_inode);

/* Who manages a cgroup, from its path as the managers lay it out */
typedef enum gr_cgroup_kind {
        GR_CG_NONE,
        GR_CG_SERVICE,    /* systemd service: .../NAME.service (not user@N.service) */
        GR_CG_SLURM,      /* a Slurm job: .../job_N/... */
        GR_CG_POD,        /* a Kubernetes pod: kubepods...pod<UID>... */
        GR_CG_CONTAINER,  /* a container: docker-<id>.scope, /docker/<id>, cri-containerd-, crio-, libpod- */
        GR_CG_SESSION,    /* a login session: session-N.scope */
        GR_CG_RUN,        /* a 'gpureap run' leaf: gpureap-run-PID */
} gr_cgroup_kind;

/* The manager of a cgroup path and its name (unit, job id, pod UID, container id, run PID) */
gr_cgroup_kind gr_cgroup_manager(const char *cgroup, char *ret_name, size_t size);
const char *gr_cgroup_kind_name(gr_cgroup_kind k);

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
} gr_holding;

/* The DRM and KFD files a process holds (AMD, Intel: docs/drm.md): each fd by number, so that
 * its /proc/PID/fdinfo/FD can be read (lib/gpu/drm.c). Found by the device's number (a stat of
 * /proc/PID/fd/N, which opens nothing: character major 226, or the kfd major of /proc/devices),
 * by name alone (DEVDIR/dri/renderD*, card*, kfd) only in a recorded tree or a test's device
 * directory. /dev/kfd is never opened: that would create a KFD process entry for gpureap. */
#ifndef GR_DRM_MAJOR
#define GR_DRM_MAJOR 226               /* /dev/dri/card*, /dev/dri/renderD* (fixed: devices.txt) */
#endif
#define GR_DRM_FDS_MAX 64
typedef enum gr_drm_node {
        GR_DRM_NODE_CARD,        /* /dev/dri/card<minor> (primary) */
        GR_DRM_NODE_RENDER,      /* /dev/dri/renderD<minor> (minor 128 and up) */
        GR_DRM_NODE_KFD,         /* /dev/kfd (ROCm compute; one for every AMD GPU) */
} gr_drm_node;
const char *gr_drm_node_name(gr_drm_node n); /* "card", "render", "kfd" */
typedef struct gr_drm_holding {
        unsigned n_fds;          /* every DRM and KFD fd, also those past the table */
        unsigned n_kfd;
        struct {
                int fd;
                uint8_t node;    /* gr_drm_node */
                unsigned minor;  /* card and render: the DRM minor; kfd: 0 */
        } fds[GR_DRM_FDS_MAX];   /* in fd order */
        unsigned n;
        bool truncated;
} gr_drm_holding;

/* Its TCP sockets, as its network namespace's tables show them */
#define GR_LISTEN_MAX 8
typedef struct gr_net {
        unsigned n_listen;       /* ports it listens on (a leftover may still hold :8000) */
        uint16_t listen_ports[GR_LISTEN_MAX];
        uint64_t listen_inodes[GR_LISTEN_MAX]; /* shared by processes that inherited the socket */
        unsigned n_serving;      /* established connections on one of its listening ports */
        unsigned n_established;  /* all established connections */
        bool truncated;          /* more sockets than were matched */
} gr_net;

/* How the launcher that 'gpureap serve' saw start a holder ended */
typedef enum gr_launcher_end {
        GR_END_ALIVE,            /* alive at the last look */
        GR_END_SIGNAL,           /* killed by a signal (the kernel's exit event said so) */
        GR_END_EXIT,             /* exited by itself, with a status */
        GR_END_UNKNOWN,          /* gone, how is not known (no event: not root, events lost) */
} gr_launcher_end;

/* What a resident 'gpureap serve' remembers of a GPU holder: facts a snapshot cannot see.
 * Only filled from serve's memory (or a recording of it); NULL in a one-shot snapshot. */
typedef struct gr_seen {
        uint64_t since_ms;       /* when serve first saw it hold a GPU (wall clock, ms) */
        pid_t launcher;          /* its parent (or its process group's leader) then, 0 none */
        uint64_t launcher_start; /* the launcher's start time: PID + start time name it */
        char launcher_comm[GR_COMM_MAX];
        bool same_exe;           /* the launcher ran the same executable (one program's tree) */
        gr_launcher_end end;
        int end_status;          /* the signal (GR_END_SIGNAL) or exit code (GR_END_EXIT) */
        uint64_t end_ms;         /* when it ended or was found gone */
        uint64_t state_since_ms; /* in its present state (T, D, ...) since, 0 unknown */
} gr_seen;

/* Which pod and container of the kubelet's a process in a pod's cgroup runs in
 * (gr_snapshot_name_pods, docs/architecture.md "The kubelet"): why a name is not known */
typedef enum gr_pod_naming {
        GR_POD_NOT_ASKED,        /* the kubelet gave no answer (the snapshot's kubelet says why) */
        GR_POD_NAMED,            /* one listed pod (container) was assigned every GPU its pod's
                                    (container's) processes hold, and no other pod's matched it */
        GR_POD_NO_GPU,           /* they hold no GPU the driver's report names: nothing to join on */
        GR_POD_UNASSIGNED,       /* no listed pod (container) was assigned them: a pod the kubelet
                                    lists no more, or a GPU it was not assigned */
        GR_POD_AMBIGUOUS,        /* more than one was (time-slicing), or another pod's (container's)
                                    processes match the same one */
        GR_POD_UNMAPPED,         /* none was, but the kubelet assigned devices the report does not
                                    name (MIG devices): it may be one of those */
        GR_POD_NO_CONTAINER,     /* (container only) its cgroup is the pod's, not a container's */
} gr_pod_naming;

#define GR_POD_NAME_MAX 254      /* a DNS subdomain and its NUL (GR_K8S_NAME_MAX) */

/* Is the pod of a process that no listed pod names, and that holds a GPU, gone
 * (gr_snapshot_confirm_gone)? Asked of the container runtime (the labels of the container its
 * cgroup names: the pod's name, namespace and UID; the container's state) and then, where the
 * container has exited, of the kubelet (Get by that name) */
typedef enum gr_pod_gone {
        GR_POD_GONE_NOT_ASKED,   /* named, holds no GPU, or the kubelet's List did not answer */
        GR_POD_GONE_CONFIRMED,   /* the runtime names its pod, with the UID its cgroup carries, says
                                    its container has exited, and the kubelet's Get answers that it
                                    knows no pod of that name */
        GR_POD_GONE_PRESENT,     /* Get knows a pod of that name: the same pod, or a new one of the
                                    same name (a StatefulSet's): not proved gone */
        GR_POD_GONE_UNKNOWN,     /* asked, and nothing proved either (gone_why) */
        GR_POD_GONE_RUNNING,     /* the runtime says its container has not exited: its pod is not
                                    gone, whatever the kubelet says (one restarting lists nothing) */
} gr_pod_gone;
typedef struct gr_pod {
        char uid[40];            /* the pod's UID from the cgroup path, with '-'; "" not there */
        char container_id[72];   /* the container's full ID from the cgroup path, "" none */
        gr_pod_naming naming, container_naming; /* what the kubelet's devices say */
        bool runtime_named;      /* the devices named none, the container runtime's labels did
                                    (gr_snapshot_confirm_gone): name and ns are its pod's, and
                                    container its container's where known */
        char name[GR_POD_NAME_MAX]; /* its names, "" unless named (by the devices or the runtime) */
        char ns[64];
        char container[64];
        /* the GPUs the device manager's checkpoint says its pod UID was assigned (bit i: the
         * report's GPU i), where known: the checkpoint was read and each of its GPU devices
         * names a GPU of the report (not a MIG device) */
        bool assigned_known;
        uint64_t gpus_assigned;
        gr_pod_gone gone;
        char gone_name[GR_POD_NAME_MAX]; /* the runtime's names of its pod (with CONFIRMED and
                                            PRESENT) */
        char gone_ns[64];
        char gone_why[200];      /* with UNKNOWN: why not */
} gr_pod;

/* Whether the run that made a process's gpureap-run-N-RANDOM leaf cgroup lives: it holds the
 * leaf directory's flock for as long as it does (gr_cgroup_create_leaf). Known by the lock, not
 * by whatever process has the number N now */
typedef enum gr_leaf_lock {
        GR_LEAF_UNKNOWN,         /* not such a leaf, an old-style one (no lock), or not read */
        GR_LEAF_HELD,            /* locked: its run lives */
        GR_LEAF_FREE,            /* nobody holds it: its run is gone */
} gr_leaf_lock;

typedef struct gr_process {
        pid_t pid, ppid, pgrp, session;
        char state;              /* R S D T t Z X I ... as in stat */
        int tty_nr;              /* controlling terminal, 0 none */
        pid_t tpgid;             /* its terminal's foreground process group, -1 none */
        bool kthread;            /* a kernel thread */
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
        gr_leaf_lock run_leaf;   /* with a gpureap-run-N-RANDOM cgroup: its lock (snapshot.c) */
        gr_exe_state exe_state;  /* its executable's file name, read with the details */
        char exe[GR_EXE_NAME_MAX];
        pid_t run_pid;           /* the 'gpureap run' that started it (GPUREAP_RUN_PID), 0 none */
        uint64_t sig_ignored;    /* signals it ignores (bit n-1: signal n), from status */
        bool env_read;           /* its environment could be read (own process, or root) */
        gr_env_marks env;
        gr_holding *hold;        /* NULL unless it holds an NVIDIA device file */
        gr_drm_holding *drm;     /* NULL unless it holds a DRM or KFD file (docs/drm.md) */
        gr_net *net;             /* read for holders and the roots of their lineage; NULL unread */
        gr_seen *seen;           /* serve's memory of it (owned), NULL none */
        gr_pod *pod;             /* its pod, when its cgroup is a pod's (owned), NULL otherwise */
} gr_process;

/* How the holders were found (docs/architecture.md, "The holder scan") */
typedef enum gr_scan_kind {
        GR_SCAN_UNKNOWN,         /* a recording that does not say */
        GR_SCAN_PROC,            /* every process's /proc/PID/fd read */
        GR_SCAN_BPF,             /* a BPF task-file iterator named the candidates, whose fd
                                    directories alone were read */
} gr_scan_kind;

const char *gr_scan_kind_name(gr_scan_kind k);

typedef struct gr_proc_table {
        gr_process *procs;       /* sorted by pid */
        size_t n, cap;
        size_t n_holders;
        unsigned n_vanished;     /* processes that went away while being read */
        unsigned n_unreadable;   /* fd directories we were not allowed to read */
        uint64_t boot_time;      /* seconds since the epoch, from stat's btime (0 unknown) */
        long clock_ticks;        /* sysconf(_SC_CLK_TCK) */
        gr_scan_kind scan;
        char scan_fallback[160]; /* why the /proc scan was used, "" when it was not or by choice */
        size_t n_drm_holders;    /* processes with a DRM or KFD file (drm != NULL) */
} gr_proc_table;

typedef struct gr_proc_options {
        gr_context *ctx;         /* NULL: gr_context_default() */
        const char *proc_root;   /* NULL: the context's */
        const char *dev_dir;     /* NULL: the context's */
        const pid_t *skip;       /* PIDs left out (gpureap's own NVML helper) */
        size_t n_skip;
        unsigned threads;        /* 0: one per CPU (at most 8) when there are many processes */
        bool keep_bpf;           /* a resident caller (serve): the BPF program, once loaded, is
                                  * kept in the context for the next scans while the device
                                  * files stay the same */
} gr_proc_options;

/* A proc_root or dev_dir of NULL anywhere below is the default context's
 * (gr_context_proc_root(NULL), gr_context_dev_dir(NULL): context.h); the scan mode and the kept
 * BPF program are the options' context's */

/* The scan. Which processes hold device files is found by the BPF iterator where it can run
 * (GR_SCAN_MODE_AUTO: as root, on the running kernel's own /proc, with kernel BTF), else, and
 * with GR_SCAN_MODE_PROC, by reading every /proc/PID/fd; GR_SCAN_MODE_BPF tries the iterator
 * without the privilege check. Either way every process's stat is read and the holders'
 * details are the same; the table says which was used and why not the other. */
int gr_proc_scan(const gr_proc_options *opts, gr_proc_table **ret);
/* The one walk of the process table (the scan uses the same listing): cb gets every process's
 * parsed stat, in PID order; a process that vanishes is skipped; cb returns <0 to stop */
int gr_proc_walk(const char *proc_root, int (*cb)(pid_t pid, const gr_stat *st, void *userdata), void *userdata);
/* Read status, cmdline, cgroup and environment marks of one process of the table (no-op when
 * already read). */
int gr_proc_load_details(const gr_proc_options *opts, gr_process *p);
/* Read its TCP sockets (no-op when already read) */
int gr_proc_load_net(const gr_proc_options *opts, gr_process *p);
gr_process *gr_proc_table_find(const gr_proc_table *t, pid_t pid);
void gr_proc_table_free(gr_proc_table *t);

/* A live process whose own file table shows no device file, read again through its threads
 * that have a table of their own (unshare(CLONE_FILES)), which the full /proc scan does not
 * read for every threaded process: for those the driver names as context owners. Fills p's
 * holding (and t's count) where one holds; 0, or -ENOMEM */
int gr_proc_read_thread_files(const gr_proc_options *opts, gr_proc_table *t, gr_process *p);

/* The NVIDIA device files one process holds (fds only: no maps, no details); 0 with *ret NULL
 * when it holds none, -errno when its fd directory cannot be read */
int gr_proc_holding(const char *proc_root, const char *dev_dir, pid_t pid, gr_holding **ret);
/* Does the process hold one of these sockets (inodes, as /proc/net/tcp names them), in its own
 * file table, in a thread's table of its own (unshare(CLONE_FILES)), or where its main thread
 * has ended alone, in its live threads' (a server whose main thread called pthread_exit)? Every
 * fd is read. 1, 0, or -errno when its fd directory cannot be read (-ESRCH: gone) */
int gr_proc_holds_socket(const char *proc_root, pid_t pid, const uint64_t *inodes, size_t n);
/* Does the process hold a DRM or KFD file (an AMD or Intel GPU's, docs/drm.md)? 1, 0, or -errno
 * when its fd directory cannot be read */
int gr_proc_holds_drm(const char *proc_root, const char *dev_dir, pid_t pid);
/* fn on each DRM and KFD fd the process holds, every one, in its own file table and in each
 * live thread's that has one of its own (table_dir: the directory of that table, /proc/PID or a
 * task/TID, whose fdinfo/FD describes the fd; table_tid: PID for its own table, the thread's
 * TID for a thread's, so /proc/TABLE_TID/fdinfo/FD is the fd's too; node a gr_drm_node), until
 * minor the DRM minor of a card or render node; fn answers non-zero, which is returned; 0 when every one was seen; -errno when a table cannot
 * be read, -E2BIG when more threads than are read have tables of their own: then not all were
 * seen */
typedef int (*gr_drm_fd_fn)(int table_dir, pid_t table_tid, int fd, unsigned node, unsigned minor, void *userdata);
int gr_proc_each_drm_fd(const char *proc_root, const char *dev_dir, pid_t pid, gr_drm_fd_fn fn, void *userdata);

/* ---- scopes (lib/proc/scope.c): one job, cgroup, container or pod ---- */

typedef enum gr_scope_kind {
        GR_SCOPE_NONE,
        GR_SCOPE_SLURM_JOB,     /* a job id: its cgroup (.../job_ID/...), or SLURM_JOB_ID=ID */
        GR_SCOPE_CGROUP,        /* a cgroup path and everything below it */
        GR_SCOPE_CONTAINER,     /* a container id (at least 12 hex digits) */
        GR_SCOPE_POD,           /* a Kubernetes pod UID */
} gr_scope_kind;

typedef struct gr_scope {
        gr_scope_kind kind;
        char id[512];
} gr_scope;

typedef enum gr_scope_match {
        GR_SCOPE_OUT,
        GR_SCOPE_IN,
        GR_SCOPE_ESCAPED,       /* not in the job's cgroup, but carries its SLURM_JOB_ID */
} gr_scope_match;

int gr_scope_parse(gr_scope_kind kind, const char *value, gr_scope *ret); /* -EINVAL: malformed */
gr_scope_match gr_scope_contains(const gr_scope *sc, const gr_process *p);
const char *gr_scope_kind_name(gr_scope_kind k);

/* Identity check before acting: does pid still name the process that started at start_time?
 * 1 yes, 0 no (another process, or none), -errno when it could not be read */
int gr_proc_same_process(const char *proc_root, pid_t pid, uint64_t start_time);

/* We run in the kernel's initial PID namespace and /proc is of it: PIDs here are the numbers
 * the kernel's BPF iterators and the NVIDIA driver report */
bool gr_proc_in_init_pidns(void);
/* The PID /proc/self names (0 when it cannot be read): gpureap's own only where /proc is of
 * its PID namespace */
pid_t gr_proc_self_pid(void);
/* We run in the kernel's initial time namespace (or one without time namespaces): start
 * times read from /proc are the kernel's own, the same for every reader that is too */
bool gr_proc_in_init_timens(void);
/* Our own start time (stat field 22), for GPUREAP_RUN_REF; -EXDEV in a time namespace of our
 * own, where it is not what the initial namespace's readers see */
int gr_proc_self_start_time(uint64_t *ret);

/* ---- one process, pinned (lib/proc/pidref.c) ---- */

typedef struct gr_pidref {
        pid_t pid;
        uint64_t start_time;
        int fd;                  /* pidfd; -1 without one: /proc is checked before each signal */
        bool check_uid;
        uid_t want_uid;
} gr_pidref;

/* Pin the process that has this PID and check that it is still the one planned (its start
 * time, and its owner when want_uid is given). 0: pinned; -ESRCH: gone; -ESTALE: the PID names
 * another process now, or its owner changed; -EMFILE and other -errno: an error, nothing pinned.
 * use_fd false: no pidfd is taken (to spare file descriptors). */
int gr_pidref_pin(gr_pidref *ret, const char *proc_root, pid_t pid, uint64_t start_time,
                  const uid_t *want_uid, bool use_fd);
/* 0, or -ESRCH when it is gone (or its PID names another process), -EPERM, ... */
int gr_pidref_kill(gr_pidref *r, const char *proc_root, int sig);
/* Has it ended (a zombie counts), or does its PID name another process? */
bool gr_pidref_gone(const gr_pidref *r, const char *proc_root);
void gr_pidref_done(gr_pidref *r);

/* ---- the kernel's process events (lib/proc/procevents.c): the netlink process connector ----
 * How each process ended, which no /proc scan can tell after the fact, and who forked whom.
 * The events name processes by their PIDs in the initial PID namespace. */
/* A process ended: its PID and its wait status (WIFSIGNALED/WTERMSIG, WEXITSTATUS) */
typedef void (*gr_procev_exit_fn)(pid_t pid, int wait_status, void *userdata);
/* A process forked another (thread group IDs; threads are left out) */
typedef void (*gr_procev_fork_fn)(pid_t parent, pid_t child, void *userdata);
/* A non-blocking socket subscribed to the events, or -errno (-EPERM without CAP_NET_ADMIN) */
int gr_procev_open(void);
/* Read what is waiting, calling on_exit for each process that ended; *ret_lost set when the
 * kernel dropped events. The number of exits, or -errno. */
int gr_procev_read(int fd, gr_procev_exit_fn on_exit, void *userdata, bool *ret_lost);
/* The same with the forks too, in the kernel's order; on_exit may be NULL. The number of
 * events, or -errno. */
int gr_procev_read_lineage(int fd, gr_procev_fork_fn on_fork, gr_procev_exit_fn on_exit, void *userdata,
                           bool *ret_lost);

#pragma GCC visibility pop

#endif
