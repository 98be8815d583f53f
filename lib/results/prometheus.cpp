#include "fabricbench/results/prometheus.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "fabricbench/error.hpp"
#include "fabricbench/results/printable.hpp"

namespace fabricbench::results {
namespace {

std::string metric_name(const std::string& text) {
  std::string name = "fabricbench_" + text;
  for (auto& c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) c = '_';
  return name;
}

std::string help_text(const std::string& text) {
  std::string out;
  for (char c : text) out += c == '\\' ? "\\\\" : c == '\n' ? "\\n" : std::string(1, c);
  return out;
}

}  // namespace

std::string Exposition::escape(const std::string& value) {
  // Control bytes and bytes that are not UTF-8 as visible text first: one value that is not UTF-8 (a communicator
  // hash a server sent) would make the whole file invalid to the collector.
  std::string out;
  for (char c : printable(value)) out += c == '\\' ? "\\\\" : c == '"' ? "\\\"" : c == '\n' ? "\\n" : std::string(1, c);
  return out;
}

std::string Exposition::number(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value == std::trunc(value) && std::fabs(value) < 1e15) return fmt::format("{}", static_cast<long long>(value));
  return fmt::format("{}", value);  // fmt's shortest round-trip form
}

void Exposition::add(const std::string& name, const std::string& help, const Labels& labels, double value) {
  if (std::isnan(value)) return;
  const auto full = metric_name(name);
  auto it = std::find_if(families_.begin(), families_.end(), [&](const Family& f) { return f.name == full; });
  if (it == families_.end()) it = families_.insert(families_.end(), Family{full, help, {}, {}});
  std::string body = fmt::format("tool=\"{}\"", escape(tool_));
  for (const auto& [key, text] : labels)
    if (!text.empty()) body += fmt::format(",{}=\"{}\"", key, escape(text));
  if (!it->samples.count(body)) it->order.push_back(body);
  it->samples[body] = value;
}

std::string Exposition::text() const {
  std::string out;
  for (const auto& f : families_) {
    out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n", f.name, help_text(f.help), f.name);
    for (const auto& body : f.order) out += fmt::format("{}{{{}}} {}\n", f.name, body, number(f.samples.at(body)));
  }
  return out;
}

void Exposition::check_writable(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error::usage(fmt::format("--prometheus {}: a folder; give a file ending in .prom", path));
  // What write() does first, tried now: a path that can never be written is refused before the run, not warned about
  // after every pass.
  const auto tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0)
    throw Error::usage(
        fmt::format("--prometheus {}: cannot create a file beside it ({}); give a .prom file in a "
                    "writable folder",
                    path, std::strerror(errno)));
  ::close(fd);
  std::remove(tmp.c_str());
}

void Exposition::write(const std::string& path) const {
  const auto tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  {
    std::ofstream file(tmp, std::ios::trunc);
    file << text();
    file.flush();
    if (!file) {
      const int error = errno;
      std::remove(tmp.c_str());
      throw Error::runtime(fmt::format("--prometheus {}: cannot write {} ({})", path, tmp, std::strerror(error)));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    std::remove(tmp.c_str());
    throw Error::runtime(fmt::format("--prometheus {}: cannot rename {} to it ({})", path, tmp, std::strerror(error)));
  }
}

}  // namespace fabricbench::results
