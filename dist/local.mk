# dist/: the distributed mode over MPI (doc/dist.md), above the core; without MPI only
# the stubs that say so.

if HAVE_MPI
libconvoy_internal_la_SOURCES += \
	dist/dist.c \
	dist/dist_comm.c \
	dist/dist_match.c
else
libconvoy_internal_la_SOURCES += dist/dist_none.c
endif
EXTRA_DIST += dist/dist.c dist/dist_comm.c dist/dist_match.c dist/dist_none.c
noinst_HEADERS += dist/dist.h
