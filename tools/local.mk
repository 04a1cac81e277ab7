# tools/: convoy-info (components, devices, parameters) and convoy-trace (trace summaries).

bin_PROGRAMS += tools/convoy-info
tools_convoy_info_SOURCES = tools/convoy_info.c
dist_man1_MANS += doc/convoy-info.1

# The trace reader, shared by convoy-trace and its tests. It does not use libconvoy.
convoy_trace_reader = tools/trace_read.c tools/trace_read.h tools/trace_summary.c \
	tools/trace_svg.c

if HAVE_JANSSON
bin_PROGRAMS += tools/convoy-trace
tools_convoy_trace_SOURCES = tools/convoy_trace.c tools/trace_merge.c $(convoy_trace_reader)
tools_convoy_trace_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tools_convoy_trace_LDADD = $(JANSSON_LIBS) $(CONVOY_SYS_LIBS)
endif
dist_man1_MANS += doc/convoy-trace.1
EXTRA_DIST += tools/convoy_trace.c tools/trace_merge.c $(convoy_trace_reader)
