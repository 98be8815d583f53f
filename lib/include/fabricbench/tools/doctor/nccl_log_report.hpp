// What fabric-doctor --nccl-log reports from a job's NCCL logs (job::NcclJobLog): the transport findings of each
// process (the rules of nccl_log.hpp on what the log alone says), and the tables of processes, calls per kind (in total
// and per iteration), their size bins and the iterations' summary. Each row carries `alike`, the ranks whose rows of
// that table are the same, so that the terminal shows one row for them while the file keeps every rank's.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fabricbench/doctor/findings.hpp"
#include "fabricbench/job/nccl_job_log.hpp"
#include "fabricbench/results/table.hpp"

namespace fabricbench::tools::doctor {
// What it takes from lib/doctor/ (this namespace hides that one's name).
using fabricbench::doctor::Finding;

// /doctor/nccl_ranks, /doctor/nccl_calls (iteration -1: the whole log, s >= 0: after the s-th marker line),
// /doctor/nccl_sizes, /doctor/nccl_iterations.
struct NcclLogTables {
  results::TableSpec ranks, calls, sizes, iterations;
  NcclLogTables();

  // Their columns as handles, made with the tables. Each table starts with host, rank and pid and ends with alike.
  using Text = results::ColumnHandle<std::string>;
  using Int = results::ColumnHandle<std::int64_t>;
  struct Who {
    Text host, alike;
    Int rank, pid;
  };
  struct RankColumns : Who {
    Int device, nranks, communicators, lines, calls, warnings;
    Text version, network, ib_devices, socket_interfaces, channels, first_warning, file;
  } ranks_col;
  struct CallColumns : Who {
    Text kind;
    Int iteration, calls, bytes;
  } calls_col;
  struct SizeColumns : Who {
    Text kind, range;
    Int bin, calls, bytes;
  } sizes_col;
  struct IterationColumns : Who {
    Text kind, differing_iterations;
    Int iterations, median_calls, min_calls, max_calls, median_bytes, differing;
  } iterations_col;
};

// nccl.transport for each of `processes` (in their order), from its log alone (NcclContext::host_facts false; hosts:
// those in the logs), and its NCCL WARN lines.
std::vector<std::vector<Finding>> transport_findings(const job::NcclJobLog& job,
                                                     const std::vector<const job::NcclProcess*>& processes);

// "0-7,12": ranks as ranges; a process without a rank is named host:pid.
std::string rank_label(const std::vector<const job::NcclProcess*>& processes);
std::string process_name(const job::NcclProcess& process);

// A table's rows and which of them the terminal shows (one process per group of alike processes).
struct ReportRows {
  std::vector<results::Row> shown, hidden;
};
struct NcclLogReport {
  ReportRows ranks, calls, sizes, iterations;
  std::vector<std::vector<const job::NcclProcess*>> transport_groups;  // processes whose INIT/NET lines agree
};
NcclLogReport report_rows(const NcclLogTables& tables, const job::NcclJobLog& job,
                          const std::vector<const job::NcclProcess*>& processes);
// The rows of /doctor/nccl_calls per piece between marker lines (iteration 0 .. markers), handed to `write` `batch`
// at a time: a long job has millions, never all in memory at once.
void piece_rows(const NcclLogTables& tables, const job::NcclJobLog& job,
                const std::vector<const job::NcclProcess*>& processes,
                const std::function<void(const std::vector<results::Row>&)>& write, std::size_t batch = 16384);

}  // namespace fabricbench::tools::doctor
