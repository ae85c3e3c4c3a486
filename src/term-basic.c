/* Whether stdout is a terminal, how wide, and whether to colour: the part of term.c that the
 * served status client (gpureap-status, src/status-fast.c) shares with gpureap, so that both
 * ask serve for the very same report */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "gpureap/basic.h"
#include "gpureap.h"

int terminal_width(int fd)
{
        struct winsize ws;
        if (isatty(fd) && ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
                return ws.ws_col;
        const char *c = getenv("COLUMNS");
        if (c && *c) {
                char *end;
                errno = 0;
                long n = strtol(c, &end, 10);
                if (errno == 0 && *end == '\0' && n > 0 && n <= 10000)
                        return (int)n;
        }
        return isatty(fd) ? 80 : 0;
}

int color_parse(const char *value, enum color_when *ret)
{
        static const char *const names[] = { "auto", "always", "never" };
        for (size_t i = 0; i < GR_ELEMENTSOF(names); i++)
                if (strcmp(value, names[i]) == 0) {
                        *ret = (enum color_when)i;
                        return 0;
                }
        return -1;
}

bool color_wanted(enum color_when when, int fd)
{
        if (when != COLOR_AUTO)
                return when == COLOR_ALWAYS; /* asked for: NO_COLOR does not overrule the command line */
        const char *nc = getenv("NO_COLOR");
        return isatty(fd) && !(nc && *nc);
}
