// What a healthy system of one kind reached, measured: a curve of bus bandwidth against size per (path, link figure,
// ranks, op), shipped as data with its provenance (configs/expected-curves.csv, made by tests/perf/expected_gpu.py on
// the lent GPU machines). "% of expected" holds GPU-link rows against these curves: a link's figure times a fixed
// share is wrong for every op at once (2 x H200: all_reduce reaches 68% of NVLink's 478 GB/s at 1 GiB, all_gather
// 57%, sendrecv 75%, and every op far less at 4 MiB), and a curve calibrated on healthy runs is right by construction
// where it was measured. A setup without a curve is said to be uncalibrated, never guessed (docs/expected.md).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fabricbench::facts {

struct Curve {
  std::string path;      // the hardware path the ranks should use: "nvlink", "pcie"
  double link_gbps = 0;  // that path's figure per GPU when it was measured (NVLink: links x per-link speed)
  int ranks = 0;         // ranks of the communicator (one per GPU)
  std::string op;        // fabric-coll's operation name: all_reduce, all_gather, sendrecv, ...
  std::string source;    // provenance: GPUs, link, NCCL version, date, how many runs
  std::vector<std::pair<std::uint64_t, double>> points;  // (bytes, GB/s), ascending bytes, distinct

  // The healthy figure at `bytes`: straight lines between the measured sizes on log-log axes; past the largest size
  // its figure (bandwidth stops growing), below the smallest NaN (not measured).
  double at(std::uint64_t bytes) const;
};

// The data rows of a reference file (CSV: `header` first, lines starting with # comments, CR LF read as LF): each
// row's `fields` fields, the last the rest of the line (a source with commas; surrounding quotes taken off), with
// `where` ("<option> <file>:<line>") for a message. Error::usage naming the file for a wrong or missing header or a
// row with too few fields. Shared by the curves and the network references (expected_share.hpp).
void for_each_reference_row(const std::string& path, const std::string& option, const std::string& header,
                            std::size_t fields,
                            const std::function<void(const std::vector<std::string>&, const std::string&)>& row);

class CurveBook {
 public:
  // CSV with the header `path,link_gbps,ranks,op,bytes,gbps,source`; lines starting with # are comments. A curve is
  // the rows of one (path, link_gbps, ranks, op). Error::usage naming the file, line and the allowed values for an
  // unreadable file, a wrong header, a field that is not a number, a non-positive figure or a size given twice.
  static CurveBook load(const std::string& path);
  // The curve of `op` for `ranks` GPUs on `path` measured on a link figure within 2% of `link_gbps`; nullptr if none.
  const Curve* find(std::string_view path, double link_gbps, int ranks, std::string_view op) const;
  bool empty() const { return curves_.empty(); }
  const std::vector<Curve>& curves() const { return curves_; }

 private:
  std::vector<Curve> curves_;
};

}  // namespace fabricbench::facts
