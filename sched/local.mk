# sched/: the scheduler interface and its components.

noinst_HEADERS += sched/sched.h sched/batch/batch.h

libconvoy_internal_la_SOURCES += \
	sched/fifo/sched_fifo.c \
	sched/batch/sched_batch.c \
	sched/batch/batch_plan.c \
	sched/place.c
