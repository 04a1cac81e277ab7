/*
 * The distributed mode's calls in a build without MPI (configure --without-mpi, or MPI
 * not found): convoy_dist_start says so; the rest behave as on one rank.
 */
#include "config.h"

#include "src/core.h"

int convoy_build_has_mpi(void)
{
    return 0;
}

convoy_status_t convoy_dist_start(convoy_context_t *ctx, const void *comm)
{
    (void)comm;
    return convoy__error(ctx, CONVOY_ERR_UNAVAILABLE,
                         "convoy_dist_start: this build of convoy has no MPI (configure "
                         "--with-mpi; doc/dist.md)");
}

int convoy_dist_rank(const convoy_context_t *ctx)
{
    (void)ctx;
    return 0;
}

int convoy_dist_size(const convoy_context_t *ctx)
{
    (void)ctx;
    return 1;
}

convoy_status_t convoy_data_set_owner(convoy_data_t *data, int rank)
{
    if (data == NULL)
        return convoy__error(NULL, CONVOY_ERR_INVALID, "convoy_data_set_owner: data is NULL");
    return convoy__error(data->ctx, CONVOY_ERR_STATE,
                         "convoy_data_set_owner(datum %llu, rank %d): the distributed mode is off "
                         "(this build has no MPI)",
                         (unsigned long long)data->id, rank);
}

int convoy_data_owner(const convoy_data_t *data)
{
    (void)data;
    return 0;
}

convoy_status_t convoy_dist_wait(convoy_context_t *ctx)
{
    return convoy_wait(ctx);
}
