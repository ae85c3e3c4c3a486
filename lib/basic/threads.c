/* Work shared out to threads (basic.h): the tree's listing and the teardown's looks, where a
 * young tree's hundred members were read one by one while the first signal waited (issue 25) */
#include <pthread.h>
#include <stdbool.h>
#include <unistd.h>

#include "gpureap/basic.h"

void gr_run_parallel(void *(*fn)(void *), void *items, size_t size, size_t n)
{
        pthread_t t[GR_PARALLEL_MAX];
        bool started[GR_PARALLEL_MAX] = { false };
        if (n > GR_PARALLEL_MAX)
                n = GR_PARALLEL_MAX;
        for (size_t i = 1; i < n; i++)
                started[i] = pthread_create(&t[i], NULL, fn, (char *)items + i * size) == 0;
        if (n > 0)
                fn(items);
        for (size_t i = 1; i < n; i++) {
                if (started[i])
                        pthread_join(t[i], NULL);
                else
                        fn((char *)items + i * size);
        }
}

long gr_cpus_online(void)
{
        static long cpus;
        if (!cpus) {
                long c = sysconf(_SC_NPROCESSORS_ONLN);
                cpus = c > 0 ? c : 1;
        }
        return cpus;
}
