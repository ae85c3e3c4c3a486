/* One-line errors in git's style: the program's name, lower case, no full stop */
#include <stdarg.h>
#include <stdio.h>

#include "gpureap.h"

void error_msg(const char *fmt, ...)
{
        va_list ap;
        fflush(stdout); /* one file for both: the lines in the order they happened */
        fputs("gpureap: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
}
