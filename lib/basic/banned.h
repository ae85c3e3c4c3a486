/* Functions that are easy to misuse, banned at compile time in the style of git's banned.h.
 * Included into every translation unit by the build (-include), after the system headers
 * that declare them. */
#ifndef GPUREAP_BANNED_H
#define GPUREAP_BANNED_H

/* the headers that declare them first: later includes of these are no-ops */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BANNED(func) sorry_##func##_is_a_banned_function

#undef strcpy
#define strcpy(x, y) BANNED(strcpy)
#undef strcat
#define strcat(x, y) BANNED(strcat)
#undef sprintf
#define sprintf(...) BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) BANNED(vsprintf)
#undef strtok
#define strtok(x, y) BANNED(strtok)
#undef atoi
#define atoi(x) BANNED(atoi)
#undef gets
#define gets(x) BANNED(gets)

#endif
