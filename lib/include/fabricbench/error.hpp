// The one exception type of fabricbench. Wrappers throw it with context (what failed, where, the library's
// own message); main() catches it and maps it to the process exit status.
#pragma once
#include <cstdio>
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

  // Bad input: the message made one line a person reads (see one_line).
  static Error usage(const std::string& message) { return {ExitStatus::usage, one_line(message)}; }
  static Error runtime(const std::string& message) { return {ExitStatus::runtime, message}; }
  // A state the code must never reach (a bandwidth from no time or no bytes): exit 3, never a printed figure.
  static Error internal(const std::string& message) { return {ExitStatus::runtime, "internal error: " + message}; }

  // Control characters (a newline, NUL) shown as '?', a quoted value of more than 64 characters cut to its first 48
  // (a 10 MB line of a bad file is not echoed back), and the whole kept under 600 characters.
  static std::string one_line(const std::string& message) {
    std::string out;
    for (std::size_t i = 0; i < message.size() && out.size() < 560; ++i) {
      if (message[i] == '\'') {
        const auto close = message.find('\'', i + 1);
        if (close != std::string::npos && close - i - 1 > 64) {
          out +=
              '\'' + printable(message.substr(i + 1, 48)) + "...' (" + std::to_string(close - i - 1) + " characters)";
          i = close;
          continue;
        }
        if (close != std::string::npos) {  // a short value whole: its closing quote opens nothing
          out += printable(message.substr(i, close - i + 1));
          i = close;
          continue;
        }
      }
      out += printable(message.substr(i, 1));
    }
    return out.size() < 560 ? out : out + "... (cut)";
  }

 private:
  static std::string printable(std::string text) {
    for (auto& c : text)
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
    return text;
  }
  ExitStatus status_;
};

// The main() of a program that is no Benchmark (fabric-watchdog, fabric-rail-exec): `body`'s exit status; an Error
// becomes one line "PROGRAM: message" on stderr and its status, any other exception "PROGRAM: internal error: ..."
// and exit 3.
template <typename Body>
int main_of(const char* program, Body&& body) {
  try {
    return body();
  } catch (const Error& e) {
    std::fprintf(stderr, "%s: %s\n", program, Error::one_line(e.what()).c_str());
    return static_cast<int>(e.status());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: internal error: %s\n", program, e.what());
    return static_cast<int>(ExitStatus::runtime);
  }
}

}  // namespace fabricbench
