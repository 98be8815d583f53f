// The option schema shared by every executable, in groups a tool declares: run options for all (output, CSV,
// config file, timeout, quiet, force); message sizes, iterations, warm-up and check only for tools that sweep
// message sizes. The executable's own group goes on top, and validation turns every bad value into one
// Error::usage line naming the option and what is allowed.
#pragma once
#include <boost/program_options.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fabricbench/cli/byte_size.hpp"
#include "fabricbench/error.hpp"

namespace fabricbench::cli {

namespace po = boost::program_options;

struct SizeDefaults {
  std::uint64_t min_bytes, max_bytes, step_factor;
};

// The message-size group: -b/-e/-f/--sizes, -n/--iters, -w/--warmup, -c/--check and OSU's -m/-i/-x.
struct SizeOptions {
  SizeDefaults defaults;
  bool check_by_default = false;
};

// Which common groups a tool takes. The run group is always there.
struct OptionGroups {
  std::optional<SizeOptions> sizes;  // none: the tool measures no message sizes and shows none of those options
  // Short letters the tool's own group uses with another meaning (perftest's -b, -q ...): the common options
  // keep only their long names then.
  std::string claimed_short_flags;
};

struct CommonOptions {
  bool has_sizes = false;  // the tool declared the size group
  SizeList sizes = SizeList::geometric(1, 1, 2);
  std::string sizes_option = "--max-bytes";  // the option that gave the sizes, for messages about them
  int iterations = 0;                        // 0: the executable's default (may depend on the size)
  int warmup = -1;                           // -1: the executable's default
  bool check = false;
  std::string output;  // empty until resolve_outputs(): then the path the HDF5 file will get
  std::string csv;
  bool force = false;
  double timeout_s = 0;  // 0: none
  bool quiet = false;
  bool checks = true;         // the cheap host checks at start (--no-checks turns them off)
  int emulate_hosts = 0;      // --emulate-hosts R: every R consecutive ranks one host; 0: the real hosts
  std::string expected_rule;  // --expected-rule FILE; empty: the shipped configs/expected.ini
  std::string baseline;       // --baseline FILE (tools with sizes); empty: none
  std::string command_line;
  std::vector<std::string> from_config;  // the options whose value came from --config (long names)
};

class CommandLine {
 public:
  CommandLine(std::string program, std::string summary, OptionGroups groups);

  // The executable's own options; add before parse().
  po::options_description& tool_options() { return tool_; }
  // Parses argv and --config. Returns false when --help or --version was asked for (printed when `print`).
  // Throws Error::usage on anything unknown or malformed.
  bool parse(int argc, char** argv, bool print);

  const po::variables_map& values() const { return values_; }
  // A usage error about an option whose value came from --config, as "--config FILE: --iters -1: ..." (the file
  // named); any other error as it is. parse() applies it to the common options, the harness to configure().
  Error attributed(const Error& e) const;
  const CommonOptions& common() const { return common_; }
  const std::string& program() const { return program_; }
  // What --help prints.
  std::string help() const;

  // Rank 0, before anything is created: default output name, refuse existing (without --force) or unwritable
  // paths. Throws Error::usage.
  void resolve_outputs();

 private:
  void read_common();
  void read_sizes(const SizeOptions& defaults);
  // "long,s" unless the tool claimed the letter s.
  std::string name(const char* long_name, char short_name) const;

  std::string program_, summary_;
  OptionGroups groups_;
  po::options_description run_desc_, sizes_desc_, osu_desc_, tool_;
  po::variables_map values_;
  CommonOptions common_;
  std::string config_path_;               // --config, once read
  std::vector<std::string> from_config_;  // the options it set
};

// Whether the user typed option `name` (its long name) on the command line: not its default, not a --config value.
// A tool refuses an option its mode does not use only then: a config file is a preset for every mode (OSU's window
// for latency and bandwidth alike) and sets what some of them use.
bool typed(const po::variables_map& values, const CommonOptions& common, const std::string& name);
// Throw Error::usage("<option> <value>: must be at least <minimum>" / "at most <maximum>").
void require_at_least(std::string_view option, long long value, long long minimum);
void require_at_most(std::string_view option, long long value, long long maximum);
void require_in_range(std::string_view option, long long value, long long minimum, long long maximum);
// "60", "60s", "5m", "1h" -> seconds; throws Error::usage naming `option` (for 0 too, unless `zero_allowed`).
double parse_duration(std::string_view text, std::string_view option, bool zero_allowed = false);

}  // namespace fabricbench::cli
