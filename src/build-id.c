/* The GNU build ID of a program, as lowercase hex: what serve and its clients compare to know
 * that they are one build (snapshot-wire.c reads its own from memory; the served status client,
 * src/status-fast.c, reads gpureap's from its file). And which gpureap is the one of this build,
 * for the programs beside it (gpureap-status, gpureap-run). */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpureap/basic.h"

#include "gpureap.h"

int elf_notes_build_id(const void *notes, size_t len, char *out, size_t size)
{
        const char *p = notes, *end = p + len;
        while ((size_t)(end - p) >= sizeof(ElfW(Nhdr))) {
                ElfW(Nhdr) nh;
                memcpy(&nh, p, sizeof(nh));
                size_t name_len = ((size_t)nh.n_namesz + 3) & ~(size_t)3, desc_len = ((size_t)nh.n_descsz + 3) & ~(size_t)3;
                const char *name = p + sizeof(nh);
                if (name_len > (size_t)(end - name) || desc_len > (size_t)(end - name) - name_len)
                        break;
                const unsigned char *desc = (const unsigned char *)name + name_len;
                if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && memcmp(name, "GNU", 4) == 0 &&
                    nh.n_descsz > 0 && (size_t)nh.n_descsz * 2 < size) {
                        static const char hex[] = "0123456789abcdef";
                        for (size_t k = 0; k < nh.n_descsz; k++) {
                                out[2 * k] = hex[desc[k] >> 4];
                                out[2 * k + 1] = hex[desc[k] & 15];
                        }
                        out[2 * (size_t)nh.n_descsz] = '\0';
                        return 0;
                }
                p = (const char *)desc + desc_len;
        }
        return -1;
}

/* The gpureap program beside this one, as /proc/self/exe resolves it (through any symlink to
 * this program): 0, or -1 where that cannot be told (a path longer than the kernel gives, a
 * program run from a deleted file or a memfd), and then no other gpureap is guessed at */
int gpureap_beside(char *ret, size_t size)
{
        char self[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self));
        if (n <= 0 || (size_t)n >= sizeof(self) || self[0] != '/')
                return -1;
        self[n] = '\0';
        static const char deleted[] = " (deleted)";
        if ((size_t)n >= sizeof(deleted) - 1 && strcmp(self + n - (sizeof(deleted) - 1), deleted) == 0)
                return -1;
        char *slash = strrchr(self, '/');
        if ((size_t)(slash - self) + sizeof("/gpureap") > size)
                return -1;
        memcpy(ret, self, (size_t)(slash - self));
        memcpy(ret + (slash - self), "/gpureap", sizeof("/gpureap"));
        return 0;
}

int gpureap_beside_open(char *ret, size_t size, char *why, size_t why_size)
{
        if (why_size)
                why[0] = '\0';
        if (gpureap_beside(ret, size) < 0)
                return -1;
        /* as root: as trusted as this program's own file, root's or its owner's, every
         * directory and link on the way too, none that others may change (gr_open_trusted). A
         * hard link to this program, or a bind mount of it, in another user's directory makes
         * /proc/self/exe name that directory: its gpureap ran as root. A user runs what the
         * directory holds, as it runs this program from there (a build of its own with umask
         * 002 has directories its group may write) */
        int fd;
        if (geteuid() != 0) {
                fd = open(ret, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* a FIFO there: not waited on */
                if (fd < 0)
                        return errno == ENOENT ? -ENOENT : -1;
        } else {
                struct stat self;
                if (stat("/proc/self/exe", &self) < 0)
                        return -1;
                fd = gr_open_trusted(ret, O_RDONLY | O_NONBLOCK, self.st_uid, why, why_size);
                if (fd == -ENOENT)
                        return -ENOENT;
                if (fd < 0 && !why[0])
                        snprintf(why, why_size, "%s", strerror(-fd));
                if (fd < 0)
                        return -EPERM;
        }
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                close(fd);
                snprintf(why, why_size, "'%s' is not a program file", ret);
                return -EPERM;
        }
        return fd;
}
