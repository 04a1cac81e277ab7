/*
 * What the process knows about itself for file names and log lines: its host name and
 * its rank as a parallel launcher (mpirun, srun, PMIx) set it. Internal to convoy.
 */
#ifndef CONVOY_PROC_H
#define CONVOY_PROC_H

#include <stddef.h>

#include "convoy.h"

/* The rank the launcher gave this process: the first of OMPI_COMM_WORLD_RANK, PMI_RANK,
 * PMIX_RANK and SLURM_PROCID that holds a non-negative decimal number; -1 when none
 * does. These are the launchers' variables, not convoy parameters, hence read here and
 * not through the parameter tables. Thread-safe as getenv is. */
int convoy__proc_rank(void);

/* The host name up to its first dot ("node17"), "unknown" when gethostname fails. */
void convoy__proc_host(char *buf, size_t len);

/* Expand pattern into *path_p (malloc'd, the caller frees): %p the process id, %h the
 * host name, %r the launcher rank (0 when there is none), %% a '%'. Any other '%'
 * sequence is CONVOY_ERR_INVALID with a message naming it; CONVOY_ERR_NOMEM without
 * memory. *path_p is set only on success. */
convoy_status_t convoy__proc_expand_path(const char *pattern, char **path_p);

#endif /* CONVOY_PROC_H */
