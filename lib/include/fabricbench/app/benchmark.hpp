// What an executable is to the harness: its options, its validation, its results table and its run. The harness
// (run_benchmark) does the rest the same way for all: MPI up, options parsed and agreed on by every rank before
// any file exists, outputs opened on rank 0, environment captured, watchdog, status written, exit status.
#pragma once
#include <string>

#include "fabricbench/cli/command_line.hpp"
#include "fabricbench/error.hpp"
#include "fabricbench/results/sink.hpp"
#include "fabricbench/runtime/placement.hpp"
#include "fabricbench/runtime/progress_board.hpp"
#include "fabricbench/runtime/watchdog.hpp"

namespace fabricbench::app {

// Everything a running benchmark may use. `out` is null except on rank 0.
struct RunContext {
  const cli::CommonOptions& options;
  const runtime::Communicator& world;
  const runtime::Placement& placement;
  results::ResultSet* out;
  runtime::Watchdog& watchdog;
  runtime::ProgressBoard& board;

  bool is_root() const { return out != nullptr; }
  // Test hook FABRICBENCH_TEST_STALL=RANK:K: that rank stalls forever at its K-th measurement (from 0).
  int stall_rank = -1, stall_at = -1;
  mutable int measurements = 0;

  // One measurement: arms the watchdog with --timeout and tells the progress board this rank started it;
  // measured() tells it this rank finished. Outside timed regions only.
  void measuring(std::string what) const;
  void measured() const;
  // One line of progress on stderr (rank 0, not with --quiet).
  void progress(const std::string& line) const;
};

class Benchmark {
 public:
  virtual ~Benchmark() = default;
  virtual std::string program() const = 0;  // "fabric-p2p"
  virtual std::string summary() const = 0;  // first lines of --help
  virtual cli::SizeDefaults size_defaults() const = 0;
  virtual bool check_by_default() const = 0;
  virtual void add_options(cli::po::options_description& options) = 0;
  // On every rank, before any output exists: read and validate the options (throw Error::usage).
  virtual void configure(const cli::po::variables_map& values, const cli::CommonOptions& common,
                         const runtime::Placement& placement) = 0;
  // The results table whose rows go to the terminal, HDF5 and CSV.
  virtual const results::TableSpec& table() const = 0;
  // The GPU this rank uses, or -1 (recorded in /env/ranks).
  virtual int gpu() const { return -1; }
  virtual ExitStatus run(const RunContext& context) = 0;
  // From the watchdog thread when a step hangs: abort library communicators (NCCL) so nothing stays stuck.
  virtual void abort() noexcept {}
};

// The whole life of an executable; returns the process exit status.
int run_benchmark(Benchmark& benchmark, int argc, char** argv);

}  // namespace fabricbench::app
