// libFuzzer target: a chat template (a checkpoint's, so untrusted) compiled
// and rendered with the variables after a "\n--vars--\n" line (a chat
// request's messages, tools, kwargs), inside the renderer's budgets: any
// crash, UB, leak or a render past the 30 s timeout is a finding.
#include "hyrt/text/chat_template.h"
#include "test/fuzz/fuzz_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace hyc;
  auto [source, vars] = fuzz::splitAt(data, size, "\n--vars--\n");
  hyrt::ChatTemplate t;
  if (hyrt::Status st = t.compile(source); !st.ok()) {
    fuzz::explain("compile", st.message());
    return 0;
  }
  std::string out;
  if (hyrt::Status st = t.render(vars.empty() ? "{}" : vars, &out); !st.ok())
    fuzz::explain("render", st.message());
  return 0;
}
