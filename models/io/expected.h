// Error-as-value result type shared by every checkpoint reader in models/io.
//
// Convention: no public function in hyc_models_io throws. A fallible
// function returns Expected<T>; on failure it holds a human-readable message
// that names the file and, where relevant, the key or tensor and the expected
// versus found value. Status (= Expected<void>) is used when there is no value.
#ifndef HYC_MODELS_IO_EXPECTED_H
#define HYC_MODELS_IO_EXPECTED_H

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace hyc::io {

/// A failure description. Construct it and return it from a function whose
/// return type is Expected<T>.
class Error {
public:
  explicit Error(std::string message) : message_(std::move(message)) {}
  const std::string &message() const { return message_; }

private:
  std::string message_;
};

/// Either a T or an Error. Check ok() (or convert to bool) before value().
template <typename T> class [[nodiscard]] Expected {
public:
  Expected(T value) : storage_(std::in_place_index<0>, std::move(value)) {}
  Expected(Error error) : storage_(std::in_place_index<1>, std::move(error)) {}

  bool ok() const { return storage_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T &value() & {
    assert(ok());
    return std::get<0>(storage_);
  }
  const T &value() const & {
    assert(ok());
    return std::get<0>(storage_);
  }
  T &&value() && {
    assert(ok());
    return std::get<0>(std::move(storage_));
  }
  T &operator*() & { return value(); }
  const T &operator*() const & { return value(); }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }

  /// The error message; empty when ok().
  const std::string &error() const {
    static const std::string kEmpty;
    return ok() ? kEmpty : std::get<1>(storage_).message();
  }
  /// Moves the error out so it can be forwarded: `return r.take_error();`.
  Error take_error() { return std::get<1>(std::move(storage_)); }

private:
  std::variant<T, Error> storage_;
};

/// Success or an Error, for operations without a result value.
template <> class [[nodiscard]] Expected<void> {
public:
  Expected() = default;
  Expected(Error error) : error_(error.message()), failed_(true) {}

  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const std::string &error() const { return error_; }
  Error take_error() { return Error(std::move(error_)); }

private:
  std::string error_;
  bool failed_ = false;
};

using Status = Expected<void>;

} // namespace hyc::io

#endif // HYC_MODELS_IO_EXPECTED_H
