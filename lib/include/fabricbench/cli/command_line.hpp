// The option schema shared by every executable (sizes, iterations, warm-up, check, output, CSV, config file,
// timeout), the executable's own option group on top, and validation that turns every bad value into one
// Error::usage line naming the option and what is allowed.
#pragma once
#include <boost/program_options.hpp>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "fabricbench/cli/byte_size.hpp"

namespace fabricbench::cli {

namespace po = boost::program_options;

struct SizeDefaults {
  std::uint64_t min_bytes, max_bytes, step_factor;
};

struct CommonOptions {
  SizeList sizes = SizeList::geometric(1, 1, 2);
  int iterations = 0;  // 0: the executable's default (may depend on the size)
  int warmup = -1;     // -1: the executable's default
  bool check = false;
  std::string output;  // empty until resolve_outputs(): then the path the HDF5 file will get
  std::string csv;
  bool force = false;
  double timeout_s = 0;  // 0: none
  bool quiet = false;
  std::string command_line;
};

class CommandLine {
 public:
  CommandLine(std::string program, std::string summary, SizeDefaults sizes, bool check_by_default);

  // The executable's own options; add before parse().
  po::options_description& tool_options() { return tool_; }
  // Parses argv and --config. Returns false when --help or --version was asked for (printed when `print`).
  // Throws Error::usage on anything unknown or malformed.
  bool parse(int argc, char** argv, bool print);

  const po::variables_map& values() const { return values_; }
  const CommonOptions& common() const { return common_; }
  const std::string& program() const { return program_; }

  // Rank 0, before anything is created: default output name, refuse existing (without --force) or unwritable
  // paths. Throws Error::usage.
  void resolve_outputs();

 private:
  void read_common();

  std::string program_, summary_;
  SizeDefaults size_defaults_;
  bool check_by_default_;
  po::options_description common_desc_, osu_desc_, tool_;
  po::variables_map values_;
  CommonOptions common_;
};

// Throws Error::usage("<option> '<value>': allowed values are a, b, c") unless value is one of `allowed`.
void require_choice(std::string_view option, const std::string& value, std::initializer_list<std::string_view> allowed);
// Throws Error::usage unless value >= minimum.
void require_at_least(std::string_view option, long long value, long long minimum);
// "60", "60s", "5m", "1h" -> seconds; throws Error::usage naming `option`.
double parse_duration(std::string_view text, std::string_view option);

}  // namespace fabricbench::cli
