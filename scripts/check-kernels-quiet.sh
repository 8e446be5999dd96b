#!/usr/bin/env bash
# Asserts that the kernel layer (runtime/cpu, runtime/reference) prints
# nothing but diagnostics: a kernel runs inside `hyc run` and `hyc serve`,
# whose stdout is the user's text or the server's log, so a timing print
# left in a kernel reaches every user (it happened: 347896c shipped one in
# the MLA plain form, found a session later). A diagnostic names the
# runtime ("hyrt..." as the message's first word) and goes to stderr.
# Args: SOURCE_DIR.
set -euo pipefail
SRC=$1
hits=$(grep -rnE 'printf\s*\(|std::(cout|cerr|clog)|\bputs\s*\(|\bperror\s*\(' \
         "$SRC/runtime/cpu" "$SRC/runtime/reference" \
       | grep -vE 'snprintf\s*\(' \
       | grep -vE 'fprintf\s*\(\s*stderr\s*,\s*"hyrt' || true)
if [ -n "$hits" ]; then
  echo "$hits"
  echo "FAIL: the kernel layer prints (above); kernels report through return values, or a \"hyrt...\" diagnostic on stderr"
  exit 1
fi
echo "kernels quiet: runtime/cpu and runtime/reference print only hyrt diagnostics"
