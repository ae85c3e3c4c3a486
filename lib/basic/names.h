/* One name table for each enum (issue 20): GR_NAME_TABLE defines `const char *FN(TYPE v)`,
 * which gives the name written in JSON, metrics and the audit log for each value, and FALLBACK
 * for a value outside the table. The names are designated ([GR_X] = "x"), so their order cannot
 * drift from the enum's, and LAST, the enum's last value, makes the build fail when a value is
 * added at the end without a name. */
#ifndef GPUREAP_LIB_NAMES_H
#define GPUREAP_LIB_NAMES_H

#include "gpureap/basic.h"

#define GR_NAME_TABLE(fn, type, last, fallback, ...)                                                     \
        const char *fn(type v)                                                                           \
        {                                                                                                \
                static const char *const names[] = { __VA_ARGS__ };                                      \
                _Static_assert(GR_ELEMENTSOF(names) == (size_t)(last) + 1, "a name for every " #type);   \
                return (unsigned)v < GR_ELEMENTSOF(names) && names[v] ? names[v] : (fallback);           \
        }

#endif
