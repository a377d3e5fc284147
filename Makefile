# SPDX-License-Identifier: GPL-2.0-or-later
#
# The two commands of README.md, on a fresh Debian 12 machine, as root:
#   sh .ci/setup && make demo     build, then boot a real guest through passt
#   sh .ci/setup && make check    every test (what CI runs, .ci/run)
#
# Every target a user runs (make help prints this):
# make              build ./passt, passt-repair and the test tools
# make demo         boot a real guest through passt (DEMO_OPTS=--vhost-user)
# make demo-migrate live migration between two QEMUs, a timeline picture
#                   (build/demo-migrate.png; DEMO_LINGER=no: no linger)
# make check        unit, lint, lsm, integration, QEMU and libvirt tests, plain
#                   and under ASan+UBSan, and a short run of every fuzzer
# make unit         cmocka unit tests (unit-asan: under ASan+UBSan)
# make integration  namespace tests, the kernel as the guest (-asan: ASan);
#                   TESTS="tcp_drain tcp_halfclose": only those (e2e too)
# make e2e          QEMU 10 end-to-end tests, both front-ends (e2e-asan)
# make flakes       the flake budget: SUITES (integration) N times (10), each
#                   test's failure count (LOAD busy loops beside, LIMITS,
#                   TEST_LIMIT: each test's time limit, seconds)
# make libvirt      real libvirt drives the installed daemon; the .deb
# make roots        build and test inside Debian 13 and sid roots (glibc
#                   2.41, 2.43; sid's QEMU 11.1, libvirt 12.8): ROOTS=sid
# make libvirt-migrate  libvirt live-migrates it between two "nodes"
# make lint         kernel-doc on every non-static function of the daemon,
#                   the README's Layout table against the tree, cppcheck,
#                   includes up a layer and cycles between folders
# make analyze      cppcheck and clang-tidy's static analyzer (not in check)
# make lsm          the AppArmor and SELinux profiles in contrib/
# make fuzz         every libFuzzer harness for FUZZ_SECS seconds
# make fuzz-long    every fuzzer for FUZZ_RUNS (10 million) executions, and
#                   the hostile vhost-user guest with random seeds (30 min)
# make bench        ours against upstream passt: CPU, throughput, latency,
#                   UDP, connection rate, many connections; a table and a
#                   picture (bench/results/latest.md, latest.png)
# make bench-coalesce  input coalescing against none, by frames in flight
# make guest        the test guest image (test/guest/out)
# make tools        the test tools only (build/test/tools)
# make asan         the sanitizer build in build-asan/
# make install      PREFIX=/usr/local DESTDIR= (make uninstall: the same)
# make format       clang-format every source file
# make clean        remove every build directory
# make help         this list

VERSION  ?= $(shell git describe --always --dirty 2>/dev/null || echo 0.1)
CC       ?= cc
PREFIX   ?= /usr/local
BUILD    ?= build
SAN      ?=

WARN     := -Wall -Wextra -Werror -Wformat=2 -Wshadow -Wno-missing-field-initializers
CFLAGS   ?= -O2 -g
CFLAGS   += -std=gnu11 $(WARN) -D_GNU_SOURCE -DVERSION=\"$(VERSION)\" -I. \
            -fstack-protector-strong -D_FORTIFY_SOURCE=2 -MMD -MP
LDLIBS   +=

# URING_CHECK: uring.c checks that no queued operation's descriptor was
# closed under it (costs a fstat() per operation)
ifeq ($(SAN),1)
CFLAGS   := $(filter-out -D_FORTIFY_SOURCE=2,$(CFLAGS)) -O1 \
            -fsanitize=address,undefined -fno-sanitize-recover=undefined \
            -fno-omit-frame-pointer -DURING_CHECK
LDFLAGS  += -fsanitize=address,undefined
endif

# Everything but the programs' main files goes into one static library
LIB_SRCS := $(filter-out passt.c passt-repair.c,$(wildcard *.c)) \
            $(wildcard conf/*.c tap/*.c local/*.c stream/*.c vhost/*.c net/*.c fwd/*.c tcp/*.c udp/*.c icmp/*.c migrate/*.c repair/*.c)
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/%.o)
UNIT_SRCS := $(wildcard test/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:test/unit/%.c=$(BUILD)/test/unit/%)
TOOL_SRCS := $(wildcard test/tools/*.c)
TOOL_BINS := $(TOOL_SRCS:test/tools/%.c=$(BUILD)/test/tools/%)

.PHONY: all asan check unit integration unit-asan integration-asan fuzz-long \
        install uninstall libvirt clean format tools guest e2e e2e-asan demo fuzz \
        demo-migrate help lint

all: $(BUILD)/passt passt $(BUILD)/passt-repair tools

passt: $(BUILD)/passt
	@[ "$(BUILD)" = build ] && ln -sf $(BUILD)/passt passt || true

tools: $(TOOL_BINS)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/libpasst.a: $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

# The sandbox (isolation*.c): capabilities, seccomp allow-lists
$(BUILD)/passt: LDLIBS += -lseccomp -lcap -luring
$(BUILD)/passt: $(BUILD)/passt.o $(BUILD)/libpasst.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# Test flavour, never installed: isolation_seccomp.c, isolation_peer.c,
# stream/stream_out.c and env.c with PASST_TEST_HOOKS (the sandbox tests
# make the daemon or its peer credential checker call a forbidden syscall,
# stream_splice makes a sendfile() fail; env.c reads the variables that
# ask for it); the plain build has none
$(BUILD)/test/%-hooks.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DPASST_TEST_HOOKS -c -o $@ $<

$(BUILD)/test/passt-hooks: LDLIBS += -lseccomp -lcap -luring
$(BUILD)/test/passt-hooks: $(BUILD)/passt.o \
			   $(BUILD)/test/isolation_seccomp-hooks.o \
			   $(BUILD)/test/isolation_peer-hooks.o \
			   $(BUILD)/test/stream/stream_out-hooks.o \
			   $(BUILD)/test/env-hooks.o \
			   $(BUILD)/libpasst.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# Its test flavour: PASST_TEST_FORBIDDEN_SYSCALL, as the daemon's
$(BUILD)/test/passt-repair-hooks: LDLIBS += -lseccomp -lcap
$(BUILD)/test/passt-repair-hooks: $(BUILD)/test/passt-repair-hooks.o \
				  $(BUILD)/sigsys.o
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The privileged TCP_REPAIR helper: stand-alone, nothing from the library
# but what a denied system call says (sigsys.c)
$(BUILD)/passt-repair: LDLIBS += -lseccomp -lcap
$(BUILD)/passt-repair: $(BUILD)/passt-repair.o $(BUILD)/sigsys.o
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The sandbox (isolation*.o, seccomp and libcap) comes with
# repair/repair.o, and the io_uring with everything that queues on it
$(UNIT_BINS): LDLIBS += -lseccomp -lcap -luring
$(BUILD)/test/unit/%: test/unit/%.c $(BUILD)/libpasst.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libpasst.a $(LDLIBS) -lcmocka

# sysdeny: system calls that fail on purpose (the sandbox tests); every tool
# links the helpers of test/tools/common/ (frame and checksum writers, the
# clock and the connection to the daemon)
TOOL_COMMON := $(BUILD)/test/tools/common/frame.o \
	       $(BUILD)/test/tools/common/conn.o
.SECONDARY: $(TOOL_COMMON)
$(BUILD)/test/tools/sysdeny: LDLIBS += -lseccomp -lcap
$(BUILD)/test/tools/%: test/tools/%.c $(TOOL_COMMON)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(TOOL_COMMON) $(LDLIBS)

asan:
	$(MAKE) BUILD=build-asan SAN=1 build-asan/passt tools

unit: $(UNIT_BINS)
	@test/unit/run.sh $(UNIT_BINS)

.PHONY: unit-bins
unit-bins: $(UNIT_BINS)

unit-asan:
	$(MAKE) BUILD=build-asan SAN=1 unit

integration: $(BUILD)/passt $(BUILD)/passt-repair tools \
	     $(BUILD)/test/passt-hooks $(BUILD)/test/passt-repair-hooks
	PASST=$(abspath $(BUILD)/passt) TOOLS=$(abspath $(BUILD)/test/tools) \
		test/integration/run.sh $(TESTS)

# The sanitizer run keeps io_uring (uring.c: what the daemon closes while
# operations are queued is where ASan has to look), but the stream
# front-end copies instead of splicing, from a memfd instead of a file on
# huge pages (stream/stream_out.c, hugefile.c): so both of those paths pass
# the whole suite (tests/stream_splice.sh checks that each daemon is on
# the path it says); the plain system calls of uring.c's fallback pass
# the whole QEMU suite under ASan (e2e-asan), and tests/io_uring.sh
integration-asan:
	PASST_NO_SPLICE=1 PASST_NO_HUGEFILE=1 \
		$(MAKE) BUILD=build-asan SAN=1 integration

guest: tools
	TOOLS=$(abspath $(BUILD)/test/tools) test/guest/build.sh

# QEMU 10 with a real guest, in stream and vhost-user mode
e2e: $(BUILD)/passt $(BUILD)/passt-repair tools
	PASST=$(abspath $(BUILD)/passt) TOOLS=$(abspath $(BUILD)/test/tools) \
		test/e2e/run.sh $(TESTS)

# The sanitizer daemon, with the plain tools (sockio goes into the guest)
e2e-asan: tools
	$(MAKE) BUILD=build-asan SAN=1 build-asan/passt
	PASST_NO_IO_URING=1 PASST=$(abspath build-asan/passt) \
		TOOLS=$(abspath build/test/tools) test/e2e/run.sh $(TESTS)

# Real libvirt (11.3, bookworm-backports) starts and stops the installed
# daemon in both modes; QEMU's descriptor; the Debian package
libvirt: $(BUILD)/passt $(BUILD)/passt-repair tools
	BUILD=$(BUILD) TOOLS=$(abspath $(BUILD)/test/tools) test/libvirt/run.sh

# libvirt live-migrates a vhost-user passt domain between two libvirt
# "nodes" (network, mount and UTS namespaces of their own), as on a
# KubeVirt node pair: test/libvirt/tests/migrate.sh. Not in make check:
# three migrations of a TCG guest take some five minutes on two cores
.PHONY: libvirt-migrate
libvirt-migrate: $(BUILD)/passt $(BUILD)/passt-repair tools
	BUILD=$(BUILD) TOOLS=$(abspath $(BUILD)/test/tools) LV_TIMEOUT=900 \
		test/libvirt/run.sh migrate

# The flake budget (not in make check): SUITES (integration; also
# integration-asan, e2e, e2e-asan, each with ":TEST,TEST" for some of its
# tests) N times, with LOAD busy loops beside, once per value of LIMITS
# (net.core.wmem_max/rmem_max, restored after), each test killed after
# TEST_LIMIT seconds if set; a table of each test's failures at the end
# (test/flakes.sh)
.PHONY: flakes
flakes: all $(BUILD)/test/passt-hooks
	test/flakes.sh -n $(or $(N),10) -l $(or $(LOAD),0) -b "$(LIMITS)" \
		$(if $(TEST_LIMIT),-t $(TEST_LIMIT)) $(or $(SUITES),integration)

help:
	@sed -n '3,/^$$/s/^# \{0,1\}//p' Makefile

# The README's "run" command: a real guest online through passt (the
# guest image is built first: build.sh does nothing when it is up to date)
demo: $(BUILD)/passt tools guest
	PASST=$(abspath $(BUILD)/passt) TOOLS=$(abspath $(BUILD)/test/tools) \
		test/demo.sh $(DEMO_OPTS)

# A live migration a person can watch: test/demo-migrate.sh; the picture
# goes to $(BUILD)/ (README.md, "Migration demo")
demo-migrate: $(BUILD)/passt $(BUILD)/passt-repair tools guest
	PASST=$(abspath $(BUILD)/passt) TOOLS=$(abspath $(BUILD)/test/tools) \
		DEMO_OUT=$(abspath $(BUILD)) test/demo-migrate.sh

# libFuzzer harnesses (clang, ASan+UBSan) over everything that parses guest
# or front-end input, FUZZ_SECS seconds each: see test/fuzz/build.sh
FUZZ_SECS ?= 20
fuzz:
	FUZZ_SECS=$(FUZZ_SECS) test/fuzz/build.sh run

# Ours against the newest upstream passt at hand (bench/upstream.sh), both
# modes, both directions, both MTUs, with the kernel of a namespace and a
# QEMU guest: one table, also in bench/results/latest.md (bench/README.md).
# As root; BENCH_QUICK=1 for a smoke run, BENCH_RUNS (5) and BENCH_SECS (8)
# per cell
.PHONY: bench
bench: $(BUILD)/passt tools
	PASST=$(abspath $(BUILD)/passt) TOOLS=$(abspath $(BUILD)/test/tools) \
		bench/run.sh

# Input coalescing against PASST_COALESCE_US=0 behind a guest with 1 to 256
# frames in flight, both front-ends, both MTUs (bench/coalesce.sh, issue 52;
# about 40 minutes): bench/results/coalesce.md
.PHONY: bench-coalesce
bench-coalesce: $(BUILD)/passt tools
	PASST=$(abspath $(BUILD)/passt) TOOLS=$(abspath $(BUILD)/test/tools) \
		bench/coalesce.sh

# Every harness in turn for FUZZ_RUNS (10 million) executions, and a table
# of executions, coverage and crashes (not in make check: it takes hours);
# then the hostile vhost-user guest (test/integration/tests/vu_hostile.sh)
# with random seeds for FUZZ_HOSTILE_SECS (1800) against the ASan daemon
# (as root; each seed is printed, FUZZ_NAMES=vu_hostile for that alone)
FUZZ_RUNS ?= 10000000
FUZZ_JOBS ?= $(shell nproc)
FUZZ_HOSTILE_SECS ?= 1800
fuzz-long:
	FUZZ_RUNS=$(FUZZ_RUNS) FUZZ_JOBS=$(FUZZ_JOBS) \
		FUZZ_HOSTILE_SECS=$(FUZZ_HOSTILE_SECS) \
		test/fuzz/build.sh long $(FUZZ_NAMES)

# The LSM profiles in contrib/ parse (AppArmor) and build (SELinux module)
.PHONY: lsm
lsm:
	test/lsm/run.sh

# kernel-doc on every non-static function of the daemon and on every static
# one over 15 lines, and blocks that match their functions
# (test/lint/kerneldoc-test.sh checks the checker), the README's Layout
# table against the tree, and the layers counted from the includes
# (test/lint/includes.sh, the order in test/lint/layers; its own test too)
lint: cppcheck
	test/lint/kerneldoc-test.sh
	test/lint/kerneldoc.sh
	test/lint/layout.sh
	test/lint/includes-test.sh
	test/lint/includes.sh

# Static analysis of the daemon's sources. cppcheck (a few seconds) is part
# of make lint, at zero findings; each suppression is a false positive:
#  internalAstError (fwd/fwd.c, tcp/migrate_dump.c): cppcheck 2.10's parser
#    gives up on the address of a compound literal inside ?:, no finding
#  legacyUninitvar (isolation_peer.c): line[0] is read only once recv()
#    returned the one byte it wrote there (n == 1)
#  uninitvar (isolation_seccomp.c): nrs[j] is read only for j < n, the
#    entries written before
#  missingIncludeSystem: it doesn't read the C library's headers
DAEMON_SRCS := passt.c passt-repair.c $(LIB_SRCS)
CPPCHECK_FLAGS := -q --std=c11 -D_GNU_SOURCE -I. --error-exitcode=1 \
	--enable=warning,portability,performance --inline-suppr \
	--suppress=missingIncludeSystem \
	--suppress=internalAstError:fwd/fwd.c \
	--suppress=internalAstError:tcp/migrate_dump.c \
	--suppress=legacyUninitvar:isolation_peer.c \
	--suppress=uninitvar:isolation_seccomp.c
.PHONY: cppcheck analyze
cppcheck:
	cppcheck $(CPPCHECK_FLAGS) $(DAEMON_SRCS)

# make analyze: cppcheck, then clang-tidy's static analyzer (about a minute
# and a half, so not in make check), failing on any finding. Left out:
#  security.insecureAPI.*: memcpy() and friends, which we bound ourselves
#  optin.performance.Padding: struct layout is chosen for reading
#  valist.Uninitialized: clang 14 reports every va_start() in a branch
# A finding that is a false positive gets a NOLINT comment saying why
TIDY_CHECKS := -*,clang-analyzer-*,-clang-analyzer-security.insecureAPI.*,$\
	       -clang-analyzer-optin.performance.Padding,$\
	       -clang-analyzer-valist.Uninitialized
analyze: cppcheck
	clang-tidy -quiet --checks='$(TIDY_CHECKS)' --warnings-as-errors='*' \
		$(DAEMON_SRCS) -- -std=gnu11 -D_GNU_SOURCE \
		-DVERSION=\"$(VERSION)\" -I.

check: all
	$(MAKE) unit
	$(MAKE) unit-asan
	$(MAKE) lint
	$(MAKE) lsm
	$(MAKE) integration
	$(MAKE) integration-asan
	$(MAKE) e2e
	$(MAKE) e2e-asan
	$(MAKE) libvirt
	$(MAKE) roots
	$(MAKE) fuzz FUZZ_SECS=10

# The newer userlands: Debian 13 and sid roots (.ci/roots.sh builds them),
# the daemon built and run inside each with its compiler and C library;
# sid's QEMU 11.1 and libvirt 12.8 (test/roots/run.sh)
.PHONY: roots
roots:
	test/roots/run.sh $(ROOTS)

# passt-repair and its page go in when they are there (built, written)
BINDIR   := $(PREFIX)/bin
MAN1DIR  := $(PREFIX)/share/man/man1
VUDIR    := $(PREFIX)/share/qemu/vhost-user
install: $(BUILD)/passt $(BUILD)/passt-repair
	install -D -m 0755 $(BUILD)/passt $(DESTDIR)$(BINDIR)/passt
	if [ -x $(BUILD)/passt-repair ]; then install -D -m 0755 \
		$(BUILD)/passt-repair $(DESTDIR)$(BINDIR)/passt-repair; fi
	install -D -m 0644 doc/passt.1 $(DESTDIR)$(MAN1DIR)/passt.1
	if [ -f doc/passt-repair.1 ]; then install -D -m 0644 \
		doc/passt-repair.1 $(DESTDIR)$(MAN1DIR)/passt-repair.1; fi
	install -d -m 0755 $(DESTDIR)$(VUDIR)
	sed 's|@BINDIR@|$(BINDIR)|' contrib/qemu/50-passt.json \
		>$(DESTDIR)$(VUDIR)/50-passt.json
	chmod 0644 $(DESTDIR)$(VUDIR)/50-passt.json

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/passt $(DESTDIR)$(BINDIR)/passt-repair \
		$(DESTDIR)$(MAN1DIR)/passt.1 $(DESTDIR)$(MAN1DIR)/passt-repair.1 \
		$(DESTDIR)$(VUDIR)/50-passt.json
	rmdir $(DESTDIR)$(VUDIR) $(DESTDIR)$(PREFIX)/share/qemu 2>/dev/null || :

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf build build-asan build-clang build-fuzz passt

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
