// Prometheus' text exposition format (0.0.4) for node_exporter's textfile collector, as fabric-report metrics
// writes it (analysis/fabricbench_analysis/metrics.py): every family a gauge with one HELP and TYPE line, names under
// `fabricbench_`, label values escaped, every series labelled with the tool. Written to a temporary file in the same
// folder and renamed, so the collector never reads half a file. fabric-sweep --prometheus rewrites it after each pass.
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace fabricbench::results {

class Exposition {
 public:
  using Labels = std::vector<std::pair<std::string, std::string>>;
  explicit Exposition(std::string tool) : tool_(std::move(tool)) {}
  // One sample of family fabricbench_<name>; a NaN value is left out (as the Python writer does), an empty label
  // value too; a second sample with the same labels replaces the first.
  void add(const std::string& name, const std::string& help, const Labels& labels, double value);
  std::string text() const;
  // Writes text() to `path` through PATH.tmp.<pid> (not ending in .prom) and a rename. Throws Error::runtime.
  void write(const std::string& path) const;
  // Throws Error::usage "--prometheus PATH: ..." where `path` is a folder or no file can be created beside it.
  static void check_writable(const std::string& path);

  // A label value as the format needs it: valid UTF-8 with control bytes shown as text (results::printable), then
  // backslash and double quote escaped.
  static std::string escape(const std::string& value);
  // 1e-06, 12, NaN, +Inf: the shortest text that reads back as the same double.
  static std::string number(double value);

 private:
  struct Family {
    std::string name, help;
    std::map<std::string, double> samples;  // by the label text, in insertion order below
    std::vector<std::string> order;
  };
  std::string tool_;
  std::vector<Family> families_;
};

}  // namespace fabricbench::results
