// Rows between ranks: the one format in which ranks send rank 0 what is not a plain value (facts of a host, the
// checks' findings). A row travels as its table declares it (integers and reals as 8 bytes, text with its length,
// never cut), so no tool writes a text codec of its own.
#pragma once
#include <string>
#include <vector>

#include "fabricbench/results/table.hpp"
#include "fabricbench/runtime/mpi.hpp"

namespace fabricbench::results {

// A row's bytes and back (what gather_rows sends); unpack_rows throws std::logic_error on bytes that end inside a row.
std::string pack_rows(const TableSpec& table, const std::vector<Row>& rows);
std::vector<Row> unpack_rows(const TableSpec& table, const std::string& bytes);

// Every rank's rows of `table`, on `root` in rank order (empty elsewhere). Collective over `comm`.
std::vector<Row> gather_rows(const runtime::Communicator& comm, const TableSpec& table, const std::vector<Row>& mine,
                             int root);

}  // namespace fabricbench::results
