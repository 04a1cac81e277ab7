# doc/: documentation shipped in the tarball.

EXTRA_DIST += \
	README.md \
	doc/guide.md \
	doc/reference.md \
	doc/design.md \
	doc/tracing.md \
	doc/results.md
