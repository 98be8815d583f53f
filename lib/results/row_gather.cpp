#include "fabricbench/results/row_gather.hpp"

#include <cstdint>
#include <cstring>
#include <iterator>
#include <stdexcept>

namespace fabricbench::results {
namespace {

template <typename T>
void put(std::string& out, const T& value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(T));
}

// Reads what `put` wrote, refusing to run past the end of what arrived.
class Reader {
 public:
  explicit Reader(const std::string& bytes) : bytes_(bytes) {}
  template <typename T>
  T get() {
    T value;
    std::memcpy(&value, take(sizeof(T)), sizeof(T));
    return value;
  }
  std::string text() {
    const auto size = get<std::uint32_t>();
    return std::string(take(size), size);
  }
  bool done() const { return at_ == bytes_.size(); }

 private:
  const char* take(std::size_t n) {
    if (bytes_.size() - at_ < n) throw std::logic_error("gather_rows: a rank sent a row shorter than its table");
    const char* p = bytes_.data() + at_;
    at_ += n;
    return p;
  }
  const std::string& bytes_;
  std::size_t at_ = 0;
};

}  // namespace

std::string pack_rows(const TableSpec& table, const std::vector<Row>& rows) {
  std::string bytes;
  for (const auto& row : rows) {
    if (row.spec().path() != table.path() || row.spec().columns.size() != table.columns.size())
      throw std::logic_error("pack_rows: a row of " + row.spec().path() + " given as one of " + table.path());
    for (std::size_t i = 0; i < table.columns.size(); ++i) {
      if (const auto* n = std::get_if<std::int64_t>(&row[i]))
        put(bytes, *n);
      else if (const auto* d = std::get_if<double>(&row[i]))
        put(bytes, *d);
      else {
        const auto& s = std::get<std::string>(row[i]);
        put(bytes, static_cast<std::uint32_t>(s.size()));
        bytes += s;
      }
    }
  }
  return bytes;
}

std::vector<Row> unpack_rows(const TableSpec& table, const std::string& bytes) {
  std::vector<Row> out;
  Reader in(bytes);
  while (!in.done()) {
    Row row(table);
    for (const auto& column : table.columns) {
      switch (column.type) {
        case ColumnType::integer:
          row.set(column.name, in.get<std::int64_t>());
          break;
        case ColumnType::real:
          row.set(column.name, in.get<double>());
          break;
        case ColumnType::text:
          row.set(column.name, in.text());
          break;
      }
    }
    out.push_back(std::move(row));
  }
  return out;
}

std::vector<Row> gather_rows(const runtime::Communicator& comm, const TableSpec& table, const std::vector<Row>& mine,
                             int root) {
  std::vector<Row> out;
  for (const auto& theirs : comm.gather(pack_rows(table, mine), root)) {
    auto rows = unpack_rows(table, theirs);
    out.insert(out.end(), std::make_move_iterator(rows.begin()), std::make_move_iterator(rows.end()));
  }
  return out;
}

}  // namespace fabricbench::results
