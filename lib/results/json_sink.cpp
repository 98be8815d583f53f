#include "fabricbench/results/json_sink.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "fabricbench/cli/ini_file.hpp"
#include "fabricbench/error.hpp"

namespace fabricbench::results {

std::string JsonSink::quoted(const std::string& text) {
  std::string out = "\"";
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (const auto n = cli::utf8_length(text, i); n > 1) {
      out.append(text, i, n);
      i += n - 1;
      continue;
    } else if (n == 0) {
      out += '?';  // a log's bytes that are not UTF-8
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20)
          out += fmt::format("\\u{:04x}", static_cast<unsigned char>(c));
        else
          out += c;
    }
  }
  return out + "\"";
}

void JsonSink::begin(const RunInfo& info) { info_ = info; }

void JsonSink::declare(const TableSpec& table) { spill(table.path()); }

JsonSink::Spill& JsonSink::spill(const std::string& path) {
  auto it = rows_.find(path);
  if (it != rows_.end()) return it->second;
  Spill s{std::unique_ptr<std::FILE, Close>(std::tmpfile())};
  if (!s.file) throw Error::runtime("--json: cannot create a temporary file for the rows");
  order_.push_back(path);
  return rows_.emplace(path, std::move(s)).first->second;
}

void JsonSink::row(const Row& row) {
  const auto& spec = row.spec();
  std::string object = "{";
  for (std::size_t i = 0; i < spec.columns.size(); ++i) {
    object += (i ? ", " : "") + quoted(spec.columns[i].name) + ": ";
    const Value& v = row[i];
    if (const auto* n = std::get_if<std::int64_t>(&v))
      object += std::to_string(*n);
    else if (const auto* d = std::get_if<double>(&v))
      object += std::isfinite(*d) ? fmt::format("{}", *d) : "null";
    else
      object += quoted(std::get<std::string>(v));
  }
  object += "}";
  auto& s = spill(spec.path());
  const std::string text = (s.rows++ ? ",\n      " : "\n      ") + object;
  if (std::fwrite(text.data(), 1, text.size(), s.file.get()) != text.size())
    throw Error::runtime("--json: writing the rows to a temporary file failed");
}

void JsonSink::finish(const std::string& status) {
  if (finished_) return;
  finished_ = true;
  std::string hosts;
  for (const auto& h : info_.hosts) hosts += (hosts.empty() ? "" : ", ") + quoted(h);
  std::string notes;
  for (const auto& n : notes_) notes += (notes.empty() ? "" : ",\n    ") + quoted(n);
  std::string doc = fmt::format(
      "{{\n  \"run\": {{\"tool\": {}, \"tool_version\": {}, \"command_line\": {}, \"started_at\": {}, \"finished_at\": "
      "{}, "
      "\"status\": {}, \"world_size\": {}, \"hosts\": [{}]}},\n  \"notes\": [{}{}],\n  \"tables\": {{",
      quoted(info_.tool), quoted(info_.tool_version), quoted(info_.command_line), quoted(info_.started_at),
      quoted(utc_timestamp()), quoted(status), info_.world_size, hosts, notes.empty() ? "" : "\n    ", notes);
  std::fwrite(doc.data(), 1, doc.size(), out_);
  std::vector<char> block(1 << 20);
  for (std::size_t t = 0; t < order_.size(); ++t) {
    auto& s = rows_.at(order_[t]);
    const std::string head = fmt::format("{}\n    {}: [", t ? "," : "", quoted(order_[t]));
    std::fwrite(head.data(), 1, head.size(), out_);
    std::rewind(s.file.get());
    for (std::size_t n; (n = std::fread(block.data(), 1, block.size(), s.file.get())) > 0;)
      std::fwrite(block.data(), 1, n, out_);
    std::fputs(s.rows ? "\n    ]" : "]", out_);
  }
  std::fputs("\n  }\n}\n", out_);
  std::fflush(out_);
}

}  // namespace fabricbench::results
