// The one exception type of fabricbench. Wrappers throw it with context (what failed, where, the library's
// own message); main() catches it and maps it to the process exit status.
#pragma once
#include <stdexcept>
#include <string>

namespace fabricbench {

// Exit status of every fabricbench executable (documented in README.md).
enum class ExitStatus : int {
  ok = 0,
  measurement_failed = 1,  // wrong data, below baseline, a culprit found
  usage = 2,               // bad command line or input; nothing was written
  runtime = 3,             // timeout, hang, MPI/NCCL/CUDA/verbs/HDF5 error
};

class Error : public std::runtime_error {
 public:
  Error(ExitStatus status, const std::string& message) : std::runtime_error(message), status_(status) {}
  ExitStatus status() const noexcept { return status_; }

  static Error usage(const std::string& message) { return {ExitStatus::usage, message}; }
  static Error runtime(const std::string& message) { return {ExitStatus::runtime, message}; }
  // A state the code must never reach (a bandwidth from no time or no bytes): exit 3, never a printed figure.
  static Error internal(const std::string& message) { return {ExitStatus::runtime, "internal error: " + message}; }

 private:
  ExitStatus status_;
};

}  // namespace fabricbench
