/* Who is who: the judgement of every holder (live, leftover or unsure, with a confidence) from
 * everything the snapshot shows about it and its lineage. The rules, in order, are those of
 * docs/verdicts.md; each piece of evidence is kept, with the way it leans, so that a person can
 * check the verdict and the JSON carries it.
 *
 * PID numbers cannot mislead here: the kernel does not hand out a number while it still names a
 * process group or a session, so a leader found by its PID is the leader itself; only the
 * GPUREAP_RUN_PID marker, which the kernel does not pin, is checked by name and start time. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "diagnose/dx.h"
#include "gpureap/basic.h"

__attribute__((format(printf, 4, 5)))
static void ev_add(gr_evidence_list *l, gr_evidence_key key, gr_lean lean, const char *fmt, ...)
{
        if (l->n >= GR_EVIDENCE_MAX)
                return;
        gr_evidence *e = &l->items[l->n++];
        e->key = key;
        e->lean = lean;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->value, sizeof(e->value), fmt, ap);
        va_end(ap);
}

struct judged {
        gr_judgement judgement;
        gr_confidence confidence;
        char reason[240];
};

__attribute__((format(printf, 4, 5)))
static void judge(struct judged *j, gr_judgement what, gr_confidence conf, const char *fmt, ...)
{
        j->judgement = what;
        j->confidence = what == GR_JUDGE_UNSURE ? GR_UNSURE : conf;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(j->reason, sizeof(j->reason), fmt, ap);
        va_end(ap);
}

/* Inits and subreapers, by what they are: their children were handed to them, except the
 * command an init shim started */

/* The most a shim takes between its own start and its command's fork (a few syscalls; the
 * rest is margin for a loaded machine) */
#define SHIM_COMMAND_MS 1000

/* Is child the command that the init shim parent started (tini -- CMD, dumb-init CMD)? A shim
 * forks it at once, and it is its first child: the one that started within SHIM_COMMAND_MS of
 * the shim, with no child of the shim older than it, and in a process group or session of its
 * own or in the shim's (as each shim starts it). A process handed to the shim was started by
 * that command or below it, later, in the group of the launcher that died. */
static bool shim_command(const struct dx *x, const gr_process *child, const gr_process *shim)
{
        long hz = x->s->procs->clock_ticks > 0 ? x->s->procs->clock_ticks : 100;
        uint64_t window = (uint64_t)hz * SHIM_COMMAND_MS / 1000;
        if (child->start_time < shim->start_time || child->start_time - shim->start_time > window)
                return false;
        if (child->pgrp != child->pid && child->session != child->pid && child->pgrp != shim->pgrp)
                return false;
        const gr_proc_table *t = x->s->procs;
        for (size_t i = 0; i < t->n; i++) {
                const gr_process *o = &t->procs[i];
                if (o != child && o->ppid == shim->pid && dx_alive(o) &&
                    (o->start_time < child->start_time || (o->start_time == child->start_time && o->pid < child->pid)))
                        return false;
        }
        return true;
}

/* Was child handed to parent (its launcher is gone): parent is missing (gone, or outside this
 * view), or an init or subreaper by what it is, not by its name (a launcher may call itself
 * 'init'), and child is not the command that a shim started. The host's PID 1 always is one,
 * whatever it is; a container's PID 1 only when it is a known init: an application that runs
 * as PID 1 of its container is its workers' launcher. */
static bool init_like(const struct dx *x, const gr_process *child, const gr_process *parent)
{
        if (!parent || child->ppid <= 0)
                return true;
        bool ns_init = parent->n_nspid > 1 && parent->nspid[parent->n_nspid - 1] == 1;
        if (parent->pid == 1 && !ns_init && x->s->pidns != GR_PIDNS_OTHER)
                return true;
        /* a container's PID 1 is one by its place: its name is its own or its image's (no
         * launcher below it renames it); anywhere else the name must be backed by what runs */
        bool pid1 = ns_init || parent->pid == 1;
        if (pid1 ? !gr_proc_comm_is_init(parent->comm)
                 : !gr_proc_is_init_program(parent->comm, parent->exe_state, parent->exe))
                return false;
        return !(gr_proc_comm_is_shim(parent->comm) && shim_command(x, child, parent));
}

/* The PID a process has in its own (innermost) PID namespace, as it would give it to its
 * children (GPUREAP_RUN_PID and the gpureap-run-N cgroup carry what 'gpureap run' read of
 * itself) */
static pid_t own_ns_pid(const gr_process *q)
{
        return q->n_nspid > 0 ? q->nspid[q->n_nspid - 1] : q->pid;
}

/* A live ancestor of p that has the number n in its own PID namespace and started no later
 * than p: 'gpureap run' n, whatever its binary is called (its members stay below it, their
 * subreaper; a container's entrypoint run is 1 there) */
static const gr_process *run_ancestor(const struct dx *x, const gr_process *p, pid_t n)
{
        const gr_process *a = dx_find(x, p->ppid);
        for (int depth = 0; a && depth < 64 && dx_alive(a); depth++) {
                if (own_ns_pid(a) == n && a->start_time <= p->start_time)
                        return a;
                if (a->pid <= 1 || a->ppid == a->pid)
                        break;
                a = dx_find(x, a->ppid);
        }
        return NULL;
}

static const char *comm_of(const struct dx *x, pid_t pid)
{
        const gr_process *p = dx_find(x, pid);
        return p ? p->comm : x->s->procs_partial ? "not recorded" : x->hidden ? "not visible" : "gone";
}

/* A worker marker: how the process was started by a launcher it is meant to die with. From the
 * command line or title (its own) or the environment (inherited by whatever it starts). */
typedef enum { MARK_NONE, MARK_CMDLINE, MARK_ENV } mark_kind;

static mark_kind worker_marker(const gr_process *p, char *buf, size_t size)
{
        const char *cmd = p->cmdline ? p->cmdline : "";
        static const char *const titles[] = { "sglang::", "VLLM::", "VllmWorker", "ray::" };
        if (strstr(cmd, "multiprocessing.spawn import spawn_main") || strstr(cmd, "--multiprocessing-fork")) {
                snprintf(buf, size, "python multiprocessing spawn");
                return MARK_CMDLINE;
        }
        if (strstr(cmd, "multiprocessing.forkserver import main")) {
                snprintf(buf, size, "python multiprocessing forkserver");
                return MARK_CMDLINE;
        }
        for (size_t i = 0; i < GR_ELEMENTSOF(titles); i++) {
                size_t n = strlen(titles[i]);
                const char *t = strncmp(cmd, titles[i], n) == 0 ? cmd :
                                strncmp(p->comm, titles[i], n) == 0 ? p->comm : NULL;
                if (t) {
                        int w = (int)strcspn(t, " ");
                        snprintf(buf, size, "process title %.*s", w > 48 ? 48 : w, t);
                        return MARK_CMDLINE;
                }
        }
        if (p->env_read && p->env.torchelastic_run_id[0]) {
                int o = snprintf(buf, size, "torchelastic run %s", p->env.torchelastic_run_id);
                if (p->env.local_rank >= 0 && o > 0 && (size_t)o < size)
                        snprintf(buf + o, size - (size_t)o, ", local rank %d", p->env.local_rank);
                return MARK_ENV;
        }
        return MARK_NONE;
}

/* Its own listening ports: a socket inherited by several processes of a dead group (the
 * launcher's, kept by its workers) says nothing about a server */
static unsigned shared_listeners(const struct dx *x, uint64_t inode)
{
        unsigned n = 0;
        for (size_t i = 0; i < x->n_listens; i++)
                n += x->listens[i].inode == inode;
        return n;
}

struct root_facts {
        mark_kind mark;
        char mark_text[96];
        gr_cgroup_kind cg;
        uint16_t own_port;        /* a port it listens on that is its own, 0 none */
        bool serving, foreground;
        bool group_self, group_alive, group_gone, session_self, session_alive;
        bool leader_same_name;    /* its live group leader has its name: it forked it */
        bool ns_init;             /* PID 1 of a namespace of its own (a container's init) */
        bool runtime_alive;       /* its parent is a live container runtime (containerd-shim, conmon) */
        bool parent_alive;        /* its parent is alive (an init or a subreaper): not gone */
        bool run_alive;           /* for a 'gpureap run' cgroup: its supervisor lives */
        bool run_unknown;         /* ... or cannot be told: the cgroup's number is of another PID namespace */
        char cg_name[128];
        bool nohup;               /* ignores SIGHUP: started to outlive its terminal */
        /* what 'gpureap serve' saw (docs/verdicts.md, step 4.0) */
        int launcher_killed;      /* the signal that killed its launcher (same program), 0 none */
        bool launcher_vanished;   /* its launcher (same program) is gone, how is not known, or it
                                     exited with a failure */
        char launcher_text[96];
};

/* How long before the snapshot, in words: "12 s", "3 min", "2 h" */
static void ago(const struct dx *x, uint64_t ms, char *buf, size_t size)
{
        uint64_t now = x->s->taken_at_ms, d = ms && now > ms ? (now - ms) / 1000 : 0;
        if (d < 120)
                snprintf(buf, size, "%llu s", (unsigned long long)d);
        else if (d < 7200)
                snprintf(buf, size, "%llu min", (unsigned long long)(d / 60));
        else
                snprintf(buf, size, "%llu h", (unsigned long long)(d / 3600));
}

/* The launcher serve saw start R, and how it ended: evidence, and the facts for the rules */
static void seen_evidence(const struct dx *x, const gr_process *r, gr_evidence_list *ev, struct root_facts *f)
{
        const gr_seen *h = r->seen;
        if (!h || h->launcher <= 0)
                return;
        char when[32];
        ago(x, h->end_ms, when, sizeof(when));
        snprintf(f->launcher_text, sizeof(f->launcher_text), "%d (%s)", (int)h->launcher, h->launcher_comm);
        const char *kind = h->same_exe ? "its launcher" : "its parent, another program,";
        switch (h->end) {
        case GR_END_ALIVE:
                ev_add(ev, GR_EV_SEEN, GR_LEAN_NEUTRAL, "started by %s, alive at serve's last look", f->launcher_text);
                break;
        case GR_END_SIGNAL: {
                const char *sig = sigabbrev_np(h->end_status);
                bool hup = h->end_status == SIGHUP;
                if (h->same_exe && !hup)
                        f->launcher_killed = h->end_status;
                ev_add(ev, GR_EV_SEEN, f->launcher_killed ? GR_LEAN_LEFTOVER : GR_LEAN_NEUTRAL,
                       "%s %s was killed by SIG%s %s ago%s", kind, f->launcher_text, sig ? sig : "?", when,
                       hup ? " (a hangup: what outlives it may be meant to)" : "");
                break;
        }
        case GR_END_EXIT:
                /* status 0: it meant to leave this running (a daemon's start); another: it failed */
                f->launcher_vanished = h->same_exe && h->end_status != 0;
                ev_add(ev, GR_EV_SEEN, f->launcher_vanished ? GR_LEAN_LEFTOVER : GR_LEAN_NEUTRAL,
                       "%s %s exited with status %d %s ago%s", kind, f->launcher_text, h->end_status, when,
                       h->end_status == 0 ? ": it left this running" : ": it failed");
                break;
        case GR_END_UNKNOWN:
                f->launcher_vanished = h->same_exe;
                ev_add(ev, GR_EV_SEEN, h->same_exe ? GR_LEAN_LEFTOVER : GR_LEAN_NEUTRAL,
                       "%s %s is gone since %s ago; how it ended was not seen", kind, f->launcher_text, when);
                break;
        }
}

/* Gather the evidence on a root R (its parent is init-like or gone) */
static void root_evidence(const struct dx *x, const gr_process *r, gr_evidence_list *ev,
                          struct root_facts *f)
{
        const gr_process *parent = dx_find(x, r->ppid);
        if (r->ppid == 1 && !parent)
                ev_add(ev, GR_EV_REPARENTED, GR_LEAN_LEFTOVER, "child of PID 1");
        else if (r->ppid > 0 && !parent)
                ev_add(ev, GR_EV_REPARENTED, x->s->procs_partial ? GR_LEAN_NEUTRAL : GR_LEAN_LEFTOVER,
                       "parent %d %s", (int)r->ppid, x->s->procs_partial ? "not recorded" : "gone");
        else if (parent && parent->pid == 1)
                ev_add(ev, GR_EV_REPARENTED, GR_LEAN_LEFTOVER, "child of PID 1 (%s)", parent->comm);
        else if (parent)
                ev_add(ev, GR_EV_REPARENTED, GR_LEAN_LEFTOVER, "child of init or subreaper %d (%s)",
                       (int)parent->pid, parent->comm);

        f->mark = worker_marker(r, f->mark_text, sizeof(f->mark_text));
        if (f->mark != MARK_NONE)
                ev_add(ev, GR_EV_WORKER, GR_LEAN_LEFTOVER, "%s", f->mark_text);

        char name[128] = "";
        f->cg = r->cgroup ? gr_cgroup_manager(r->cgroup, name, sizeof(name)) : GR_CG_NONE;
        gr_strlcpy(f->cg_name, name, sizeof(f->cg_name));
        if (f->cg == GR_CG_RUN && r->run_leaf != GR_LEAF_UNKNOWN) {
                /* the leaf's lock, which its run holds for as long as it lives: that run, not
                 * whatever has its number now */
                f->run_alive = r->run_leaf == GR_LEAF_HELD;
                ev_add(ev, GR_EV_CGROUP, GR_LEAN_NEUTRAL, "the lock of gpureap run %s's cgroup %s", name,
                       f->run_alive ? "held: that run lives" : "free: that run is gone");
        } else if (f->cg == GR_CG_RUN) {
                uint64_t sup = 0;
                const gr_process *sp = gr_parse_u64(name, &sup) == 0 && sup <= GR_PROC_PID_MAX ? dx_find(x, (pid_t)sup) : NULL;
                f->run_alive = sp && dx_alive(sp) && strcmp(sp->comm, "gpureap") == 0 && sp->start_time <= r->start_time;
                if (!sp && (x->s->procs_partial || x->hidden))
                        f->run_alive = true; /* not seen is not dead */
                /* the run's own number, as its cgroup's name has it: a live ancestor with it
                 * is the run (renamed, or in a PID namespace of its own) */
                if (!f->run_alive && sup > 0 && run_ancestor(x, r, (pid_t)sup))
                        f->run_alive = true;
                /* from a PID namespace of its own that number names nothing here; alive
                 * since before it under another name: a renamed gpureap, or not the run */
                if (!f->run_alive && (r->n_nspid > 1 || x->s->pidns == GR_PIDNS_OTHER ||
                                      (sp && dx_alive(sp) && sp->start_time <= r->start_time)))
                        f->run_unknown = true; /* from a namespace of gpureap's own: maybe another's number */
        }
        f->ns_init = r->n_nspid > 1 && r->nspid[r->n_nspid - 1] == 1;
        f->parent_alive = dx_alive(parent);
        f->runtime_alive = f->parent_alive && parent->pid != 1 &&
                           (strncmp(parent->comm, "containerd-shim", 15) == 0 || strcmp(parent->comm, "conmon") == 0);
        if (f->ns_init)
                ev_add(ev, GR_EV_REPARENTED, GR_LEAN_NEUTRAL, "the init of a PID namespace of its own");
        static const char *const cg_words[] = { "", "systemd service", "Slurm job", "Kubernetes pod",
                                                "container", "login session", "gpureap run" };
        /* a container, pod or job runs as long as its init or step does, whatever becomes of
         * one process in it: evidence of where it runs, not of whether it is used */
        if (f->cg != GR_CG_NONE)
                ev_add(ev, GR_EV_CGROUP, f->cg == GR_CG_SERVICE || f->cg == GR_CG_RUN ? GR_LEAN_LIVE : GR_LEAN_NEUTRAL,
                       "%s %s", cg_words[f->cg], name);

        f->group_self = r->pgrp == r->pid;
        f->session_self = r->session == r->pid;
        int gs = f->group_self || r->pgrp <= 0 ? -1 : dx_leader_state(x, r->pgrp);
        int ss = f->session_self || r->session <= 0 ? -1 : dx_leader_state(x, r->session);
        f->group_alive = gs == 1;
        f->group_gone = gs == 0;
        f->session_alive = ss == 1;
        if (f->group_self)
                ev_add(ev, GR_EV_GROUP_LEADER, GR_LEAN_NEUTRAL, "self");
        else if (gs < 0)
                ev_add(ev, GR_EV_GROUP_LEADER, GR_LEAN_NEUTRAL, "%d (%s)", (int)r->pgrp, comm_of(x, r->pgrp));
        else
                ev_add(ev, GR_EV_GROUP_LEADER, f->group_alive ? GR_LEAN_LIVE : GR_LEAN_LEFTOVER, "%d (%s) %s",
                       (int)r->pgrp, comm_of(x, r->pgrp), f->group_alive ? "alive" : "gone");
        const gr_process *leader = f->group_alive ? dx_find(x, r->pgrp) : NULL;
        f->leader_same_name = leader && strcmp(leader->comm, r->comm) == 0;
        if (f->session_self)
                ev_add(ev, GR_EV_SESSION_LEADER, GR_LEAN_NEUTRAL, "self");
        else
                ev_add(ev, GR_EV_SESSION_LEADER, GR_LEAN_NEUTRAL, "%d (%s)%s", (int)r->session,
                       comm_of(x, r->session), ss < 0 ? "" : f->session_alive ? " alive" : " gone");

        if (r->net && r->net->n_listen > 0) {
                char ports[64] = "";
                size_t o = 0;
                for (unsigned i = 0; i < r->net->n_listen && o < sizeof(ports); i++) {
                        bool inherited = !f->group_self && !f->group_alive &&
                                         shared_listeners(x, r->net->listen_inodes[i]) > 1;
                        if (!inherited && !f->own_port)
                                f->own_port = r->net->listen_ports[i];
                        o += (size_t)snprintf(ports + o, sizeof(ports) - o, "%s:%u%s", i ? " " : "",
                                              r->net->listen_ports[i], inherited ? " (inherited)" : "");
                }
                ev_add(ev, GR_EV_LISTENING, f->own_port ? GR_LEAN_LIVE : GR_LEAN_NEUTRAL, "%s", ports);
                if (r->net->n_serving > 0) {
                        f->serving = f->own_port != 0;
                        ev_add(ev, GR_EV_SERVING, f->serving ? GR_LEAN_LIVE : GR_LEAN_NEUTRAL,
                               "%u connection%s on its port%s", r->net->n_serving,
                               r->net->n_serving == 1 ? "" : "s", r->net->n_listen == 1 ? "" : "s");
                }
        }
        seen_evidence(x, r, ev, f);
        f->nohup = r->has_details && (r->sig_ignored & (1ULL << (SIGHUP - 1)));
        if (f->nohup)
                ev_add(ev, GR_EV_SIGNALS, GR_LEAN_LIVE, "ignores SIGHUP (as nohup sets it)");
        if (r->tty_nr != 0) {
                f->foreground = r->tpgid > 0 && r->tpgid == r->pgrp;
                unsigned major = ((unsigned)r->tty_nr >> 8) & 0xfff;
                unsigned minor = ((unsigned)r->tty_nr & 0xff) | (((unsigned)r->tty_nr >> 12) & 0xfff00);
                char tty[32];
                if (major >= 136 && major <= 143) /* Unix98 pseudo-terminals */
                        snprintf(tty, sizeof(tty), "pts/%u", (major - 136) * 256 + minor);
                else
                        snprintf(tty, sizeof(tty), "tty %u:%u", major, minor);
                ev_add(ev, GR_EV_TERMINAL, f->foreground ? GR_LEAN_LIVE : GR_LEAN_NEUTRAL, "%s%s", tty,
                       f->foreground ? ", in the foreground" : "");
        }
}

/* Step 4 of docs/verdicts.md: a process whose parent is init-like or gone */
static void judge_root(const struct dx *x, const gr_process *r, gr_evidence_list *ev, struct judged *j)
{
        struct root_facts f = { 0 };
        root_evidence(x, r, ev, &f);
        if (f.mark == MARK_CMDLINE) {
                judge(j, GR_JUDGE_LEFTOVER, GR_SURE, "a worker (%s) whose launcher is gone", f.mark_text);
        } else if (f.mark == MARK_ENV && f.own_port && !f.session_self) {
                /* torchrun starts each worker in a session of its own; a process that inherited
                 * the environment from a worker (a server it started) does not lead one */
                judge(j, GR_JUDGE_UNSURE, GR_UNSURE, "carries a worker's environment (%s) but listens on :%u",
                      f.mark_text, f.own_port);
        } else if (f.mark == MARK_ENV && !f.session_self && (f.session_alive || (f.group_alive && !f.group_self))) {
                /* it inherited a worker's environment, and the session (or group) it runs in is
                 * led by a live process: a helper that a running worker detached */
                judge(j, GR_JUDGE_LIVE, GR_LIKELY, "carries a worker's environment (%s) and its %s leader %d (%s) is alive",
                      f.mark_text, f.session_alive ? "session's" : "process group's",
                      (int)(f.session_alive ? r->session : r->pgrp), comm_of(x, f.session_alive ? r->session : r->pgrp));
        } else if (f.mark == MARK_ENV) {
                judge(j, GR_JUDGE_LEFTOVER, GR_SURE, "a worker (%s) whose launcher is gone", f.mark_text);
        } else if (f.cg == GR_CG_RUN && f.run_unknown) {
                judge(j, GR_JUDGE_UNSURE, GR_UNSURE, "in the cgroup of 'gpureap run' (PID %s in its PID namespace), which is not among its live ancestors",
                      f.cg_name);
        } else if (f.cg == GR_CG_RUN && !f.run_alive) {
                judge(j, GR_JUDGE_LEFTOVER, GR_SURE, "in the cgroup of 'gpureap run' (PID %s), which was killed", f.cg_name);
        } else if (f.cg == GR_CG_SERVICE || f.cg == GR_CG_RUN) {
                /* a service's cgroup is emptied when the service stops: it is the service's */
                judge(j, GR_JUDGE_LIVE, GR_LIKELY, "part of %s", f.cg == GR_CG_SERVICE ? "a running systemd service"
                                                                                      : "a 'gpureap run' tree");
        } else if (f.runtime_alive) {
                judge(j, GR_JUDGE_LIVE, GR_LIKELY, "a container's process, started by its runtime %d (%s), which is alive",
                      (int)r->ppid, comm_of(x, r->ppid));
        } else if (f.ns_init) {
                judge(j, GR_JUDGE_UNSURE, GR_UNSURE,
                      "the init of a PID namespace (a container) whose runtime is gone: its own world, not a worker");
        } else if (f.launcher_killed && f.own_port) {
                /* the same executable says little (any python starts another python): a server
                 * it started may be meant to outlive it, as it is without serve's memory */
                judge(j, GR_JUDGE_UNSURE, GR_UNSURE, "its launcher %s was killed by SIG%s, but it listens on :%u%s: a server",
                      f.launcher_text, sigabbrev_np(f.launcher_killed) ? sigabbrev_np(f.launcher_killed) : "?",
                      f.own_port, f.serving ? " and serves connections" : "");
        } else if (f.launcher_killed) {
                /* serve saw the program that started it (the same executable) killed: by
                 * SIGKILL it could not end what it started; by another signal it could have,
                 * and did not */
                judge(j, GR_JUDGE_LEFTOVER, f.launcher_killed == SIGKILL ? GR_SURE : GR_LIKELY,
                      "its launcher %s was killed by SIG%s", f.launcher_text,
                      sigabbrev_np(f.launcher_killed) ? sigabbrev_np(f.launcher_killed) : "?");
        } else if (f.own_port) {
                judge(j, GR_JUDGE_LIVE, GR_LIKELY, "listens on :%u%s: a server", f.own_port,
                      f.serving ? " and serves connections" : "");
        } else if (f.foreground) {
                judge(j, GR_JUDGE_LIVE, GR_LIKELY, "runs in the foreground of a terminal");
        } else if (f.session_self) {
                judge(j, GR_JUDGE_UNSURE, GR_UNSURE, "%s",
                      f.parent_alive ? "runs in a session of its own under an init or a subreaper: a daemon, or a leftover started with setsid"
                                     : "runs in a session of its own and its parent is gone: a daemon, or a leftover started with setsid");
        } else if (f.group_self) {
                judge(j, GR_JUDGE_UNSURE, GR_UNSURE, "%s",
                      f.session_alive ? "leads its own process group and its parent is gone (a subshell's '&')"
                                      : "a job of a shell session that ended (nohup, disown): started by hand, or a leftover");
        } else if (f.group_alive && f.leader_same_name) {
                judge(j, GR_JUDGE_LIVE, GR_LIKELY,
                      "its process group's leader %d (%s) is alive and of its kind: a double-forked worker of a running launcher",
                      (int)r->pgrp, comm_of(x, r->pgrp));
        } else if (f.group_alive) {
                judge(j, GR_JUDGE_UNSURE, GR_UNSURE,
                      "its parent is gone but its process group's leader %d (%s) is alive: a double-forked worker, or a leftover of a launcher that ran under it",
                      (int)r->pgrp, comm_of(x, r->pgrp));
        } else if (f.group_gone && f.nohup) {
                judge(j, GR_JUDGE_UNSURE, GR_UNSURE,
                      "its launcher, the leader of process group %d, is gone, but it ignores SIGHUP: started to outlive its shell?",
                      (int)r->pgrp);
        } else if (f.group_gone) {
                judge(j, GR_JUDGE_LEFTOVER, GR_LIKELY, "its launcher, the leader of process group %d, is gone",
                      (int)r->pgrp);
        } else {
                judge(j, GR_JUDGE_UNSURE, GR_UNSURE, "its launcher is not visible from here");
        }
        if (j->judgement == GR_JUDGE_UNSURE && f.launcher_vanished)
                judge(j, GR_JUDGE_LEFTOVER, GR_LIKELY, "its launcher %s %s (serve saw it start this process)",
                      f.launcher_text, x->s && r->seen && r->seen->end == GR_END_EXIT ? "failed" : "is gone");
}

/* p's run, as it wrote its number and start time (GPUREAP_RUN_REF): is that process alive? */
static bool ref_run_alive(const struct dx *x, const gr_process *p)
{
        const gr_process *r = dx_find(x, p->run_pid);
        return dx_alive(r) && r->start_time == p->env.run_start;
}

/* The oldest process of p's line that carries p's marker (the same GPUREAP_RUN_PID): p itself
 * when its parent does not. A launcher's
 * children inherit the marker, so the top is where the run's tree began, or where the marker
 * was carried in from outside it */
static const gr_process *marked_top(const struct dx *x, const gr_process *p)
{
        const gr_process *a = p;
        for (int depth = 0; depth < 64 && a->ppid > 1; depth++) {
                const gr_process *up = dx_find(x, a->ppid);
                if (!up || up == a || !up->env_read || up->run_pid != p->run_pid)
                        break;
                a = up;
        }
        return a;
}

/* The marked line begins below a live process that is no init or subreaper by what it is
 * (slurmstepd, sshd, a runtime's exec): the marker was carried there (sbatch and srun pass the
 * environment on, so does docker exec -e), not left by a run killed over it, whose members
 * are handed to an init. That its run is gone says nothing of whether this job still runs:
 * a batch job submitted from a supervised shell outlives the shell's run by design */
static bool marker_carried(const struct dx *x, const gr_process *top)
{
        const gr_process *tp = dx_find(x, top->ppid);
        return dx_alive(tp) && !init_like(x, top, tp);
}

/* Step 1: started by 'gpureap run' (GPUREAP_RUN_PID, the number the run had in its own PID
 * namespace); the kernel does not keep that PID reserved. The run is alive when a live
 * ancestor of the process has that number (in its own namespace: a run that is a container's
 * PID 1 exports 1), whatever the run's binary is called (a symlink, a renamed copy): members
 * stay below it, as it is their subreaper. Otherwise, in gpureap's own namespace, a run that
 * wrote its start time too (GPUREAP_RUN_REF) is alive exactly when the process of that PID
 * started then: a number alone names whatever the kernel handed it to since. Without one (an
 * older gpureap's run, or a run in a time namespace of its own), the process of that PID must
 * be a gpureap that started before it and before every parent of its line that carries the
 * same marker (one that started in between: unsure). A run that is gone makes a sure leftover
 * only where its members were handed to an init (marker_carried); from a PID namespace of its
 * own (the holder's, or gpureap's), that PID may name nothing here: unsure, never a sure
 * leftover. */
static bool judge_supervisor(const struct dx *x, const gr_process *p, gr_evidence_list *ev, struct judged *j)
{
        if (p->run_pid <= 0)
                return false;
        const gr_process *a = run_ancestor(x, p, p->run_pid);
        if (a) {
                ev_add(ev, GR_EV_RUN_SUPERVISOR, GR_LEAN_LIVE, "gpureap run %d alive (PID %d here)", (int)p->run_pid,
                       (int)a->pid);
                judge(j, GR_JUDGE_LIVE, GR_SURE, "supervised by 'gpureap run' (PID %d)", (int)a->pid);
                return true;
        }
        if (p->n_nspid > 1) {
                ev_add(ev, GR_EV_RUN_SUPERVISOR, GR_LEAN_NEUTRAL, "gpureap run %d of another PID namespace: not an ancestor",
                       (int)p->run_pid);
                judge(j, GR_JUDGE_UNSURE, GR_UNSURE,
                      "started by 'gpureap run' (PID %d in its PID namespace), which is not among its live ancestors",
                      (int)p->run_pid);
                return true;
        }
        const gr_process *sup = dx_find(x, p->run_pid);
        if (!sup && (x->s->procs_partial || x->hidden))
                return false; /* not seen is not dead (a /proc with hidepid hides others' runs) */
        const gr_process *top = marked_top(x, p);
        bool alive;
        if (p->env.run_start) {
                /* the run's own PID and start time: that process, whatever it is called now */
                alive = ref_run_alive(x, p);
                if (!alive && dx_alive(sup))
                        ev_add(ev, GR_EV_RUN_SUPERVISOR, GR_LEAN_NEUTRAL,
                               "PID %d is another process now (%s, started %s the run)", (int)p->run_pid, sup->comm,
                               sup->start_time > p->env.run_start ? "after" : "before");
        } else {
                uint64_t since = top->start_time;
                if (dx_alive(sup) && strcmp(sup->comm, "gpureap") != 0 && sup->start_time <= since) {
                        /* alive since before it, not named gpureap: a run through a renamed
                         * binary that started it through another process (srun, docker exec),
                         * or a copied marker */
                        ev_add(ev, GR_EV_RUN_SUPERVISOR, GR_LEAN_NEUTRAL, "gpureap run %d: PID %d is %s, alive since before it",
                               (int)p->run_pid, (int)p->run_pid, sup->comm);
                        judge(j, GR_JUDGE_UNSURE, GR_UNSURE,
                              "started by 'gpureap run' (PID %d), and PID %d is alive but named '%s': a renamed gpureap, or another process",
                              (int)p->run_pid, (int)p->run_pid, sup->comm);
                        return true;
                }
                /* a live gpureap of that number that started after the holder's marked line
                 * but before the holder: a later run that was handed the number (the old one
                 * killed, its orphaned launcher forking on), or that later run's own job
                 * started through an older process of that line (a forwarder left from the old
                 * run): the tree cannot tell, so not sure */
                if (dx_alive(sup) && strcmp(sup->comm, "gpureap") == 0 && sup->start_time > since &&
                    sup->start_time <= p->start_time) {
                        ev_add(ev, GR_EV_RUN_SUPERVISOR, GR_LEAN_NEUTRAL,
                               "gpureap run %d: a later run with that number (its marked line is older)", (int)p->run_pid);
                        judge(j, GR_JUDGE_UNSURE, GR_UNSURE,
                              "started by 'gpureap run' (PID %d), but PID %d is a run that started after the older process that "
                              "passed the marker on: that run's job, or the leftover of the run killed before it",
                              (int)p->run_pid, (int)p->run_pid);
                        return true;
                }
                alive = dx_alive(sup) && strcmp(sup->comm, "gpureap") == 0 && sup->start_time <= since;
        }
        if (!alive && x->s->pidns == GR_PIDNS_OTHER) {
                /* seen from a PID namespace of gpureap's own (a job's, a container's), N may be
                 * the host's number of a live run above it (the adversary's third round: a
                 * reap inside 'gpureap run -- unshare -pf ...' planned to kill the run's live
                 * job): not found is not gone */
                ev_add(ev, GR_EV_RUN_SUPERVISOR, GR_LEAN_NEUTRAL,
                       "gpureap run %d not found from this PID namespace: its number may be another namespace's",
                       (int)p->run_pid);
                judge(j, GR_JUDGE_UNSURE, GR_UNSURE,
                      "started by 'gpureap run' (PID %d), which is not among its live ancestors; seen from a PID "
                      "namespace of gpureap's own, where that number may be another namespace's",
                      (int)p->run_pid);
                return true;
        }
        char unit[128] = "";
        if (!alive && p->cgroup && gr_cgroup_manager(p->cgroup, unit, sizeof(unit)) == GR_CG_SERVICE) {
                /* in a systemd service's cgroup (not the run's own leaf, which would be the
                 * innermost): a service that systemd started with the run's environment
                 * imported into its manager ('systemctl --user import-environment', which a
                 * desktop session's startup runs), or the remains of a service whose ExecStart
                 * was the run, which systemd empties as it stops. Neither is the run's left
                 * work: the marker decides nothing, the service's cgroup does (step 4) */
                ev_add(ev, GR_EV_RUN_SUPERVISOR, GR_LEAN_NEUTRAL,
                       "gpureap run %d gone, but it runs in systemd service %s: the marker was imported there, not left",
                       (int)p->run_pid, unit);
                return false;
        }
        if (!alive && marker_carried(x, top)) {
                ev_add(ev, GR_EV_RUN_SUPERVISOR, GR_LEAN_NEUTRAL,
                       "gpureap run %d gone, but its marker came through PID %d (%s), which is alive: carried, not left",
                       (int)p->run_pid, (int)top->ppid, comm_of(x, top->ppid));
                return false; /* the rest of its lineage judges it */
        }
        ev_add(ev, GR_EV_RUN_SUPERVISOR, alive ? GR_LEAN_LIVE : GR_LEAN_LEFTOVER, "gpureap run %d %s",
               (int)p->run_pid, alive ? "alive" : "gone");
        if (alive)
                judge(j, GR_JUDGE_LIVE, GR_SURE, "supervised by 'gpureap run' (PID %d)", (int)p->run_pid);
        else
                judge(j, GR_JUDGE_LEFTOVER, GR_SURE, "its supervisor 'gpureap run' (PID %d) was killed before it could end it",
                      (int)p->run_pid);
        return true;
}

static void state_evidence(const gr_process *p, gr_evidence_list *ev)
{
        if (p->state == 'D')
                ev_add(ev, GR_EV_STATE, GR_LEAN_NEUTRAL, "D (waiting in the kernel or the driver)");
        else if (p->state == 'T' || p->state == 't')
                ev_add(ev, GR_EV_STATE, GR_LEAN_NEUTRAL, "T (stopped)");
}

/* The job it belongs to, for grouping and display: its supervisor, its torchelastic run, or
 * its own process group (the launcher that led it); root only names the agent of a run */
static void set_job(const struct dx *x, gr_holder_verdict *v, const gr_process *root)
{
        const gr_process *p = v->process;
        memset(&v->job, 0, sizeof(v->job));
        if (p->run_pid > 0) {
                v->job.kind = GR_JOB_RUN;
                v->job.pid = p->run_pid;
        } else if (p->env_read && p->env.torchelastic_run_id[0]) {
                v->job.kind = GR_JOB_TORCHELASTIC;
                gr_strlcpy(v->job.id, p->env.torchelastic_run_id, sizeof(v->job.id));
        } else if (p->seen && p->seen->launcher > 0 && p->pgrp == p->pid) {
                /* it leads its own group: the launcher serve saw is what ties it to others */
                v->job.kind = GR_JOB_LAUNCHER;
                v->job.pid = p->seen->launcher;
        } else if (p->pgrp > 0) {
                v->job.kind = GR_JOB_GROUP;
                v->job.pid = p->pgrp;
        } else {
                v->job.kind = GR_JOB_PROCESS;
                v->job.pid = p->pid;
        }
        v->launcher = v->job.kind == GR_JOB_TORCHELASTIC ? 0 : v->job.pid;
        v->launcher_alive = v->launcher > 0 && v->launcher != p->pid && dx_leader_alive(x, v->launcher);
        if (v->job.kind == GR_JOB_RUN && p->env.run_start && p->n_nspid <= 1)
                v->launcher_alive = ref_run_alive(x, p); /* that process, not what has its number now */
        if (v->job.kind == GR_JOB_LAUNCHER) {
                const gr_process *l = dx_find(x, v->launcher);
                v->launcher_alive = p->seen->end == GR_END_ALIVE && dx_alive(l) && l->start_time == p->seen->launcher_start;
        }
        if (v->job.kind == GR_JOB_TORCHELASTIC) {
                /* the agent is the parent of the worker that carries the run's environment */
                const gr_process *w = root->env_read && root->env.torchelastic_run_id[0] ? root : p;
                v->launcher = w->ppid > 1 ? w->ppid : 0;
                v->launcher_alive = v->launcher > 0 && dx_alive(dx_find(x, w->ppid));
        }
}

/* The kubelet's List answered, at least 2 s after the holder started (the boot time is whole
 * seconds), and no pod it lists was assigned the GPUs that the processes of the holder's pod
 * hold: its pod is gone (deleted, its leftover outlived it), or it holds a GPU it was not
 * assigned. The two cannot be told apart without the pod's name (List carries no UID, and Get
 * asks by name): evidence, and for a holder its lineage left unsure, a likely leftover. Sure
 * only where the container runtime named the pod and the kubelet's Get knows no such pod
 * (gr_snapshot_confirm_gone), whatever the devices said (a time-sliced or MIG pod too); never
 * against a live verdict */
static void pod_evidence(const struct dx *x, const gr_process *p, gr_evidence_list *ev, struct judged *j)
{
        const gr_snapshot *s = x->s;
        const gr_pod *pod = p->pod;
        if (!pod || pod->naming == GR_POD_NAMED || s->kubelet.state != GR_KUBELET_OK || !s->procs || !s->procs->boot_time ||
            s->procs->clock_ticks <= 0)
                return;
        bool unassigned = pod->naming == GR_POD_UNASSIGNED;
        if (!unassigned && pod->gone != GR_POD_GONE_CONFIRMED)
                return;
        uint64_t started_ms = s->procs->boot_time * 1000 + p->start_time * 1000 / (uint64_t)s->procs->clock_ticks;
        if (started_ms + 2000 > s->kubelet.asked_at_ms)
                return; /* the answer may predate its pod */
        if (s->kubelet.n_pods == 0)
                return; /* a kubelet that lists no pod at all may be starting: no evidence */
        if (unassigned)
                ev_add(ev, GR_EV_KUBELET, GR_LEAN_LEFTOVER,
                       "pod %s: none of the %u pods the kubelet lists was assigned the GPUs it holds", pod->uid,
                       s->kubelet.n_pods);
        if (pod->gone == GR_POD_GONE_CONFIRMED) {
                /* the runtime's labels name its pod for the UID of its cgroup, and the kubelet
                 * says it knows no pod of that name: the pod is gone, its process outlived it.
                 * Sure, but never against a live verdict (a launcher alive beside it) */
                ev_add(ev, GR_EV_KUBELET, GR_LEAN_LEFTOVER,
                       "pod %s/%s (UID %s) is gone: the kubelet's Get answers that it knows no such pod", pod->gone_ns,
                       pod->gone_name, pod->uid);
                if (j->judgement == GR_JUDGE_UNSURE || (j->judgement == GR_JUDGE_LEFTOVER && j->confidence != GR_SURE))
                        judge(j, GR_JUDGE_LEFTOVER, GR_SURE, "its pod %s/%s is gone (the kubelet knows no such pod): it outlived it",
                              pod->gone_ns, pod->gone_name);
                return;
        }
        if (j->judgement == GR_JUDGE_UNSURE)
                judge(j, GR_JUDGE_LEFTOVER, GR_LIKELY,
                      "its pod %s is not among the pods the kubelet lists (none was assigned the GPUs it holds)", pod->uid);
}

static void judge_holder(const struct dx *x, gr_holder_verdict *v)
{
        const gr_process *p = v->process;
        gr_evidence_list *ev = &v->evidence;
        struct judged j = { GR_JUDGE_UNSURE, GR_UNSURE, "" };
        ev->n = 0;
        v->root = p->pid;
        set_job(x, v, p);
        if (v->role == GR_ROLE_MONITOR) {
                judge(&j, GR_JUDGE_LIVE, GR_SURE, "uses only the driver's management interface (NVML): not a leftover");
                goto done;
        }
        if (judge_supervisor(x, p, ev, &j))
                goto done;
        if (v->ghost) {
                const gr_gpu_proc *o = NULL;
                for (unsigned i = 0; !o && i < x->s->gpu->n_gpus; i++)
                        o = dx_listed(x, i, v->ghost);
                uint64_t used = o ? o->used_bytes : GR_UNKNOWN_U64;
                /* an AMD ghost: the VRAM KFD still counts for the dead PID */
                for (size_t i = 0; !o && x->s->drm && i < x->s->drm->n_kfd; i++)
                        if (x->s->drm->kfd[i].pid == v->ghost)
                                used = (used == GR_UNKNOWN_U64 ? 0 : used) + x->s->drm->kfd[i].vram;
                char mem[32];
                gr_format_bytes(used, mem, sizeof(mem));
                ev_add(ev, GR_EV_GHOST, GR_LEAN_LEFTOVER, "keeps the memory of PID %d (%s), %s", (int)v->ghost,
                       dx_find(x, v->ghost) ? "a zombie" : "gone", mem);
                judge(&j, GR_JUDGE_LEFTOVER, v->ghost_confidence,
                      "it keeps the GPU memory of PID %d, which is gone, through files it inherited", (int)v->ghost);
                goto done;
        }
        /* walk up through live parents that are not inits: the root of its chain */
        const gr_process *root = p;
        bool above_unseen = false; /* not seeing a parent is not seeing it die */
        for (int depth = 0; depth < 64; depth++) {
                const gr_process *parent = dx_find(x, root->ppid);
                if (!parent && root->ppid > 1 && (x->hidden || x->s->procs_partial)) {
                        above_unseen = true;
                        break;
                }
                if (!dx_alive(parent) || init_like(x, root, parent))
                        break;
                root = parent;
        }
        v->root = root->pid;
        set_job(x, v, root);
        if (root == p && above_unseen) {
                ev_add(ev, GR_EV_PARENT, GR_LEAN_NEUTRAL, "%d not visible from here", (int)p->ppid);
                judge(&j, GR_JUDGE_UNSURE, GR_UNSURE, "its parent %d is not visible from here", (int)p->ppid);
                goto done;
        }
        if (root == p) {
                judge_root(x, p, ev, &j);
                goto done;
        }
        const gr_process *parent = dx_find(x, p->ppid);
        ev_add(ev, GR_EV_PARENT, GR_LEAN_LIVE, "%d (%s) alive", (int)p->ppid, parent ? parent->comm : "?");
        gr_evidence_list rev = { .n = 0 };
        struct judged rj = { GR_JUDGE_UNSURE, GR_UNSURE, "" };
        if (!above_unseen)
                judge_root(x, root, &rev, &rj);
        /* A live parent makes it part of a running tree unless the tree's root is surely a
         * leftover (a worker marker, a killed supervisor), or is itself a CUDA holder (or an
         * AMD or Intel GPU's) that is likely one (its data loaders, its compile workers). Lineage alone says little about
         * an ancestor that holds no GPU and runs live children: a script started in the
         * background of a shell that has since exited looks the same. */
        bool root_holds = (root->hold && gr_holding_has_cuda_footprint(root->hold)) || (root->drm && root->drm->n > 0);
        if (rj.judgement == GR_JUDGE_LEFTOVER && (rj.confidence == GR_SURE || root_holds)) {
                ev_add(ev, GR_EV_ANCESTOR, GR_LEAN_LEFTOVER, "%d (%s) is a leftover", (int)root->pid, root->comm);
                for (unsigned i = 0; i < rev.n && ev->n < GR_EVIDENCE_MAX; i++) {
                        gr_evidence *e = &ev->items[ev->n++];
                        *e = rev.items[i];
                        char tmp[GR_EVIDENCE_TEXT];
                        snprintf(tmp, sizeof(tmp), "%d: %s", (int)root->pid, rev.items[i].value);
                        gr_strlcpy(e->value, tmp, sizeof(e->value));
                }
                judge(&j, GR_JUDGE_LEFTOVER, rj.confidence, "its ancestor %d (%s) is a leftover: %s",
                      (int)root->pid, root->comm, rj.reason);
        } else if (rj.judgement == GR_JUDGE_UNSURE &&
                   (root_holds || (root->n_nspid > 1 && root->nspid[root->n_nspid - 1] == 1 &&
                                   gr_proc_comm_is_init(root->comm)))) {
                /* the root holds the GPU and cannot be judged, or it is the init of a container
                 * whose runtime is gone (the command an init shim started lives as long as the
                 * container does): nor can what it started */
                ev_add(ev, GR_EV_ANCESTOR, GR_LEAN_NEUTRAL, "%d (%s) cannot be judged", (int)root->pid, root->comm);
                judge(&j, GR_JUDGE_UNSURE, GR_UNSURE, "its ancestor %d (%s) cannot be judged: %s", (int)root->pid,
                      root->comm, rj.reason);
        } else if (parent && (parent->pid == 1 || (parent->n_nspid > 1 && parent->nspid[parent->n_nspid - 1] == 1))) {
                /* a container's PID 1 that is not a known init: its launcher, or a program that
                 * was handed orphans without meaning to take them */
                judge(&j, GR_JUDGE_LIVE, GR_LIKELY, "its parent %d (%s), the PID 1 of its container, is alive",
                      (int)p->ppid, parent->comm);
        } else {
                judge(&j, GR_JUDGE_LIVE, GR_SURE, "its parent %d (%s) is alive", (int)p->ppid,
                      parent ? parent->comm : "?");
        }
done:
        if (v->role != GR_ROLE_MONITOR)
                pod_evidence(x, p, ev, &j);
        state_evidence(p, ev);
        if (j.judgement == GR_JUDGE_LEFTOVER && x->hidden && j.confidence == GR_SURE && !v->ghost &&
            p->run_pid <= 0)
                j.confidence = GR_LIKELY; /* a launcher may be hidden from this view */
        if (x->d->view[0] && ev->n < GR_EVIDENCE_MAX)
                ev_add(ev, GR_EV_VIEW, GR_LEAN_NEUTRAL, "%s", x->d->view);
        v->judgement = j.judgement;
        v->confidence = j.confidence;
        gr_strlcpy(v->reason, j.reason, sizeof(v->reason));
}

static int cmp_listen(const void *a, const void *b)
{
        const struct listen_ix *x = a, *y = b;
        return (x->inode > y->inode) - (x->inode < y->inode);
}

int dx_index_listens(struct dx *x)
{
        const gr_proc_table *t = x->s->procs;
        size_t n = 0;
        for (size_t i = 0; t && i < t->n; i++)
                n += t->procs[i].net ? t->procs[i].net->n_listen : 0;
        x->listens = calloc(n ? n : 1, sizeof(*x->listens));
        if (!x->listens)
                return -ENOMEM;
        for (size_t i = 0; t && i < t->n; i++)
                for (unsigned k = 0; t->procs[i].net && k < t->procs[i].net->n_listen; k++)
                        x->listens[x->n_listens++] = (struct listen_ix){ t->procs[i].net->listen_inodes[k], t->procs[i].pid };
        if (x->n_listens > 0)
                qsort(x->listens, x->n_listens, sizeof(*x->listens), cmp_listen);
        return 0;
}

void dx_judge_holder(const struct dx *x, gr_holder_verdict *v)
{
        judge_holder(x, v);
}

int dx_judge_lineage(struct dx *x)
{
        for (size_t i = 0; i < x->d->n_holders; i++)
                judge_holder(x, &x->d->holders[i]);
        return 0;
}
