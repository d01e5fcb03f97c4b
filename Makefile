# trustlab — set-up and the two jobs the README promises.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT_PACKAGES := swtpm swtpm-tools tpm2-tools libtss2-dev pkg-config build-essential python3-venv python3-dev chromium trousers tpm-tools tpm-quote-tools simple-tpm-pk11

.PHONY: system setup test main benchmarks clean

system:  ## Debian packages: swtpm (libtpms), tpm2-tools, the TSS headers tpm2-pytss builds against
	@dpkg -s $(APT_PACKAGES) >/dev/null 2>&1 || { \
	  $(SUDO) apt-get update && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $(APT_PACKAGES); }

$(BIN)/trustlab: pyproject.toml | system
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[tpm2,test]'
	-$(BIN)/pip install --quiet -e '.[compiled]'  # mypyc, optional: without it the pure-Python modules run
	touch $@

# mypyc builds of the hot pure-Python modules (trustlab.compiled); optional: when the build fails the
# tool says why and the pure-Python modules run, with the same results
COMPILED_STAMP := src/trustlab/devices/tpm12/merkle.mypyc-source-sha256
$(COMPILED_STAMP): src/trustlab/devices/tpm12/merkle.py tools/build_compiled.py src/trustlab/compiled.py | $(BIN)/trustlab
	-$(BIN)/python tools/build_compiled.py

setup: system $(BIN)/trustlab $(COMPILED_STAMP)

test: setup  ## the whole test suite (a few minutes on 2 cores); wall-clock accuracy tests run alone
	$(BIN)/pytest -n 2 -m "not realtime"
	$(BIN)/pytest -p no:xdist -m realtime
	$(BIN)/trustlab validate > /dev/null  # smoke test: every reference check runs

main: setup  ## the flagship run: regenerate the papers' tables
	$(BIN)/trustlab flagship --out out/report --jobs 2

benchmarks: setup
	$(BIN)/python -m benchmarks

clean:
	-$(PY) tools/build_compiled.py --clean
	rm -rf $(VENV) out .pytest_cache
