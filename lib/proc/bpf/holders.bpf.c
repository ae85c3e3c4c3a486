/* The kernel side of the holder scan (lib/proc/proc-bpf.c): one pass of the task-file iterator
 * over every open file of every thread-group leader, emitting (tgid, fd) for each file that may
 * be an NVIDIA device file: a character device of one of the majors user space read from
 * /proc/devices, a file whose name or whose directory's name starts with "nvidia" (a deleted
 * one, or one made since user space looked), or an inode number of one of the nvidia* entries
 * of the device directory (fake device files in tests are regular files). It is a filter, never the verdict: user space
 * reads those processes' fd directories as the /proc scan does and classifies them by path, so
 * a false candidate costs a read and nothing else. It only reads. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define GR_BPF_MAJORS_MAX 16
#define S_IFMT 00170000
#define S_IFCHR 0020000
#define MINORBITS 20 /* the kernel's dev_t: major << 20 | minor */

/* filled by user space before the load (rodata) */
const volatile __u32 n_majors = 0;
const volatile __u32 majors[GR_BPF_MAJORS_MAX] = {};

/* inode numbers of the files of the device directory that user space looks for */
struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, 1024);
        __type(key, __u64);
        __type(value, __u8);
} inodes SEC(".maps");

/* Does a dentry's name start with "nvidia"? */
static bool named_nvidia(struct dentry *d)
{
        const unsigned char *name = BPF_CORE_READ(d, d_name.name);
        char b[6];
        if (!name || bpf_probe_read_kernel(b, sizeof(b), name) < 0)
                return false;
        return b[0] == 'n' && b[1] == 'v' && b[2] == 'i' && b[3] == 'd' && b[4] == 'i' && b[5] == 'a';
}

struct gr_bpf_record {
        __u32 tgid;
        __u32 fd;
};

SEC("iter/task_file")
int gr_holders(struct bpf_iter__task_file *ctx)
{
        struct seq_file *seq = ctx->meta->seq;
        struct task_struct *task = ctx->task;
        struct file *file = ctx->file;
        if (!task || !file)
                return 0;
        /* /proc/PID/fd shows the leader's table; the kernel already skips threads sharing it.
         * A thread reached here has a table of its own (unshare(CLONE_FILES)), or its leader
         * has ended alone (pthread_exit: the leader's table is gone, the process lives on in
         * its threads): either way its process is named, and user space reads the fd
         * directories of the threads (task/TID/fd) where the leader's holds nothing. */
        __u32 tgid = BPF_CORE_READ(task, tgid);
        struct inode *inode = BPF_CORE_READ(file, f_inode);
        if (!inode)
                return 0;
        bool hit = false;
        if ((BPF_CORE_READ(inode, i_mode) & S_IFMT) == S_IFCHR) {
                __u32 major = BPF_CORE_READ(inode, i_rdev) >> MINORBITS;
                for (__u32 i = 0; i < GR_BPF_MAJORS_MAX; i++) {
                        if (i >= n_majors)
                                break;
                        if (majors[i] == major) {
                                hit = true;
                                break;
                        }
                }
        }
        if (!hit) {
                __u64 ino = BPF_CORE_READ(inode, i_ino);
                hit = bpf_map_lookup_elem(&inodes, &ino) != NULL;
        }
        if (!hit) {
                struct dentry *d = BPF_CORE_READ(file, f_path.dentry);
                hit = d && (named_nvidia(d) || named_nvidia(BPF_CORE_READ(d, d_parent)));
        }
        if (!hit)
                return 0;
        struct gr_bpf_record r = { .tgid = tgid, .fd = ctx->fd };
        bpf_seq_write(seq, &r, sizeof(r));
        return 0;
}
