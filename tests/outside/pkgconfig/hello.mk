# An outside project that builds against an installed convoy through pkg-config (CI's
# "outside" phase): PKG_CONFIG_PATH=PREFIX/lib/pkgconfig make -C tests/outside/pkgconfig -f hello.mk OUT=DIR
# (static: make ... PKG_STATIC=--static).
OUT ?= .
PKG_CONFIG ?= pkg-config
CFLAGS += $(shell $(PKG_CONFIG) --cflags convoy)
LDLIBS += $(shell $(PKG_CONFIG) $(PKG_STATIC) --libs convoy)

$(OUT)/hello: ../hello.c
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(LDFLAGS) $(LDLIBS)
