# SPDX-License-Identifier: Apache-2.0
# Convenience front end over Meson. `make demo` and `make test` are the README's two commands;
# each installs its own Debian dependencies first.
MESON ?= meson
REL   := build/release
TST   := build/test
FUZ   := build/fuzz
FUZZ_SECONDS ?= 5

.PHONY: all deps deps-test demo test unit fuzz-build fuzz fuzz-long bench format format-check \
	console-assets clean

all: deps
	@[ -f $(REL)/build.ninja ] || $(MESON) setup $(REL) --buildtype=release -Dwerror=true
	$(MESON) compile -C $(REL)

deps:
	@scripts/deps.sh build

deps-test:
	@scripts/deps.sh test

demo: all
	@scripts/demo.sh $(REL)

# The web console's vendored uPlot matches what its lockfile pins (docs/console.md).
console-assets:
	@scripts/console-assets.sh check

# Format check, the release build (what `make demo` runs), unit + integration tests under
# ASan/UBSan (gcc), a clang libFuzzer build with bounded fuzz runs.
# The browser tests (console_browser, console_browser_ctl) fail rather than skip here:
# deps-test installs Chromium and playwright-core.
test: export TF_REQUIRE_BROWSER := 1
test: deps-test format-check console-assets all unit fuzz
	@echo "make test: all suites passed"

unit:
	@[ -f $(TST)/build.ninja ] || $(MESON) setup $(TST) --buildtype=debug -Dwerror=true \
	    -Db_sanitize=address,undefined
	$(MESON) compile -C $(TST)
	$(MESON) test -C $(TST) --print-errorlogs --num-processes 2

fuzz-build:
	@[ -f $(FUZ)/build.ninja ] || CC=clang $(MESON) setup $(FUZ) --buildtype=debugoptimized \
	    -Dwerror=true -Db_sanitize=address,undefined -Db_lundef=false -Dfuzz=true
	$(MESON) compile -C $(FUZ)

fuzz: fuzz-build
	@scripts/fuzz.sh $(FUZ) $(FUZZ_SECONDS)

# The longer documented run (docs/fuzzing.md): 10 minutes per target.
fuzz-long: fuzz-build
	@scripts/fuzz.sh $(FUZ) 600

bench: all
	@scripts/bench.sh $(REL)

format:
	@git ls-files '*.c' '*.h' | xargs -r clang-format -i

format-check:
	@git ls-files '*.c' '*.h' | xargs -r clang-format --dry-run -Werror

clean:
	rm -rf build
