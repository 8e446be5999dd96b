#!/usr/bin/env bash
# Asserts the design boundary: runtime/ never includes MLIR or LLVM headers,
# and no runtime target is compiled with an MLIR/LLVM include path or links
# an MLIR/LLVM library. Args: SOURCE_DIR BUILD_DIR.
set -euo pipefail
SRC=$1
BUILD=$2
status=0
if grep -rnE '#\s*include\s*[<"](mlir|llvm)/' "$SRC/runtime"; then
  echo "FAIL: runtime/ includes MLIR/LLVM headers (above)"
  status=1
fi
# Compile commands of runtime sources must not see /usr/lib/llvm-*/include.
if python3 - "$BUILD/compile_commands.json" "$SRC/runtime" <<'PY'
import json, sys
cmds = json.load(open(sys.argv[1]))
bad = [c["file"] for c in cmds
       if c["file"].startswith(sys.argv[2]) and "llvm-22/include" in c.get("command", "")]
for f in bad:
    print("FAIL: compiled with the LLVM include path:", f)
sys.exit(1 if bad else 0)
PY
then :; else status=1; fi
# Link lines of the runtime archives' consumers outside the compiler.
if grep -E "libMLIR|libLLVM" "$BUILD/runtime/CMakeFiles/"*/link.txt 2>/dev/null; then
  echo "FAIL: a runtime target links MLIR/LLVM"
  status=1
fi
if [ $status -eq 0 ]; then
  echo "runtime boundary: no MLIR/LLVM includes, include paths or links"
fi
exit $status
