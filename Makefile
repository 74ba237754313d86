# pmuprof — perf-style profiler for Go programs.
#
#   make                 build ./pmuprof (into $(O), then linked at the top)
#   make check           install every dep, build, run the whole suite (normal + ASan/UBSan)
#   make demo            install the build's deps, build, profile the bundled Go demo
#   make lint            shellcheck, clang-tidy (lib/, cmd/) and mandoc -Tlint: clean
#   make deps            install every Debian package (deps-build: the build's only)
#   make backends        build the agent tests' OpenTelemetry Collector and
#                        Pyroscope ahead (else the first test that needs one does)
#   make install PREFIX=/usr/local
#   make SAN=address,undefined   sanitizer build (output in build/san)
#   V=1                  show the commands

PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
MANDIR  ?= $(PREFIX)/share/man
UNITDIR ?= $(PREFIX)/lib/systemd/system
CC      ?= cc
SAN     ?=
ifeq ($(SAN),)
O       ?= build
else
O       ?= build/san
endif

PKGS     = libelf libdw libprotobuf-c zlib libcurl
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS))
# -pthread: the agent's pusher runs in a thread of its own (lib/agent/push.h)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS)) -lm -pthread

WARN = -Wall -Wextra -Wshadow -Wformat=2 -Wstrict-prototypes \
       -Wmissing-prototypes -Wold-style-definition -Wwrite-strings -Wundef \
       -Wvla -fno-common
# DEVELOPER=1 (set by .ci/run): warnings are errors.  Off by default, so
# that a newer compiler's new warning does not stop a user's build.
ifeq ($(DEVELOPER),1)
WARN += -Werror
endif
OPT  ?= -O2 -g
BASE_CFLAGS = -std=c11 -D_GNU_SOURCE $(OPT) -I. -Ilib -I$(O)/gen $(PKG_CFLAGS)
ifneq ($(SAN),)
BASE_CFLAGS += -fsanitize=$(SAN) -fno-omit-frame-pointer -fno-sanitize-recover=all
SAN_LDFLAGS  = -fsanitize=$(SAN)
endif
ALL_CFLAGS = $(BASE_CFLAGS) $(WARN) $(CFLAGS)
ALL_LDFLAGS = $(SAN_LDFLAGS) $(LDFLAGS)

ifeq ($(V),1)
Q =
else
Q = @
endif

LIB_SRCS  = $(wildcard lib/*/*.c)
# OTLP's profiles messages (proto/opentelemetry/README.md), compiled as
# profile.proto is; lib/agent/otlp.c builds its requests with them
OTLP_PROTOS = $(addprefix proto/opentelemetry/proto/,common/v1/common.proto \
	      resource/v1/resource.proto profiles/v1development/profiles.proto \
	      collector/profiles/v1development/profiles_service.proto)
OTLP_GEN_C  = $(OTLP_PROTOS:proto/%.proto=$(O)/gen/%.pb-c.c)
OTLP_GEN_H  = $(OTLP_PROTOS:proto/%.proto=$(O)/gen/%.pb-c.h)
GEN_H     = $(O)/gen/profile.pb-c.h $(OTLP_GEN_H)
LIB_OBJS  = $(LIB_SRCS:%.c=$(O)/%.o) $(O)/gen/profile.pb-c.o $(OTLP_GEN_C:%.c=%.o)
CMD_SRCS  = $(wildcard cmd/*.c)
CMD_OBJS  = $(CMD_SRCS:%.c=$(O)/%.o)
UNIT_SRCS = $(wildcard tests/unit/test-*.c)
UNIT_BINS = $(UNIT_SRCS:tests/unit/%.c=$(O)/tests/%)
FUZZ_SRCS = $(wildcard tests/fuzz/fuzz-*.c)
MAN_SRCS  = $(wildcard man/*.scd)
MAN_PAGES = $(MAN_SRCS:man/%.scd=$(O)/man/%)

VERSION := 0.1$(shell git rev-parse --short HEAD >/dev/null 2>&1 && echo "-g$$(git rev-parse --short HEAD)")

.PHONY: all deps deps-build backends check demo install clean unit fuzz man lint lint-sh lint-c lint-man
.SUFFIXES:

all: pmuprof man

pmuprof: $(O)/pmuprof
	$(Q)ln -sf $(O)/pmuprof pmuprof

deps:
	@./scripts/deps.sh all
deps-build:
	@./scripts/deps.sh build
# not part of deps or check: ~14 min of 2 CPUs once per machine (cached
# outside the checkout), paid by the tests that need them when they run
backends:
	@./scripts/backends.sh all

# one run makes both (grouped target: under -j, protoc-c ran twice at once)
$(O)/gen/profile.pb-c.c $(O)/gen/profile.pb-c.h &: proto/profile.proto
	@mkdir -p $(O)/gen
	@echo "  PROTOC  $<"
	$(Q)protoc-c --proto_path=proto --c_out=$(O)/gen $<

$(OTLP_GEN_C) $(OTLP_GEN_H) &: $(OTLP_PROTOS)
	@mkdir -p $(O)/gen
	@echo "  PROTOC  proto/opentelemetry"
	$(Q)protoc-c --proto_path=proto --c_out=$(O)/gen $(OTLP_PROTOS)

# The flame-graph page's own script and style, embedded as C strings.
$(O)/gen/flame-assets.h: web/flame.js web/flame.css scripts/embed.sh
	@mkdir -p $(O)/gen
	@echo "  EMBED   $@"
	$(Q)./scripts/embed.sh $@ pm_flame_js web/flame.js pm_flame_css web/flame.css

$(O)/lib/output/html.o: $(O)/gen/flame-assets.h

# Generated code: no -Werror, it is not ours.
$(O)/gen/%.pb-c.o: $(O)/gen/%.pb-c.c $(GEN_H)
	@echo "  CC      $@"
	$(Q)$(CC) $(BASE_CFLAGS) -w -c -o $@ $<

$(O)/%.o: %.c $(GEN_H)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(ALL_CFLAGS) -DPMUPROF_VERSION='"$(VERSION)"' -MMD -MP -c -o $@ $<

$(O)/libpmuprof.a: $(LIB_OBJS)
	@echo "  AR      $@"
	$(Q)rm -f $@ && ar rcs $@ $^

$(O)/pmuprof: $(CMD_OBJS) $(O)/libpmuprof.a
	@echo "  LINK    $@"
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $(CMD_OBJS) $(O)/libpmuprof.a $(PKG_LIBS)

$(O)/tests/%: $(O)/tests/unit/%.o $(O)/libpmuprof.a
	@mkdir -p $(dir $@)
	@echo "  LINK    $@"
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $< $(O)/libpmuprof.a $(PKG_LIBS)

unit: $(UNIT_BINS)

man: $(MAN_PAGES)

$(O)/man/%: man/%.scd
	@mkdir -p $(dir $@)
	@echo "  SCDOC   $<"
	$(Q)scdoc < $< > $@

# make lint: every script through shellcheck (.shellcheckrc), lib/ and cmd/
# through clang-tidy (.clang-tidy says which checks and why), the man pages
# through mandoc -Tlint; any finding fails.  clang-tidy takes ~2.5 min of CPU:
# each file is a target of its own, run on every CPU, its clean result kept
# in $(O)/lint/ until the file, a header or the settings change (a script:
# until it, the libraries the tests source or .shellcheckrc change).
SH_SRCS     = $(wildcard scripts/*.sh tests/*.sh tests/e2e/*.sh) .ci/run
SH_STAMPS   = $(SH_SRCS:%=$(O)/lint/%.sc)
TIDY_SRCS   = $(LIB_SRCS) $(CMD_SRCS)
TIDY_STAMPS = $(TIDY_SRCS:%.c=$(O)/lint/%.tidy)
CLANG_TIDY ?= clang-tidy
SHELLCHECK ?= shellcheck

lint:
	@./scripts/deps.sh lint
	$(Q)$(MAKE) --no-print-directory -k -j$(NPROC) lint-sh lint-c lint-man

lint-sh: $(SH_STAMPS)

$(O)/lint/%.sc: % .shellcheckrc $(wildcard tests/e2e/lib*.sh)
	@mkdir -p $(dir $@)
	@echo "  SHCHECK $<"
	$(Q)$(SHELLCHECK) -x -S warning $<
	$(Q)touch $@

lint-c: $(TIDY_STAMPS)

$(O)/lint/%.tidy: %.c .clang-tidy $(wildcard lib/*/*.h cmd/*.h) $(GEN_H) $(O)/gen/flame-assets.h
	@mkdir -p $(dir $@)
	@echo "  TIDY    $<"
	$(Q)$(CLANG_TIDY) --quiet $< -- $(BASE_CFLAGS) -DPMUPROF_VERSION='"$(VERSION)"' 2>$@.err || \
		{ grep -v ' generated\.$$' $@.err; exit 1; }
	$(Q)touch $@

lint-man: $(MAN_PAGES)
	@echo "  MANLINT $(words $(MAN_PAGES)) pages"
	$(Q)mandoc -Tlint -W warning $(MAN_PAGES)

# The whole suite: normal build, then the same unit and e2e tests under
# ASan+UBSan. tests/run.sh prints the single summary line at the end.
# the builds on every CPU (the suite's own time: keep it under 20 minutes)
NPROC := $(shell nproc 2>/dev/null || echo 2)

check: deps
	$(Q)$(MAKE) --no-print-directory -j$(NPROC) all unit
ifneq ($(NO_SAN),1)
	$(Q)$(MAKE) --no-print-directory -j$(NPROC) SAN=address,undefined build/san/pmuprof unit
endif
	$(Q)./tests/run.sh

# Only what the demo needs: the build's packages, pmuprof (in parallel) and
# the one Go program it profiles; no test fixture, no test package.
demo:
	@echo "demo: checking the build's Debian packages (scripts/deps.sh build)"
	@./scripts/deps.sh build
	@echo "demo: building pmuprof"
	$(Q)$(MAKE) --no-print-directory -j$(NPROC) pmuprof
	$(Q)./scripts/demo.sh

fuzz:
	$(Q)./scripts/fuzz.sh $(FUZZ_SECS)

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1
	install -m 755 $(O)/pmuprof $(DESTDIR)$(BINDIR)/pmuprof
	install -m 644 $(MAN_PAGES) $(DESTDIR)$(MANDIR)/man1/
	install -d $(DESTDIR)$(UNITDIR)
	sed 's#/usr/local/bin/pmuprof#$(BINDIR)/pmuprof#' dist/pmuprof-agent.service \
		> $(DESTDIR)$(UNITDIR)/pmuprof-agent.service

clean:
	rm -rf build pmuprof

-include $(shell find $(O) -name '*.d' 2>/dev/null)
