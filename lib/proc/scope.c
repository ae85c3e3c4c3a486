/* Scopes: the processes of one Slurm job, cgroup, container or Kubernetes pod, as the cgroup
 * path lays them out, and for a Slurm job also its escapees (a setsid'd leftover that left the
 * job's cgroup still carries SLURM_JOB_ID in its environment). Pure: a function of what the scan
 * read. */
#include <errno.h>
#include <string.h>

#include "gpureap/basic.h"
#include "gpureap/proc.h"
#include "gpureap/snapshot.h"
#include "basic/names.h"

GR_NAME_TABLE(gr_scope_kind_name, gr_scope_kind, GR_SCOPE_POD, "none",
              [GR_SCOPE_NONE] = "none", [GR_SCOPE_SLURM_JOB] = "slurm_job", [GR_SCOPE_CGROUP] = "cgroup", [GR_SCOPE_CONTAINER] = "container", [GR_SCOPE_POD] = "pod")

int gr_scope_parse(gr_scope_kind kind, const char *value, gr_scope *ret)
{
        gr_scope sc = { .kind = kind };
        size_t n = strlen(value);
        if (n == 0 || n >= sizeof(sc.id))
                return -EINVAL;
        switch (kind) {
        case GR_SCOPE_SLURM_JOB:
                for (size_t i = 0; i < n; i++)
                        if (value[i] < '0' || value[i] > '9')
                                return -EINVAL;
                break;
        case GR_SCOPE_CGROUP:
                if (value[0] != '/')
                        return -EINVAL;
                while (n > 1 && value[n - 1] == '/')
                        n--; /* "/a/b/" and "/a/b" name the same cgroup */
                break;
        case GR_SCOPE_CONTAINER:
                if (n < 12 || n > 64)
                        return -EINVAL; /* a shorter prefix names too many containers */
                for (size_t i = 0; i < n; i++)
                        if (!((value[i] >= '0' && value[i] <= '9') || (value[i] >= 'a' && value[i] <= 'f')))
                                return -EINVAL;
                break;
        case GR_SCOPE_POD:
                for (size_t i = 0; i < n; i++)
                        if (!((value[i] >= '0' && value[i] <= '9') || (value[i] >= 'a' && value[i] <= 'f') ||
                              value[i] == '-' || value[i] == '_'))
                                return -EINVAL;
                break;
        case GR_SCOPE_NONE:
                return -EINVAL;
        }
        memcpy(sc.id, value, n);
        sc.id[n] = '\0';
        if (kind == GR_SCOPE_POD)
                for (char *c = sc.id; *c; c++)
                        if (*c == '_')
                                *c = '-'; /* the systemd cgroup driver writes '-' as '_' */
        *ret = sc;
        return 0;
}

gr_scope_match gr_scope_contains(const gr_scope *sc, const gr_process *p)
{
        if (!sc || sc->kind == GR_SCOPE_NONE)
                return GR_SCOPE_IN;
        char name[128];
        const char *cg = p->cgroup;
        switch (sc->kind) {
        case GR_SCOPE_SLURM_JOB:
                if (cg && gr_cgroup_manager(cg, name, sizeof(name)) == GR_CG_SLURM && strcmp(name, sc->id) == 0)
                        return GR_SCOPE_IN;
                if (cg && gr_cgroup_slurm_job(cg, name, sizeof(name)) == 0 && strcmp(name, sc->id) == 0)
                        return GR_SCOPE_IN;
                /* out of the job's cgroup, its environment kept: an escapee, unless its cgroup
                 * says it is another job's or a service's (an environment inherited from an old
                 * job, or set by hand, says less than where the process runs) */
                if (p->env_read && strcmp(p->env.slurm_job_id, sc->id) == 0) {
                        if (cg && gr_cgroup_slurm_job(cg, name, sizeof(name)) == 0)
                                return GR_SCOPE_OUT;
                        gr_cgroup_kind k = cg ? gr_cgroup_manager(cg, name, sizeof(name)) : GR_CG_NONE;
                        /* slurmd's own service is where a job's processes run without job
                         * cgroups (proctrack/linuxproc): escapees stay there */
                        bool slurmd = k == GR_CG_SERVICE && (strncmp(name, "slurmd", 6) == 0 || strncmp(name, "slurmstepd", 10) == 0);
                        if (!slurmd && (k == GR_CG_SLURM || k == GR_CG_SERVICE || k == GR_CG_POD ||
                                        k == GR_CG_CONTAINER || k == GR_CG_RUN))
                                return GR_SCOPE_OUT;
                        return GR_SCOPE_ESCAPED;
                }
                return GR_SCOPE_OUT;
        case GR_SCOPE_CGROUP: {
                size_t n = strlen(sc->id);
                if (cg && strncmp(cg, sc->id, n) == 0 && (cg[n] == '\0' || cg[n] == '/' || n == 1))
                        return GR_SCOPE_IN;
                return GR_SCOPE_OUT;
        }
        case GR_SCOPE_CONTAINER:
                /* every digit given must match (12 at least): two containers that share the
                 * first 12 are told apart by the id given whole */
                if (cg && gr_cgroup_container_full_id(cg, name, sizeof(name)) == 0 &&
                    strncmp(name, sc->id, strlen(sc->id)) == 0)
                        return GR_SCOPE_IN;
                return GR_SCOPE_OUT;
        case GR_SCOPE_POD:
                if (cg && gr_cgroup_manager(cg, name, sizeof(name)) == GR_CG_POD && strcmp(name, sc->id) == 0)
                        return GR_SCOPE_IN;
                return GR_SCOPE_OUT;
        case GR_SCOPE_NONE:
                break;
        }
        return GR_SCOPE_IN;
}

uint64_t gr_scope_gpus(const gr_snapshot *s, const gr_scope *sc)
{
        uint64_t m = 0;
        for (size_t k = 0; s->procs && k < s->procs->n; k++) {
                const gr_process *p = &s->procs->procs[k];
                if (!p->hold || gr_scope_contains(sc, p) == GR_SCOPE_OUT)
                        continue;
                for (unsigned i = 0; i < s->gpu->n_gpus; i++)
                        if (s->gpu->gpus[i].index < 64 && gr_process_fds_on_minor(p, s->gpu->gpus[i].minor) > 0)
                                m |= 1ULL << s->gpu->gpus[i].index;
        }
        return m;
}
