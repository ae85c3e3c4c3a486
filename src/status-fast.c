/* gpureap-status: 'gpureap status' as a program of its own, the way git-status is 'git status'
 * (issue 25). It takes the fast way only: where gpureap itself would copy out the report that a
 * running 'gpureap serve' rendered for it (cmd-status.c, status_served), this program asks serve
 * for that very report, in gpureap's name (the GNU build ID of the gpureap beside it), and copies
 * it out. Anything else (serve not answering, another build, an option that serve does not
 * render, --help, a mistake) is 'gpureap status' itself, executed with the same arguments: the
 * output and the exit code are always gpureap's.
 *
 * Why a program of its own: it is linked statically and links nothing of gpureap but the socket
 * fetch and the terminal's width, so that starting it costs what starting a static /bin/true
 * costs. gpureap is a dynamic program of 2.4 MB (its loader's relocations and libc's start were
 * most of what a served status cost above a process start), and cannot be static: serve loads
 * libmicrohttpd and the kubelet module with dlopen. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpureap.h"

static bool read_at(int fd, void *buf, size_t n, off_t at)
{
        return pread(fd, buf, n, at) == (ssize_t)n;
}

/* The GNU build ID of the program at path, from its notes: 0, or -1 (not an ELF program of
 * this machine's class, no build ID) */
static int program_build_id(const char *path, char *ret, size_t size)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK); /* a FIFO there: no wait */
        if (fd < 0)
                return -1;
        int r = -1;
        struct stat st;
        ElfW(Ehdr) eh;
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && read_at(fd, &eh, sizeof(eh), 0) && memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 &&
            eh.e_ident[EI_CLASS] == (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32) &&
            eh.e_phentsize == sizeof(ElfW(Phdr)) && eh.e_phnum > 0 && eh.e_phnum <= 64) {
                ElfW(Phdr) ph[64];
                if (read_at(fd, ph, eh.e_phnum * sizeof(ph[0]), (off_t)eh.e_phoff))
                        for (unsigned i = 0; i < eh.e_phnum && r < 0; i++) {
                                char notes[4096];
                                if (ph[i].p_type == PT_NOTE && ph[i].p_filesz <= sizeof(notes) &&
                                    read_at(fd, notes, ph[i].p_filesz, (off_t)ph[i].p_offset))
                                        r = elf_notes_build_id(notes, ph[i].p_filesz, ret, size);
                        }
        }
        close(fd);
        return r;
}

/* The options serve renders for (status_served): --json, --why/-v, --wide/-w, --color WHEN.
 * false for anything else, which gpureap itself takes */
static bool served_options(int argc, char **argv, bool *json, bool *why, bool *wide, enum color_when *color)
{
        for (int i = 1; i < argc; i++) {
                const char *a = argv[i], *when = NULL;
                if (strcmp(a, "--json") == 0)
                        *json = true;
                else if (strcmp(a, "--why") == 0 || strcmp(a, "-v") == 0)
                        *why = true;
                else if (strcmp(a, "--wide") == 0 || strcmp(a, "-w") == 0)
                        *wide = true;
                else if (strncmp(a, "--color=", 8) == 0)
                        when = a + 8;
                else if (strcmp(a, "--color") == 0 && i + 1 < argc)
                        when = argv[++i];
                else
                        return false;
                if (when && color_parse(when, color) < 0)
                        return false; /* gpureap says what is wrong with it */
        }
        return true;
}

static void sigpipe_caught(int sig)
{
        (void)sig;
}

/* The report written to stdout, and the exit code as gpureap's output_checked gives it (a read
 * command whose output did not all arrive: 4 for 0 and 1, docs/exit-codes.md) */
static int write_out(const char *p, size_t n, int code)
{
        /* a reader gone is EPIPE, as in gpureap (a handler, not SIG_IGN: nothing inherits it) */
        struct sigaction sa = { .sa_handler = sigpipe_caught, .sa_flags = SA_RESTART };
        sigemptyset(&sa.sa_mask);
        sigaction(SIGPIPE, &sa, NULL);
        int e = 0;
        while (n > 0 && !e) {
                ssize_t w = write(STDOUT_FILENO, p, n);
                if (w > 0) {
                        p += w;
                        n -= (size_t)w;
                } else if (w < 0 && errno != EINTR) {
                        e = errno;
                } else if (w == 0) {
                        e = EIO;
                }
        }
        if (close(STDOUT_FILENO) < 0 && errno != EBADF && !e)
                e = errno;
        if (!e)
                return code;
        fprintf(stderr, "gpureap: cannot write the output: %s\n", strerror(e));
        return code == EXIT_CLEAN || code == EXIT_NOT_CLEAN ? EXIT_OUTPUT : code;
}

/* The served report copied out, and its exit code; -errno where serve does not answer so */
static int status_fast(int argc, char **argv, const char *gpureap)
{
        bool json = false, why = false, wide = false;
        enum color_when color = COLOR_AUTO;
        serve_wire_set(getenv("GPUREAP_SERVE_WIRE")); /* as gpureap's main reads it */
        /* gpureap status judges $GPUREAP_NVML_TIMEOUT before it asks serve (a bad one is a
         * usage error): set, it is gpureap's to judge */
        const char *nvml_timeout = getenv("GPUREAP_NVML_TIMEOUT");
        if (!served_options(argc, argv, &json, &why, &wide, &color) || !serve_rendered_wanted() ||
            (nvml_timeout && nvml_timeout[0]) || getuid() != geteuid())
                return -ENOTSUP;
        char id[48];
        if (program_build_id(gpureap, id, sizeof(id)) < 0)
                return -ENOEXEC;
        char *buf;
        const char *report;
        size_t len;
        int code = serve_fetch_report(id, json, color_wanted(color, STDOUT_FILENO), why, wide, &buf,
                                      &report, &len);
        if (code < 0)
                return code;
        code = write_out(report, len, code);
        free(buf);
        return code;
}

int main(int argc, char **argv)
{
        char gpureap[PATH_MAX];
        if (gpureap_beside(gpureap, sizeof(gpureap)) < 0) {
                fprintf(stderr, "gpureap: gpureap-status cannot tell which directory it was run from (/proc/self/exe), "
                                "so not which gpureap is its own\n");
                return EXIT_DRIVER;
        }
        int code = status_fast(argc, argv, gpureap);
        if (code >= 0)
                return code;
        /* run only a gpureap as trusted as this program's own file (a hard link of it, or a
         * bind mount, in another user's directory names that directory's gpureap); the report
         * fetched above in its name runs nothing */
        char why[256];
        int exe = gpureap_beside_open(gpureap, sizeof(gpureap), why, sizeof(why));
        if (exe == -EPERM) {
                fprintf(stderr, "gpureap: gpureap-status does not run '%s' for 'gpureap status': not to be trusted: %s\n",
                        gpureap, why);
                return EXIT_DRIVER;
        }
        char **args = calloc((size_t)argc + 3, sizeof(*args));
        if (!args) {
                fprintf(stderr, "gpureap: out of memory\n");
                return EXIT_DRIVER;
        }
        /* serve did not answer in its 500 ms: gpureap would ask it again (another 500 ms), and
         * then look itself; it looks at once (only the options serve renders are here) */
        int k = 0;
        args[k++] = (char *)"gpureap";
        args[k++] = (char *)"status";
        if (code == -ETIMEDOUT)
                args[k++] = (char *)"--direct";
        for (int i = 1; i < argc; i++)
                args[k++] = argv[i];
        /* the very file checked (a name looked up again could be another's by then, in /tmp);
         * its fd left open across the exec, for a script's interpreter to read it by */
        if (exe >= 0) {
                fcntl(exe, F_SETFD, 0);
                fexecve(exe, args, environ);
        } else {
                execv(gpureap, args);
        }
        int e = errno;
        free(args);
        fprintf(stderr, "gpureap: cannot run '%s' for 'gpureap status': %s\n", gpureap, strerror(e));
        return EXIT_DRIVER;
}
