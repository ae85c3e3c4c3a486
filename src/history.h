/* What 'gpureap serve' remembers between snapshots (docs/serve.md): for each GPU holder, the
 * launcher it saw start it and how that launcher ended; how long each GPU has been in its state.
 * Nothing here claims what serve did not see: a holder first seen after its launcher was gone
 * has no launcher, and every time is at most as old as serve. */
#ifndef GPUREAP_HISTORY_H
#define GPUREAP_HISTORY_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "gpureap/diagnose.h"
#include "gpureap/snapshot.h"

#define HISTORY_HOLDERS_MAX 65536 /* holders remembered; more are served without memory */

struct history_gpu {
        char uuid[96];
        gr_gpu_state state;
        uint64_t since_ms;
};

struct history {
        pthread_mutex_t lock;     /* the refresh and the process events both write */
        uint64_t since_ms;        /* serve's start: nothing older is claimed */
        bool events;              /* exit causes come from the kernel's process events */
        bool events_lost;
        struct history_holder *holders;
        size_t n, cap;
        struct history_gpu gpus[GR_GPUS_MAX];
        unsigned n_gpus;
        bool dirty;               /* changed since it was last written */
        char proc_root[1024];
};

void history_init(struct history *h, uint64_t now_ms, bool events, const char *proc_root);
void history_release(struct history *h);

/* A process ended (from the kernel's events): the launchers being watched note how; true when
 * it was one of them */
bool history_note_exit(struct history *h, pid_t pid, int wait_status, uint64_t now_ms);
void history_note_lost(struct history *h);

/* Bring the holders' memory up to date with a new snapshot and attach it (each holder's seen
 * record, the history fields), before the snapshot is diagnosed. -ENOMEM or 0 (the snapshot is
 * then diagnosed with what could be attached). */
int history_attach(struct history *h, gr_snapshot *s, uint64_t now_ms);
/* After the diagnosis: how long each GPU has been in its state (the snapshot's
 * gpu_state_since_ms); the changes go to syslog */
void history_gpus(struct history *h, gr_snapshot *s, const gr_diagnosis *d, uint64_t now_ms);

/* The history on disk, so that a serve killed and started again keeps what it saw: NAME in the
 * directory DIR (beside serve's socket), written whole to a temporary file, fsync()ed and
 * renamed over it, and only when something changed since the last write. 0 or -errno. */
int history_save(struct history *h, int dir, const char *name, uint64_t now_ms);
/* Read it back at start (SHOWN: its path, for the message): 1 when recovered (msg: the one line
 * that says what), 0 when there is none, -errno when a file was there and was ignored (msg:
 * why: not serve's own, corrupt, cut short, from before the last boot). Holders that are gone
 * are forgotten and launchers last seen alive that are gone now ended how not seen, as the
 * history's own rules say at every look. */
int history_load(struct history *h, int dir, const char *name, const char *shown, uint64_t now_ms, char *msg,
                 size_t size);

#endif
