/*
 * CHECK(cond, fmt, ...) for the MPI test programs: on failure, print the rank, the place
 * and the message, and abort every rank (MPI_Abort), so that no rank waits forever for
 * one that stopped. The program defines `static int g_rank`.
 */
#ifndef CONVOY_TESTS_DIST_CHECK_H
#define CONVOY_TESTS_DIST_CHECK_H

#include <mpi.h>
#include <stdio.h>

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "rank %d: %s:%d: check failed: %s: ", g_rank, __FILE__, __LINE__,      \
                    #cond);                                                                        \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                          \
        }                                                                                          \
    } while (0)

#endif /* CONVOY_TESTS_DIST_CHECK_H */
