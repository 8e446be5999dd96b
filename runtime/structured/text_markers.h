// text_markers.h - finding markers (tags, special-token strings) in text
// that arrives in pieces.
#pragma once

#include <algorithm>
#include <string_view>

namespace hyrt::structured {

/// Length of the longest suffix of `text` that is a proper prefix of
/// `marker`: the bytes to hold back, since the next piece may complete it.
inline size_t partial_marker_suffix(std::string_view text,
                                    std::string_view marker) {
  const size_t most = std::min(text.size(), marker.size() - 1);
  for (size_t n = most; n > 0; --n)
    if (text.substr(text.size() - n) == marker.substr(0, n))
      return n;
  return 0;
}

} // namespace hyrt::structured
