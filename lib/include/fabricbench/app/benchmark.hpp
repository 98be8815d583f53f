// What an executable is to the harness: its option groups and options, its validation, its results table and its
// run. The harness (run_benchmark) does the rest the same way for all: MPI up, options parsed and agreed on by
// every rank before any file exists, outputs opened on rank 0, environment captured, watchdog, status written,
// exit status. A measuring tool adds its table of tests and its exchange; nothing else is its own.
#pragma once
#include <string>

#include "fabricbench/app/run_context.hpp"
#include "fabricbench/error.hpp"

namespace fabricbench::app {

// What a configured tool asks of the harness beyond a plain measuring run (the defaults): one value, so that the
// harness has no hook per tool. Rank 0's is what counts for the outputs; every rank's for the checks.
struct HarnessRequest {
  // Text that answers the command line without a run (fabric-doctor --list, fabric-sweep --dry-run): printed by rank
  // 0, exit 0, no file.
  std::string answer;
  // A run that continues an earlier one's file (fabric-sweep --resume): the harness appends to it instead of
  // creating --output, and captures no second /env.
  std::string resume_file;
  // One JSON document on stdout instead of the terminal table (fabric-doctor --json).
  bool json = false;
  // Whether the cheap checks of the hosts it runs on concern the run (fabric-doctor --nccl-log reads another job's
  // logs: its warnings would be about the wrong machine). /env is captured either way.
  bool checks_this_host = true;
};

class Benchmark {
 public:
  virtual ~Benchmark() = default;
  virtual std::string program() const = 0;  // "fabric-p2p"
  virtual std::string summary() const = 0;  // first lines of --help
  // The common option groups this tool takes (message sizes or not) and the short letters it claims.
  virtual cli::OptionGroups option_groups() const = 0;
  virtual void add_options(cli::po::options_description& options) = 0;
  // On every rank, before any output exists: read and validate the options (throw Error::usage).
  virtual void configure(const cli::po::variables_map& values, const cli::CommonOptions& common,
                         const runtime::Placement& placement) = 0;
  // The results table whose rows go to the terminal, HDF5 and CSV.
  virtual const results::TableSpec& table() const = 0;
  // What it asks of the harness, known after configure().
  virtual HarnessRequest request() const { return {}; }
  // The GPU this rank uses, or -1 (recorded in /env/ranks).
  virtual int gpu() const { return -1; }
  virtual ExitStatus run(const RunContext& context) = 0;
  // From the watchdog thread when a step hangs: abort library communicators (NCCL) so nothing stays stuck.
  virtual void abort() noexcept {}
};

// The whole life of an executable; returns the process exit status.
int run_benchmark(Benchmark& benchmark, int argc, char** argv);

}  // namespace fabricbench::app
