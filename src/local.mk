# src/: the core (context, parameters, components, classes, tasks, data, workers, trace).

libconvoy_internal_la_SOURCES += \
	src/util.c \
	src/pool.c \
	src/log_repeat.c \
	src/param.c \
	src/param_core.c \
	src/component.c \
	src/context.c \
	src/class.c \
	src/data.c \
	src/insert.c \
	src/task.c \
	src/wait.c \
	src/worker.c \
	src/hostmem.c \
	src/coherence.c \
	src/trace.c \
	src/trace_write.c \
	src/trace_feed.c \
	src/version.c \
	src/proc.c \
	src/bind.c

noinst_HEADERS += \
	src/util.h \
	src/pool.h \
	src/param.h \
	src/context.h \
	src/core.h \
	src/task_impl.h \
	src/coherence.h \
	src/trace.h \
	src/trace_impl.h \
	src/proc.h \
	src/bind.h
