# Sourced by the serving tests that drive `hyc serve` with the official
# `openai` npm client: skip() (exit 77, CTest's "skipped"), and
# openai_client BUILD_DIR, which checks node and npm and installs the
# client under the build tree once, setting NPM_DIR (skips, saying why,
# when node, npm or the registry is unavailable).
skip() {
  echo "SKIPPED: $*"
  exit 77
}

openai_client() {
  command -v node >/dev/null || skip "node is not installed"
  command -v npm >/dev/null || skip "npm is not installed"
  NPM_DIR=$1/test-npm/openai
  if [ ! -f "$NPM_DIR/node_modules/openai/package.json" ]; then
    mkdir -p "$NPM_DIR"
    # Pinned major version: the client API the tests are written against.
    if ! (cd "$NPM_DIR" && timeout 180 npm install --no-audit --no-fund \
          --silent openai@4 >install.log 2>&1); then
      tail -5 "$NPM_DIR/install.log" || true
      skip "cannot install the openai npm client (registry unreachable?)"
    fi
  fi
}
