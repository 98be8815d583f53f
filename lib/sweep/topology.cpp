#include "fabricbench/sweep/topology.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <sstream>

#include "fabricbench/cli/ini_file.hpp"
#include "fabricbench/error.hpp"

namespace fabricbench::sweep {
namespace {

constexpr std::size_t max_hosts_in_list = 1'000'000;

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool all_digits(std::string_view s) {
  return !s.empty() && s.size() <= 9 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The numbers of one bracket ("001-003,7") as zero-padded text.
std::vector<std::string> bracket_values(std::string_view inside, std::string_view where, std::string_view text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= inside.size()) {
    const auto comma = inside.find(',', start);
    const auto item = inside.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    const auto dash = item.find('-');
    const auto lo = item.substr(0, dash), hi = dash == std::string_view::npos ? lo : item.substr(dash + 1);
    if (!all_digits(lo) || !all_digits(hi))
      throw Error::usage(fmt::format("{}: '{}': a range in [] is N or N-M (digits)", where, text));
    const long a = std::stol(std::string(lo)), b = std::stol(std::string(hi));
    if (a > b) throw Error::usage(fmt::format("{}: '{}': range {}-{} runs backwards", where, text, a, b));
    if (static_cast<std::size_t>(b - a) + out.size() >= max_hosts_in_list)
      throw Error::usage(fmt::format("{}: '{}': more than {} names", where, text, max_hosts_in_list));
    for (long v = a; v <= b; ++v) out.push_back(fmt::format("{:0{}}", v, lo.size()));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

// One item without top-level commas: text and brackets, expanded as their product.
std::vector<std::string> expand_item(std::string_view item, std::string_view where) {
  std::vector<std::string> out{""};
  std::size_t i = 0;
  while (i < item.size()) {
    if (item[i] == '[') {
      const auto close = item.find(']', i);
      if (close == std::string_view::npos) throw Error::usage(fmt::format("{}: '{}': '[' without ']'", where, item));
      const auto values = bracket_values(item.substr(i + 1, close - i - 1), where, item);
      if (out.size() * values.size() > max_hosts_in_list)
        throw Error::usage(fmt::format("{}: '{}': more than {} names", where, item, max_hosts_in_list));
      std::vector<std::string> next;
      for (const auto& prefix : out)
        for (const auto& v : values) next.push_back(prefix + v);
      out = std::move(next);
      i = close + 1;
    } else {
      const auto c = item[i];
      if (c == ']') throw Error::usage(fmt::format("{}: '{}': ']' without '['", where, item));
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'))
        throw Error::usage(fmt::format("{}: '{}': a name has letters, digits, '-', '_' and '.'", where, item));
      for (auto& s : out) s += c;
      ++i;
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> expand_host_list(std::string_view text, std::string_view where) {
  std::vector<std::string> out;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= text.size(); ++i) {
    if (i < text.size() && text[i] == '[') ++depth;
    if (i < text.size() && text[i] == ']') --depth;
    if (i < text.size() && (text[i] != ',' || depth > 0)) continue;
    const auto item = text.substr(start, i - start);
    if (item.empty()) throw Error::usage(fmt::format("{}: '{}': an empty name in the list", where, text));
    for (auto& name : expand_item(item, where)) out.push_back(std::move(name));
    if (out.size() > max_hosts_in_list)
      throw Error::usage(fmt::format("{}: more than {} names", where, max_hosts_in_list));
    start = i + 1;
  }
  return out;
}

Topology Topology::read(const std::vector<std::string>& paths, const std::vector<std::string>& hosts, int rails) {
  Topology t(hosts);
  for (std::size_t k = 0; k < paths.size(); ++k) {
    cli::require_text_file(paths[k], "--topology");
    std::ifstream in(paths[k]);
    if (!in) throw Error::usage(fmt::format("--topology {}: cannot read the file", paths[k]));
    t.parse(in, paths[k], paths.size() > 1 ? static_cast<int>(k) : -1);
  }
  t.finish(rails);
  return t;
}

std::string Topology::where(const Switch& s) const { return fmt::format("{}:{}", files_[s.file], s.line); }

void Topology::parse(std::istream& in, std::string_view source, int rail_of_file) {
  files_.emplace_back(source);
  const int file = static_cast<int>(files_.size()) - 1;
  std::string text;
  for (int line = 1; std::getline(in, text); ++line) {
    const auto at = fmt::format("--topology {}:{}", source, line);
    if (const auto hash = text.find('#'); hash != std::string::npos) text.resize(hash);
    std::istringstream words(text);
    Switch s;
    s.line = line, s.file = file, s.rail = rail_of_file;
    std::vector<std::string> children;
    bool named = false, nodes = false, below = false, rail_given = false;
    for (std::string word; words >> word;) {
      const auto eq = word.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == word.size())
        throw Error::usage(
            fmt::format("{}: '{}': give KEY=VALUE (SwitchName, Nodes, Switches, Rail, LinkSpeed)", at, word));
      const auto key = lower(std::string_view(word).substr(0, eq));
      const auto value = std::string_view(word).substr(eq + 1);
      if (key == "switchname") {
        if (named) throw Error::usage(fmt::format("{}: SwitchName given twice", at));
        for (char c : value)
          if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'))
            throw Error::usage(fmt::format("{}: SwitchName '{}': letters, digits, '-', '_' and '.'", at, value));
        s.name = value, named = true;
      } else if (key == "nodes") {
        if (nodes) throw Error::usage(fmt::format("{}: Nodes given twice", at));
        nodes = true;
        if (host_index_.size() != hosts_.size()) {  // name -> index, made once: files name thousands of hosts
          host_index_.clear();
          for (std::size_t i = 0; i < hosts_.size(); ++i) host_index_.emplace(hosts_[i], static_cast<int>(i));
        }
        for (const auto& h : expand_host_list(value, at))
          if (const auto it = host_index_.find(h); it != host_index_.end()) s.hosts.push_back(it->second);
      } else if (key == "switches") {
        if (below) throw Error::usage(fmt::format("{}: Switches given twice", at));
        below = true;
        children = expand_host_list(value, at);
      } else if (key == "rail") {
        if (rail_given) throw Error::usage(fmt::format("{}: Rail given twice", at));
        rail_given = true;
        if (!all_digits(value) || std::stol(std::string(value)) > 63)
          throw Error::usage(fmt::format("{}: Rail={}: give a rail number from 0 to 63", at, value));
        const int r = static_cast<int>(std::stol(std::string(value)));
        if (rail_of_file >= 0 && r != rail_of_file)
          throw Error::usage(fmt::format("{}: Rail={} in the file of rail {} (with several files, file k is rail k)",
                                         at, r, rail_of_file));
        s.rail = r;
      } else if (key == "linkspeed") {
        if (!all_digits(value)) throw Error::usage(fmt::format("{}: LinkSpeed={}: give a whole number", at, value));
      } else {
        throw Error::usage(fmt::format("{}: unknown key '{}'; allowed: SwitchName, Nodes, Switches, Rail, LinkSpeed",
                                       at, std::string_view(word).substr(0, eq)));
      }
    }
    if (!named && (nodes || below || rail_given)) throw Error::usage(fmt::format("{}: a line without SwitchName=", at));
    if (!named) continue;  // blank or comment
    if (nodes == below)
      throw Error::usage(
          fmt::format("{}: switch {}: give either Nodes= (a leaf) or Switches= (a switch above leaves)", at, s.name));
    for (const auto& other : switches_)
      if (other.name == s.name)
        throw Error::usage(fmt::format("{}: switch {} was declared at {}", at, s.name, where(other)));
    switches_.push_back(std::move(s));
    child_names_.push_back(std::move(children));
  }
}

void Topology::finish(int rails) {
  std::map<std::string, int> index;
  for (std::size_t i = 0; i < switches_.size(); ++i) index[switches_[i].name] = static_cast<int>(i);
  for (std::size_t i = 0; i < switches_.size(); ++i)
    for (const auto& name : child_names_[i]) {
      const auto it = index.find(name);
      auto& s = switches_[i];
      if (it == index.end())
        throw Error::usage(fmt::format("--topology {}: switch {}: Switches= names {}, which no line declares", where(s),
                                       s.name, name));
      auto& child = switches_[static_cast<std::size_t>(it->second)];
      if (child.parent >= 0 && child.parent != static_cast<int>(i))
        throw Error::usage(fmt::format("--topology {}: switch {} is already under {} ({})", where(s), name,
                                       switches_[static_cast<std::size_t>(child.parent)].name,
                                       where(switches_[static_cast<std::size_t>(child.parent)])));
      child.parent = static_cast<int>(i);
      s.children.push_back(it->second);
    }
  // A cycle: following parents from any switch comes back to it.
  for (std::size_t i = 0; i < switches_.size(); ++i) {
    int at = switches_[i].parent;
    for (std::size_t steps = 0; at >= 0; ++steps, at = switches_[static_cast<std::size_t>(at)].parent)
      if (at == static_cast<int>(i) || steps > switches_.size())
        throw Error::usage(fmt::format("--topology {}: switch {} is below itself (a cycle through Switches=)",
                                       where(switches_[i]), switches_[i].name));
  }
  // Each job host: exactly one leaf per rail (one pass over the leaves' hosts, not one per host).
  const auto n = hosts_.size();
  std::vector<int> index_of(n * static_cast<std::size_t>(std::max(rails, 0)), -1);
  for (int r = 0; r < rails; ++r)
    for (std::size_t i = 0; i < switches_.size(); ++i) {
      const auto& s = switches_[i];
      if (!s.leaf() || (s.rail >= 0 && s.rail != r)) continue;
      for (int h : s.hosts) {
        auto& found = index_of[static_cast<std::size_t>(h) * rails + r];
        if (found >= 0 && found != static_cast<int>(i))
          throw Error::usage(fmt::format("--topology {}: host {} is under leaf {} and leaf {} ({}) on rail {}",
                                         where(s), hosts_[static_cast<std::size_t>(h)], s.name,
                                         switches_[static_cast<std::size_t>(found)].name,
                                         where(switches_[static_cast<std::size_t>(found)]), r));
        found = static_cast<int>(i);
      }
    }
  for (int r = 0; r < rails; ++r)
    for (std::size_t h = 0; h < n; ++h)
      if (index_of[h * rails + r] < 0)
        throw Error::usage(fmt::format("--topology {}: host {} of the job is under no leaf (Nodes=) on rail {}",
                                       fmt::join(files_, ","), hosts_[h], r));
  leaf_index_ = std::move(index_of);
  indexed_rails_ = std::max(rails, 0);
}

int Topology::leaf_of(int host, int rail) const {
  if (host >= 0 && rail >= 0 && rail < indexed_rails_ && static_cast<std::size_t>(host) < hosts_.size())
    return leaf_index_[static_cast<std::size_t>(host) * indexed_rails_ + rail];
  for (std::size_t i = 0; i < switches_.size(); ++i) {
    const auto& s = switches_[i];
    if (s.leaf() && (s.rail < 0 || s.rail == rail) && std::find(s.hosts.begin(), s.hosts.end(), host) != s.hosts.end())
      return static_cast<int>(i);
  }
  return -1;
}

std::vector<int> Topology::leaves(int rail) const {
  std::vector<int> out;
  for (std::size_t i = 0; i < switches_.size(); ++i) {
    const auto& s = switches_[i];
    if (s.leaf() && (s.rail < 0 || s.rail == rail) && !s.hosts.empty()) out.push_back(static_cast<int>(i));
  }
  return out;
}

std::string Topology::parent_name(int leaf) const {
  const int p = switches_[static_cast<std::size_t>(leaf)].parent;
  return p < 0 ? std::string() : switches_[static_cast<std::size_t>(p)].name;
}

}  // namespace fabricbench::sweep
