#include "fabricbench/job/nccl_log.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <sstream>

namespace fabricbench::job {
namespace {

// "[0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB ..." -> {"mlx5_0:1/IB", "mlx5_1:1/RoCE"}
std::vector<std::string> indexed_list(std::string_view text) {
  std::vector<std::string> out;
  std::istringstream in(std::string(text.substr(0, text.find(';'))));
  for (std::string word; in >> word;) {
    if (word.size() < 4 || word[0] != '[' || !std::isdigit(static_cast<unsigned char>(word[1]))) continue;
    std::string item = word.substr(word.find(']') + 1);
    if (const auto lt = item.find('<'); lt != std::string::npos) item.erase(lt);
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// The text without trailing blanks and carriage returns.
std::string trimmed(std::string_view text) {
  while (!text.empty() && (text.back() == ' ' || text.back() == '\r')) text.remove_suffix(1);
  return std::string(text);
}

void add_unique(std::vector<std::string>& list, std::vector<std::string> items) {
  for (auto& item : items)
    if (std::find(list.begin(), list.end(), item) == list.end()) list.push_back(std::move(item));
}

constexpr std::string_view set_by_env = " set by environment to ";

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

}  // namespace

std::string NcclLog::channel_summary() const {
  std::vector<std::string> parts;
  for (const auto& [transport, n] : channels) parts.push_back(fmt::format("{} x{}", transport, n));
  return fmt::format("{}", fmt::join(parts, ", "));
}

bool NcclLog::read(std::string_view m) {
  if (starts_with(m, "NCCL version ")) {
    version = trimmed(m.substr(13));
  } else if (starts_with(m, "Using network ")) {
    network = trimmed(m.substr(14));
  } else if (starts_with(m, "NET/IB : No device found")) {
    ib_none = true;
  } else if (starts_with(m, "NET/IB : Using ")) {
    add_unique(ib_devices, indexed_list(m.substr(15)));
  } else if (starts_with(m, "NET/Socket : Using ")) {
    add_unique(socket_ifaces, indexed_list(m.substr(19)));
  } else if (starts_with(m, "Channel ") && m.find(" via ") != std::string_view::npos) {
    // One count per distinct (channel, peers) line: a log of several ranks repeats nothing then.
    const std::string line = trimmed(m);
    std::string_view transport = std::string_view(line).substr(line.find(" via ") + 5);
    transport = transport.substr(0, transport.find(' '));
    if (channel_lines_.insert(line).second) ++channels[std::string(transport)];
  } else if (const auto at = m.find(set_by_env); at != std::string_view::npos && starts_with(m, "NCCL_")) {
    std::string_view value = m.substr(at + set_by_env.size());
    while (!value.empty() && (value.back() == '.' || value.back() == ' ' || value.back() == '\r'))
      value.remove_suffix(1);
    variables[std::string(m.substr(0, at))] = std::string(value);
  } else if (const auto gdr = m.find(" : GPU Direct RDMA "); gdr != std::string_view::npos && starts_with(m, "NET/")) {
    // "NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0' (no module)"
    const auto open = m.find('\'', gdr), close = open == std::string_view::npos ? open : m.find('\'', open + 1);
    if (close == std::string_view::npos) return false;
    if (!starts_with(m, "NET/Socket"))
      gdr_support[std::string(m.substr(open + 1, close - open - 1))] = {
          m.substr(gdr + 19, 7) == "Enabled", trimmed(m.substr(std::min(close + 2, m.size())))};
  } else if (starts_with(m, "DMA-BUF is available")) {
    dmabuf = true;
  } else if (m.find("Init COMPLETE") != std::string_view::npos) {
    init_complete = true;
  } else {
    return false;
  }
  return true;
}

NcclLog parse_nccl_log(const std::string& text) {
  NcclLog log;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (const auto at = line.find("NCCL INFO "); at != std::string::npos)
      log.read(std::string_view(line).substr(at + 10));
  return log;
}

}  // namespace fabricbench::job
