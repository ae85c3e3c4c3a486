/* The one clock (issue 20): every time gpureap reads comes from here. Deadlines, waits and
 * durations use the monotonic clock (gr_now_ms, gr_now_us, gr_deadline_in); times that are shown
 * or stored use the wall clock (gr_wall_ms); a process's age is compared with the boot-time clock,
 * the one /proc/PID/stat's start time counts on (gr_boot_ticks). */
#include <time.h>

#include "gpureap/basic.h"

static uint64_t read_us(clockid_t clock)
{
        struct timespec ts;
        clock_gettime(clock, &ts);
        return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

uint64_t gr_now_ms(void)
{
        return read_us(CLOCK_MONOTONIC) / 1000;
}

uint64_t gr_now_us(void)
{
        return read_us(CLOCK_MONOTONIC);
}

uint64_t gr_wall_ms(void)
{
        return read_us(CLOCK_REALTIME) / 1000;
}

uint64_t gr_boot_ticks(long hz)
{
        struct timespec bt;
        clock_gettime(CLOCK_BOOTTIME, &bt);
        return (uint64_t)bt.tv_sec * (uint64_t)hz + (uint64_t)bt.tv_nsec / (1000000000ULL / (uint64_t)hz);
}

struct timespec gr_deadline_in(uint64_t ms)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t ns = (uint64_t)ts.tv_nsec + (ms % 1000) * 1000000;
        ts.tv_sec += (time_t)(ms / 1000 + ns / 1000000000);
        ts.tv_nsec = (long)(ns % 1000000000);
        return ts;
}
