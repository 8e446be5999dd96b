// hyrt/status.h - the runtime's error convention: a Status that is either ok
// or carries a message naming what was expected and what was found.
#pragma once

#include <string>
#include <utility>

namespace hyrt {

/// Outcome of a runtime call. Runtime code never exits or aborts on bad
/// input; it returns an error Status whose message the caller can print.
class Status {
public:
  /// Success.
  Status() = default;
  /// Success (for symmetry with Error()).
  static Status Ok() { return Status(); }
  /// Failure with a message such as "expected 512 tokens, found 511".
  static Status Error(std::string message) {
    Status s;
    s.ok_ = false;
    s.message_ = std::move(message);
    return s;
  }
  /// True on success.
  bool ok() const { return ok_; }
  /// The error message (empty on success).
  const std::string &message() const { return message_; }

private:
  bool ok_ = true;
  std::string message_;
};

} // namespace hyrt
