#include "fabricbench/cli/command_line.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "fabricbench/cli/ini_file.hpp"
#include "fabricbench/error.hpp"

namespace fabricbench::cli {
namespace {

// `-c 0` / `--check 1` as nccl-tests users type them: join a following 0/1 to the flag so that `--check`
// alone (OSU's habit) still means "on".
std::vector<std::string> join_check_values(int argc, char** argv) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if ((a == "-c" || a == "--check") && i + 1 < argc &&
        (std::string(argv[i + 1]) == "0" || std::string(argv[i + 1]) == "1"))
      a = "--check=" + std::string(argv[++i]);
    args.push_back(a);
  }
  return args;
}

std::string quote_if_needed(const std::string& s) {
  if (!s.empty() && s.find_first_of(" \t'\"\\$`") == std::string::npos) return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

void check_writable_path(std::string_view option, const std::string& path, bool force) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec))
    throw Error::usage(fmt::format("{} {}: is a directory; give a file path", option, path));
  if (fs::exists(path, ec) && !force)
    throw Error::usage(
        fmt::format("{} {}: file exists; choose another path or add --force to overwrite", option, path));
  const fs::path parent = fs::path(path).has_parent_path() ? fs::path(path).parent_path() : fs::path(".");
  if (!fs::is_directory(parent, ec))
    throw Error::usage(fmt::format("{} {}: directory {} does not exist", option, path, parent.string()));
  if (access(parent.c_str(), W_OK) != 0 || (fs::exists(path, ec) && access(path.c_str(), W_OK) != 0))
    throw Error::usage(fmt::format("{} {}: not writable", option, path));
}

}  // namespace

CommandLine::CommandLine(std::string program, std::string summary, OptionGroups groups)
    : program_(std::move(program)),
      summary_(std::move(summary)),
      groups_(std::move(groups)),
      run_desc_("Run options"),
      sizes_desc_("Message sizes and iterations"),
      osu_desc_("Equivalents for OSU micro-benchmark habits"),
      tool_(program_ + " options") {
  auto add = run_desc_.add_options();
  add(name("help", 'h').c_str(), "print this help and exit");
  add("version", "print the version and exit");
  add("output", po::value<std::string>(), "HDF5 results file; default fabricbench-<tool>-<UTC time>.h5 here");
  add("csv", po::value<std::string>(), "also write the results table as CSV (opens in Excel)");
  add("force", "overwrite existing --output/--csv files");
  add("config", po::value<std::string>(), "read options from an INI file (command line wins); see configs/");
  add("timeout", po::value<std::string>(), "fail with exit status 3 if one measurement takes longer: 60, 60s, 5m");
  add(name("quiet", 'q').c_str(), "print no table (the files are still written)");
  add("emulate-hosts", po::value<long long>(),
      "treat every R consecutive ranks of the job as one host, named node0, node1, ... (GPUs still chosen per "
      "machine): fabric-sweep's node and link verdicts, per-host expectations and checks on one machine");
  add("no-checks", "skip the cheap host checks at start (RDMA ports, THP, NCCL variables, hosts alike; /env/checks)");
  add("expected-rule", po::value<std::string>(),
      "when a bandwidth below its expected figure warns (INI); default: the shipped configs/expected.ini");
  if (!groups_.sizes) return;
  const auto& d = groups_.sizes->defaults;
  auto add_size = sizes_desc_.add_options();
  add_size(name("min-bytes", 'b').c_str(), po::value<std::string>(),
           fmt::format("smallest message size (nccl-tests -b); default {}", format_byte_size(d.min_bytes)).c_str());
  add_size(name("max-bytes", 'e').c_str(), po::value<std::string>(),
           fmt::format("largest message size (nccl-tests -e); default {}", format_byte_size(d.max_bytes)).c_str());
  add_size(name("step-factor", 'f').c_str(), po::value<long long>(),
           fmt::format("multiply the size by this each step (nccl-tests -f); default {}", d.step_factor).c_str());
  add_size("sizes", po::value<std::string>(),
           "explicit sizes '8,1K,4M' or a range 'MIN:MAX[:xFACTOR]' (instead of -b/-e/-f)");
  add_size(name("iters", 'n').c_str(), po::value<long long>(),
           "timed iterations per size (nccl-tests -n, OSU -i); default depends on the test and size");
  add_size(name("warmup", 'w').c_str(), po::value<long long>(),
           "untimed warm-up iterations per size (nccl-tests -w, OSU -x)");
  add_size("baseline", po::value<std::string>(),
           "exit 1 when a result is worse than this baseline (written by fabric-report baseline)");
  add_size(
      name("check", 'c').c_str(), po::value<int>()->implicit_value(1),
      fmt::format("validate received data: --check, -c 1 or -c 0; default {}", groups_.sizes->check_by_default ? 1 : 0)
          .c_str());
  auto add_osu = osu_desc_.add_options();
  add_osu(name("osu-m", 'm').c_str(), po::value<std::string>(), "OSU -m [MIN:]MAX: message size range");
  add_osu(name("osu-i", 'i').c_str(), po::value<long long>(), "OSU -i N: same as --iters");
  add_osu(name("osu-x", 'x').c_str(), po::value<long long>(), "OSU -x N: same as --warmup");
}

std::string CommandLine::name(const char* long_name, char short_name) const {
  if (groups_.claimed_short_flags.find(short_name) != std::string::npos) return long_name;
  return std::string(long_name) + "," + short_name;
}

std::string CommandLine::help() const {
  std::ostringstream out;
  out << summary_ << "\n\nUsage: mpirun -np N " << program_ << " [options]\n\n" << run_desc_ << "\n";
  if (groups_.sizes) out << sizes_desc_ << "\n" << osu_desc_ << "\n";
  if (!tool_.options().empty()) out << tool_ << "\n";
  return out.str();
}

bool CommandLine::parse(int argc, char** argv, bool print) {
  po::options_description all;
  all.add(run_desc_).add(tool_);
  if (groups_.sizes) all.add(sizes_desc_).add(osu_desc_);
  const auto args = groups_.sizes ? join_check_values(argc, argv) : std::vector<std::string>(argv + 1, argv + argc);
  common_.command_line = quote_if_needed(program_);
  for (const auto& a : args) common_.command_line += " " + quote_if_needed(a);
  try {
    po::store(po::command_line_parser(args).options(all).run(), values_);
    if (values_.count("config")) {
      const auto path = values_["config"].as<std::string>();
      if (access(path.c_str(), R_OK) != 0) throw Error::usage(fmt::format("--config {}: cannot read the file", path));
      require_text_file(path, "--config");
      try {
        const auto parsed = po::parse_config_file<char>(path.c_str(), all);
        config_path_ = path;
        for (const auto& option : parsed.options)  // the command line wins: only what it left unset comes from here
          if (!values_.count(option.string_key) || values_[option.string_key].defaulted())
            from_config_.push_back(option.string_key);
        po::store(parsed, values_);
      } catch (const po::error& e) {
        throw Error::usage(
            fmt::format("--config {}: {} (keys are the long option names; see {} --help)", path, e.what(), program_));
      }
    }
    po::notify(values_);
  } catch (const po::error& e) {
    throw Error::usage(fmt::format("{} (see {} --help)", e.what(), program_));
  }
  if (values_.count("help")) {
    if (print) std::cout << help();
    return false;
  }
  if (values_.count("version")) {
    if (print) std::cout << program_ << " " << FABRICBENCH_VERSION << "\n";
    return false;
  }
  try {
    read_common();
  } catch (const Error& e) {
    throw attributed(e);
  }
  return true;
}

Error CommandLine::attributed(const Error& e) const {
  const std::string what = e.what();
  if (e.status() != ExitStatus::usage || config_path_.empty() || what.rfind("--", 0) != 0) return e;
  const auto name = what.substr(2, what.find_first_of(" =:'", 2) - 2);
  if (std::find(from_config_.begin(), from_config_.end(), name) == from_config_.end()) return e;
  return Error::usage(fmt::format("--config {}: {}", config_path_, what));
}

void CommandLine::read_common() {
  const auto& v = values_;
  common_.from_config = from_config_;
  if (groups_.sizes) read_sizes(*groups_.sizes);
  if (v.count("output")) common_.output = v["output"].as<std::string>();
  if (v.count("csv")) common_.csv = v["csv"].as<std::string>();
  if (common_.output.empty() && v.count("output")) throw Error::usage("--output '': give a file path");
  common_.force = v.count("force") > 0;
  common_.quiet = v.count("quiet") > 0;
  common_.checks = v.count("no-checks") == 0;
  if (v.count("emulate-hosts")) {
    const auto r = v["emulate-hosts"].as<long long>();
    require_in_range("--emulate-hosts", r, 1, 1 << 20);
    common_.emulate_hosts = static_cast<int>(r);
  }
  if (v.count("expected-rule")) common_.expected_rule = v["expected-rule"].as<std::string>();
  if (v.count("baseline")) common_.baseline = v["baseline"].as<std::string>();
  if (v.count("timeout")) common_.timeout_s = parse_duration(v["timeout"].as<std::string>(), "--timeout");
}

void CommandLine::read_sizes(const SizeOptions& defaults) {
  const auto& v = values_;
  const auto& d = defaults.defaults;
  common_.has_sizes = true;
  const bool has_range = v.count("min-bytes") || v.count("max-bytes") || v.count("step-factor");
  const int size_ways = int(has_range) + int(v.count("sizes") > 0) + int(v.count("osu-m") > 0);
  if (size_ways > 1) throw Error::usage("--sizes, -m and -b/-e/-f each give the sizes: use only one of them");
  if (v.count("sizes")) {
    common_.sizes = SizeList::parse(v["sizes"].as<std::string>(), "--sizes");
    common_.sizes_option = "--sizes";
  } else if (v.count("osu-m")) {
    auto m = v["osu-m"].as<std::string>();
    if (m.find(':') == std::string::npos) m = fmt::format("{}:{}", d.min_bytes, m);
    common_.sizes = SizeList::parse(m, "-m");
    common_.sizes_option = "-m";
  } else {
    const auto min =
        v.count("min-bytes") ? parse_byte_size(v["min-bytes"].as<std::string>(), "--min-bytes") : d.min_bytes;
    const auto max =
        v.count("max-bytes") ? parse_byte_size(v["max-bytes"].as<std::string>(), "--max-bytes") : d.max_bytes;
    const auto factor =
        v.count("step-factor") ? v["step-factor"].as<long long>() : static_cast<long long>(d.step_factor);
    require_at_least("--step-factor", factor, 2);
    if (min > max)
      throw Error::usage(
          fmt::format("--min-bytes {} is larger than --max-bytes {}", format_byte_size(min), format_byte_size(max)));
    common_.sizes = SizeList::geometric(min, max, static_cast<std::uint64_t>(factor));
  }
  if (v.count("iters") && v.count("osu-i")) throw Error::usage("--iters and -i are the same option: give one");
  if (v.count("warmup") && v.count("osu-x")) throw Error::usage("--warmup and -x are the same option: give one");
  // Counts are ints in every loop and in MPI: a billion iterations is far beyond any sensible run.
  constexpr long long most = 1000000000;
  for (const char* name : {"iters", "osu-i"}) {
    if (!v.count(name)) continue;
    const auto n = v[name].as<long long>();
    require_in_range(std::string(name) == "iters" ? "--iters" : "-i", n, 1, most);
    common_.iterations = static_cast<int>(n);
  }
  for (const char* name : {"warmup", "osu-x"}) {
    if (!v.count(name)) continue;
    const auto n = v[name].as<long long>();
    require_in_range(std::string(name) == "warmup" ? "--warmup" : "-x", n, 0, most);
    common_.warmup = static_cast<int>(n);
  }
  common_.check = defaults.check_by_default;
  if (v.count("check")) {
    const int c = v["check"].as<int>();
    if (c != 0 && c != 1) throw Error::usage(fmt::format("--check {}: allowed values are 0 and 1", c));
    common_.check = c == 1;
  }
}

void CommandLine::resolve_outputs() {
  if (common_.output.empty()) {
    const auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
    gmtime_r(&t, &tm);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    std::string tool = program_.rfind("fabric-", 0) == 0 ? program_.substr(7) : program_;
    common_.output = fmt::format("fabricbench-{}-{}.h5", tool, stamp);
    for (int n = 1; std::filesystem::exists(common_.output); ++n)
      common_.output = fmt::format("fabricbench-{}-{}-{}.h5", tool, stamp, n);
  }
  check_writable_path("--output", common_.output, common_.force);
  if (!common_.csv.empty()) {
    check_writable_path("--csv", common_.csv, common_.force);
    if (std::filesystem::absolute(common_.csv) == std::filesystem::absolute(common_.output))
      throw Error::usage(fmt::format("--csv {}: the same path as --output", common_.csv));
  }
}

bool typed(const po::variables_map& values, const CommonOptions& common, const std::string& name) {
  return values.count(name) && !values[name].defaulted() &&
         std::find(common.from_config.begin(), common.from_config.end(), name) == common.from_config.end();
}

void require_at_least(std::string_view option, long long value, long long minimum) {
  if (value < minimum) throw Error::usage(fmt::format("{} {}: must be at least {}", option, value, minimum));
}

void require_at_most(std::string_view option, long long value, long long maximum) {
  if (value > maximum) throw Error::usage(fmt::format("{} {}: must be at most {}", option, value, maximum));
}

void require_in_range(std::string_view option, long long value, long long minimum, long long maximum) {
  require_at_least(option, value, minimum);
  require_at_most(option, value, maximum);
}

double parse_duration(std::string_view text, std::string_view option, bool zero_allowed) {
  std::size_t digits = 0;
  while (digits < text.size() && (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.'))
    ++digits;
  const auto unit = text.substr(digits);
  double scale = 0;
  if (unit.empty() || unit == "s")
    scale = 1;
  else if (unit == "m" || unit == "min")
    scale = 60;
  else if (unit == "h")
    scale = 3600;
  else if (unit == "ms")
    scale = 1e-3;
  double value = 0;
  try {
    std::size_t used = 0;
    value = digits ? std::stod(std::string(text.substr(0, digits)), &used) : -1;
    if (used != digits) value = -1;
  } catch (const std::exception&) {
    value = -1;
  }
  if (scale == 0 || value < 0 || (value == 0 && !zero_allowed) || !std::isfinite(value))
    throw Error::usage(fmt::format("{} '{}': give a {}duration such as {}30, 30s, 5m or 1h", option, text,
                                   zero_allowed ? "" : "positive ", zero_allowed ? "0, " : ""));
  return value * scale;
}

}  // namespace fabricbench::cli
