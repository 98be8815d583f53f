#include "fabricbench/app/benchmark.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <thread>

#include "fabricbench/app/shipped_files.hpp"
#include "fabricbench/env/environment.hpp"
#include "fabricbench/results/baseline.hpp"
#include "fabricbench/results/csv_sink.hpp"
#include "fabricbench/results/hdf5_sink.hpp"
#include "fabricbench/results/json_sink.hpp"
#include "fabricbench/results/printable.hpp"
#include "fabricbench/results/terminal_table.hpp"
#include "fabricbench/runtime/failure_report.hpp"

namespace fabricbench::app {
namespace {

// A failure while reporting a failure (a full disk) must not hide the first one.
void finish_quietly(results::ResultSet* out, const std::string& status) {
  if (!out) return;
  try {
    out->finish(status);
  } catch (const std::exception& e) {
    fmt::print(stderr, "also failed to record the status: {}\n", e.what());
  }
}

// Runs `step` on every rank and makes every rank agree: if any rank threw Error::usage, every rank throws the
// lowest failing rank's message, so all exit with status 2 together and rank 0 prints one line.
template <typename Step>
void agree(const runtime::Communicator& world, Step&& step) {
  std::string mine;
  try {
    step();
  } catch (const Error& e) {
    if (e.status() != ExitStatus::usage) throw;
    mine = e.what();
  }
  for (const auto& message : world.all_gather(mine))
    if (!message.empty()) throw Error::usage(message);
}

// --baseline: every row of the tool's table held against the baseline's entries; the lines of what fell below.
class BaselineCheck : public results::ResultSink {
 public:
  BaselineCheck(const results::Baseline& baseline, std::string table)
      : baseline_(baseline), table_(std::move(table)), used_(baseline.entry_count(), false) {}
  void begin(const results::RunInfo&) override {}
  void declare(const results::TableSpec&) override {}
  void row(const results::Row& row) override {
    if (row.spec().path() != table_) return;
    ++rows_;
    for (auto& line : baseline_.check(row, &used_)) failures_.push_back(std::move(line));
  }
  void finish(const std::string&) override {}
  const std::vector<std::string>& failures() const { return failures_; }
  // Entries of this table that no row matched (asked once the run is over).
  std::vector<std::string> unmatched() const { return baseline_.unmatched(table_, used_); }
  std::size_t rows() const { return rows_; }

 private:
  const results::Baseline& baseline_;
  std::string table_;
  std::vector<bool> used_;
  std::vector<std::string> failures_;
  std::size_t rows_ = 0;
};

// /failure/ranks: one row per rank, what it said (or that it said nothing), and whether it had started the step in
// flight (0: the one the others wait for; -1 unknown). Rows only; the status says the rest.
void write_failure_records(results::ResultSet* out, const std::vector<runtime::RankRecord>& records,
                           const std::vector<int>& started) {
  using namespace results;
  static const TableSpec table{"failure",
                               "ranks",
                               {key_int("rank"), setting_text("host", 64), setting_int("answered"),
                                setting_int("started"), setting_text("step", 256), setting_text("doing", 256),
                                setting_text("last_call", 64), setting_text("backtrace", 8192)}};
  static const struct {
    ColumnHandle<std::int64_t> rank, answered, started;
    ColumnHandle<std::string> host, step, doing, last_call, backtrace;
  } c{table.handle<std::int64_t>("rank"),     table.handle<std::int64_t>("answered"),
      table.handle<std::int64_t>("started"),  table.handle<std::string>("host"),
      table.handle<std::string>("step"),      table.handle<std::string>("doing"),
      table.handle<std::string>("last_call"), table.handle<std::string>("backtrace")};
  try {
    out->declare(table);
    std::vector<Row> rows;
    for (const auto& r : records) {
      const auto i = static_cast<std::size_t>(r.rank);
      rows.push_back(Row(table)
                         .set(c.rank, r.rank)
                         .set(c.host, r.host)
                         .set(c.answered, r.answered)
                         .set(c.started, i < started.size() ? started[i] : -1)
                         .set(c.step, r.step)
                         .set(c.doing, r.doing)
                         .set(c.last_call, r.last_call)
                         .set(c.backtrace, r.backtrace));
    }
    out->rows(rows);
  } catch (const std::exception& e) {
    fmt::print(stderr, "could not record the ranks' reports: {}\n", e.what());
  }
}

// Rank 0's outputs, opened only once every rank accepted the input: the terminal (or JSON lines), the HDF5 file (a
// --resume appends to the file it continues), the CSV, and the baseline check (`check`: owned by the result set).
std::unique_ptr<results::ResultSet> open_outputs(const Benchmark& benchmark, const cli::CommonOptions& options,
                                                 const HarnessRequest& request, const results::Baseline& baseline,
                                                 BaselineCheck*& check) {
  const std::string& resume = request.resume_file;
  auto out = std::make_unique<results::ResultSet>();
  if (request.json)
    out->add(std::make_unique<results::JsonSink>(stdout));
  else if (!options.quiet)
    out->add(std::make_unique<results::TerminalTable>());
  if (resume.empty())
    out->add(std::make_unique<results::Hdf5Sink>(options.output, options.force));
  else
    out->add(std::make_unique<results::Hdf5Sink>(resume, results::Hdf5Sink::Mode::append));
  if (!options.csv.empty()) out->add(std::make_unique<results::CsvSink>(options.csv, benchmark.table().path()));
  if (!baseline.empty()) {
    auto owned = std::make_unique<BaselineCheck>(baseline, benchmark.table().path());
    check = owned.get();
    out->add(std::move(owned));
  }
  return out;
}

// Datagrams that reached the failure side channel without the job's secret (or over its rate): someone outside the
// job knocked. Said once, summed over ranks. Collective.
void note_side_channel(const runtime::Communicator& world, const runtime::FailureReport& report,
                       results::ResultSet* out) {
  const auto counts = report.counts();
  const auto refused = world.sum(counts.refused, 0), answered = world.sum(counts.answered, 0);
  if (out && refused > 0)
    out->note(
        fmt::format("failure side channel: {} datagram(s) refused (without the job's secret, or over the rate), "
                    "{} request(s) answered",
                    refused, answered));
}

// Rank 0, --baseline: the rows below it and the entries no row matched, as notes (and on stderr with --quiet), and
// the summary line; false where any row was below or any entry unmatched.
bool report_baseline(results::ResultSet& out, const BaselineCheck& check, const results::Baseline& baseline, bool quiet,
                     const std::string& program) {
  for (const auto& line : check.failures()) {
    out.note("below baseline: " + line);
    if (quiet) fmt::print(stderr, "{}: below baseline: {}\n", program, results::printable(line));
  }
  const auto unmatched = check.unmatched();
  for (const auto& line : unmatched) {
    out.note("not measured: " + line);
    if (quiet) fmt::print(stderr, "{}: baseline entry not measured: {}\n", program, results::printable(line));
  }
  out.note(fmt::format("baseline {}: {} row(s) checked, {} value(s) below, {} entr{} matched no row", baseline.path(),
                       check.rows(), check.failures().size(), unmatched.size(), unmatched.size() == 1 ? "y" : "ies"));
  return check.failures().empty() && unmatched.empty();
}

// The watchdog's end of a run (a timeout, or a signal: little time, as mpirun follows SIGTERM with SIGKILL). Rank 0
// (`out` set) collects every rank's answer, names the ranks behind the step in flight, says why on stderr, writes
// /failure/ranks and closes the file as failed; the other ranks answer it.
void record_failure(const std::string& reason, results::ResultSet* out, runtime::FailureReport& report,
                    const runtime::Placement& placement, const runtime::ProgressBoard& board,
                    const std::string& program) {
  const bool signal = reason.rfind("terminated by signal", 0) == 0;
  if (!out) {
    report.answer(std::chrono::milliseconds(signal ? 900 : 3000));
    return;
  }
  auto records = report.collect(std::chrono::milliseconds(signal ? 700 : 2500));
  for (auto& r : records)
    if (!r.answered) r.host = placement.ranks()[static_cast<std::size_t>(r.rank)].host;
  const auto laggards = board.laggards(board.current_step());
  std::string why = reason;
  if (!laggards.empty()) why += "; " + laggards;
  why += "; " + runtime::FailureReport::summary(records);
  fmt::print(stderr, "{}: {}\n", program, why);
  write_failure_records(out, records, board.started_step(board.current_step()));
  finish_quietly(out, "failed: " + why);
}

// The run's opening attributes, and the rule rows are judged with: it travels with them (fabric-report reads it
// there, never the INI again).
void begin_outputs(results::ResultSet& out, const results::RunInfo& info, const facts::ExpectedRule& rule) {
  out.begin(info);
  out.attribute("expected_warn_below_percent", rule.warn_below_percent);
  out.attribute("expected_calibrated_warn_below_percent", rule.calibrated_warn_below_percent);
  out.attribute("expected_min_bytes", static_cast<double>(rule.min_bytes));
}

// The files the rows are judged by, read on every rank (a bad one refuses the run on all): --baseline, and
// --expected-rule or the shipped expected.ini.
struct JudgingFiles {
  results::Baseline baseline;
  facts::ExpectedRule expected_rule;
};

JudgingFiles read_judging_files(const runtime::Communicator& world, const cli::CommonOptions& common,
                                const results::TableSpec& table) {
  JudgingFiles files;
  agree(world, [&] {
    if (!common.baseline.empty()) files.baseline = results::Baseline::load(common.baseline, table);
  });
  agree(world, [&] {
    const auto& given = common.expected_rule;
    files.expected_rule =
        facts::ExpectedRule::load(given.empty() ? shipped_config("expected.ini") : given, !given.empty());
  });
  return files;
}

}  // namespace

int run_benchmark(Benchmark& benchmark, int argc, char** argv) {
  runtime::MpiSession mpi(argc, argv);
  const TestHooks& hooks = TestHooks::current();  // the environment's test hooks, read once, here
  const bool root = mpi.rank() == 0;
  const auto world = runtime::Communicator::world();
  const std::string program = benchmark.program();
  std::unique_ptr<results::ResultSet> out;
  BaselineCheck* baseline_check = nullptr;  // owned by `out`
  try {
    cli::CommandLine command_line(program, benchmark.summary(), benchmark.option_groups());
    benchmark.add_options(command_line.tool_options());
    bool go = true;
    agree(world, [&] { go = command_line.parse(argc, argv, root); });
    if (!go) return 0;
    const auto placement = runtime::Placement::discover(world, command_line.common().emulate_hosts, hooks.host_names);
    agree(world, [&] {
      try {
        benchmark.configure(command_line.values(), command_line.common(), placement);
      } catch (const Error& e) {
        throw command_line.attributed(e);  // a value from --config names the file
      }
    });
    const JudgingFiles judging = read_judging_files(world, command_line.common(), benchmark.table());
    const results::Baseline& baseline = judging.baseline;
    const facts::ExpectedRule& expected_rule = judging.expected_rule;
    HarnessRequest request = benchmark.request();
    if (!request.answer.empty()) {  // fabric-doctor --list, fabric-sweep --dry-run
      if (root) fmt::print("{}", request.answer);
      return 0;
    }
    if (!root) request.resume_file.clear();
    const std::string& resume = request.resume_file;
    agree(world, [&] {
      if (root && resume.empty()) command_line.resolve_outputs();
    });
    const auto& options = command_line.common();

    // Outputs exist only from here on, after every rank accepted the input.
    if (root) out = open_outputs(benchmark, options, request, baseline, baseline_check);
    runtime::ProgressBoard board(world);
    runtime::MainThreadBacktrace::install();
    runtime::FailureReport report(world, placement.me().host);
    runtime::Watchdog watchdog(
        [&](const std::string& reason) {
          benchmark.abort();
          record_failure(reason, out.get(), report, placement, board, program);
        },
        [&] { report.poll(); });
    if (out)
      begin_outputs(
          *out,
          {program, FABRICBENCH_VERSION, options.command_line, results::utc_timestamp(), mpi.size(), placement.hosts()},
          expected_rule);
    // A resumed run keeps the /env of its first part (the hosts were checked to be the same).
    const bool resumed = world.broadcast_value(static_cast<int>(!resume.empty()), 0) != 0;
    env::EnvReport environment;
    if (!resumed)
      environment = env::EnvironmentCapture().gather(world, placement, benchmark.gpu(), out.get(),
                                                     options.checks && request.checks_this_host);
    // One line per cheap check that warned or failed; the run goes on (fabric-doctor is where checks decide).
    if (out) {
      for (const auto& line : doctor::warning_lines(environment.checks))
        fmt::print(stderr, "{}: {}\n", program, results::printable(line));
      out->declare(benchmark.table());
    }
    const facts::ExpectedShare expected(environment.expected, expected_rule,
                                        options.has_sizes ? options.sizes.max() : 0);
    RunContext context{options, world,       placement, out.get(), watchdog, board,
                       report,  environment, expected,  program,   hooks};
    ExitStatus status = benchmark.run(context);
    world.barrier();
    note_side_channel(world, report, out.get());
    if (baseline_check && !report_baseline(*out, *baseline_check, baseline, options.quiet, program) &&
        status == ExitStatus::ok)
      status = ExitStatus::measurement_failed;
    if (out) {
      out->finish("complete");
      if (!options.quiet && !request.json)
        fmt::print("# results: {}{}\n# plots: fabric-report plot {}\n", resume.empty() ? options.output : resume,
                   options.csv.empty() ? "" : " and " + options.csv, resume.empty() ? options.output : resume);
    }
    return static_cast<int>(status);
  } catch (const Error& e) {
    if (e.status() == ExitStatus::usage) {
      if (root) fmt::print(stderr, "{}: {}\n", program, e.what());
      return static_cast<int>(ExitStatus::usage);
    }
    fmt::print(stderr, "{}: rank {}: {}\n", program, mpi.rank(), e.what());
    finish_quietly(out.get(), std::string("failed: ") + e.what());
    MPI_Abort(MPI_COMM_WORLD, static_cast<int>(e.status()));
    return static_cast<int>(e.status());
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: rank {}: internal error: {}\n", program, mpi.rank(), e.what());
    finish_quietly(out.get(), std::string("failed: internal error: ") + e.what());
    MPI_Abort(MPI_COMM_WORLD, static_cast<int>(ExitStatus::runtime));
    return static_cast<int>(ExitStatus::runtime);
  }
}

}  // namespace fabricbench::app
