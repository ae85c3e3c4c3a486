/* A set of PIDs in the order found, with an open-addressing index (pidset.h) */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "basic/pidset.h"

static bool pidset_seen(struct gr_pidset *ps, pid_t pid)
{
        for (size_t h = ((uint32_t)pid * 2654435761u) & ps->mask;; h = (h + 1) & ps->mask) {
                if (ps->slots[h] == pid)
                        return true;
                if (ps->slots[h] == 0) {
                        ps->slots[h] = pid;
                        return false;
                }
        }
}

/* Is pid in the set? (no change to it: safe while other threads read the same set) */
bool gr_pidset_has(const struct gr_pidset *ps, pid_t pid)
{
        if (!ps->slots)
                return false;
        for (size_t h = ((uint32_t)pid * 2654435761u) & ps->mask;; h = (h + 1) & ps->mask) {
                if (ps->slots[h] == pid)
                        return true;
                if (ps->slots[h] == 0)
                        return false;
        }
}

int gr_pidset_add(struct gr_pidset *ps, pid_t pid)
{
        if (ps->n * 2 >= ps->mask) { /* keep the index at most half full: rebuild it twice as big */
                size_t slots = ps->mask ? (ps->mask + 1) * 2 : 256;
                pid_t *ns = calloc(slots, sizeof(*ns));
                if (!ns)
                        return -ENOMEM;
                free(ps->slots);
                ps->slots = ns;
                ps->mask = slots - 1;
                for (size_t i = 0; i < ps->n; i++)
                        pidset_seen(ps, ps->p[i]);
        }
        if (pidset_seen(ps, pid))
                return 0;
        if (ps->n == ps->cap) {
                size_t cap = ps->cap ? ps->cap * 2 : 64;
                pid_t *np = realloc(ps->p, cap * sizeof(*np));
                if (!np)
                        return -ENOMEM;
                ps->p = np;
                ps->cap = cap;
        }
        ps->p[ps->n++] = pid;
        return 1;
}

void gr_pidset_free(struct gr_pidset *ps)
{
        free(ps->p);
        free(ps->slots);
        *ps = (struct gr_pidset){ 0 };
}
