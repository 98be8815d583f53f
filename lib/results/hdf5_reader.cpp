#include "fabricbench/results/hdf5_reader.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "fabricbench/error.hpp"
#include "fabricbench/results/hdf5_sink.hpp"
#include "fabricbench/results/row_gather.hpp"

namespace fabricbench::results {
namespace {

H5Id open_file(const std::string& file) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  H5Id f(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  if (f.get() < 0) throw Error::usage(fmt::format("{}: not a readable HDF5 file", file));
  return f;
}

ssize_t read_fd(int fd, char* buffer, std::size_t size) {
  ssize_t n;
  while ((n = ::read(fd, buffer, size)) < 0 && errno == EINTR) {
  }
  return n;
}

// The file's size in bytes (0 when HDF5 cannot say).
std::size_t file_bytes(const H5Id& f) {
  hsize_t size = 0;
  return H5Fget_filesize(f.get(), &size) < 0 ? 0 : static_cast<std::size_t>(size);
}

std::vector<Row> read_rows_here(const std::string& file, const TableSpec& spec) {
  const auto f = open_file(file);
  const auto path = spec.path();
  if (H5Lexists(f.get(), spec.group.c_str(), H5P_DEFAULT) <= 0 || H5Lexists(f.get(), path.c_str(), H5P_DEFAULT) <= 0)
    return {};
  H5Id ds(H5Dopen2(f.get(), path.c_str(), H5P_DEFAULT));
  H5Id file_type(H5Dget_type(ds.get()));
  // The memory type: the spec's columns, by name.
  std::vector<std::size_t> offsets;
  std::size_t row_size = 0;
  std::vector<H5Id> members;
  for (const auto& c : spec.columns) {
    if (H5Tget_member_index(file_type.get(), c.name.c_str()) < 0)
      throw Error::usage(fmt::format("{}: {} has no column '{}'", file, path, c.name));
    offsets.push_back(row_size);
    if (c.type == ColumnType::text) {
      H5Id t(H5Tcopy(H5T_C_S1));
      H5Tset_size(t.get(), c.width);
      H5Tset_strpad(t.get(), H5T_STR_NULLPAD);
      H5Tset_cset(t.get(), H5T_CSET_UTF8);
      members.push_back(std::move(t));
      row_size += c.width;
    } else {
      members.emplace_back(H5Tcopy(c.type == ColumnType::integer ? H5T_NATIVE_INT64 : H5T_NATIVE_DOUBLE));
      row_size += 8;
    }
  }
  H5Id memory(H5Tcreate(H5T_COMPOUND, row_size));
  for (std::size_t i = 0; i < spec.columns.size(); ++i)
    H5Tinsert(memory.get(), spec.columns[i].name.c_str(), offsets[i], members[i].get());
  // A damaged file may say anything: one dimension only (more would be written past `n`), and no more rows than
  // the file could hold even compressed 1024 to 1.
  H5Id space(H5Dget_space(ds.get()));
  if (H5Sget_simple_extent_ndims(space.get()) != 1 || H5Tget_class(file_type.get()) != H5T_COMPOUND)
    throw Error::usage(fmt::format("{}: {} is not a table of rows (a damaged file?)", file, path));
  hsize_t n = 0;
  H5Sget_simple_extent_dims(space.get(), &n, nullptr);
  if (n > file_bytes(f) * 1024 / std::max<std::size_t>(1, H5Tget_size(file_type.get())) + 1024)  // compressed
    throw Error::usage(fmt::format("{}: {} claims {} rows, more than the file holds (a damaged file?)", file, path, n));
  std::vector<char> packed(row_size * n + 1);
  if (n && H5Dread(ds.get(), memory.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, packed.data()) < 0)
    throw Error::usage(fmt::format("{}: cannot read {}", file, path));
  std::vector<Row> rows;
  for (hsize_t r = 0; r < n; ++r) {
    Row row(spec);
    const char* at = packed.data() + r * row_size;
    for (std::size_t i = 0; i < spec.columns.size(); ++i) {
      const auto& c = spec.columns[i];
      if (c.type == ColumnType::text) {
        row.set(c.name, std::string(at + offsets[i], strnlen(at + offsets[i], c.width)));
      } else if (c.type == ColumnType::integer) {
        std::int64_t v;
        std::memcpy(&v, at + offsets[i], 8);
        row.set(c.name, v);
      } else {
        double v;
        std::memcpy(&v, at + offsets[i], 8);
        row.set(c.name, v);
      }
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string read_root_attribute_here(const std::string& file, const std::string& name) {
  const auto f = open_file(file);
  if (H5Aexists(f.get(), name.c_str()) <= 0) return {};
  H5Id attr(H5Aopen(f.get(), name.c_str(), H5P_DEFAULT));
  // One string only: a damaged file's attribute of several elements would be read past `value`.
  H5Id file_type(H5Aget_type(attr.get()));
  H5Id space(H5Aget_space(attr.get()));
  if (H5Tget_class(file_type.get()) != H5T_STRING || H5Sget_simple_extent_npoints(space.get()) != 1)
    throw Error::usage(fmt::format("{}: the attribute '{}' is not one text (a damaged file?)", file, name));
  H5Id type(H5Tcopy(H5T_C_S1));
  H5Tset_size(type.get(), H5T_VARIABLE);
  H5Tset_cset(type.get(), H5T_CSET_UTF8);
  char* value = nullptr;
  if (H5Aread(attr.get(), type.get(), &value) < 0) return {};
  std::string out = value ? value : "";
  H5free_memory(value);
  return out;
}

// HDF5 trusts what a file says: on a damaged file some versions read out of bounds and crash (1.10.10 in
// H5HG_read, following a corrupted heap reference of a text attribute). A user's file is therefore read in a child
// process: its rows come back packed (pack_rows) through a pipe, a usage error as its message, and a crash of the
// library as a usage error naming the file. The child makes no MPI call (HDF5 and the packing only) and leaves with
// _exit. (Open MPI may warn about fork() where openib memory is registered; this runs in configure, before the tool
// registers any buffer.) A damaged file can also make the library loop: the child is given kReadBound and then killed,
// and it dies with the tool (PR_SET_PDEATHSIG).
constexpr int kReadBound_s = 300;
template <typename Read>
std::string in_child(const std::string& file, Read&& read) {
  int pipe_fd[2];
  if (pipe(pipe_fd) != 0) return read();  // no pipe: read here, unguarded
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    close(pipe_fd[0]);
    close(pipe_fd[1]);
    return read();
  }
  if (pid == 0) {
    close(pipe_fd[0]);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    std::string out;
    int status = 0;
    try {
      out = read();
    } catch (const Error& e) {
      out = e.what();
      status = e.status() == ExitStatus::usage ? 2 : 3;
    } catch (const std::exception& e) {
      out = e.what();
      status = 3;
    }
    for (std::size_t at = 0; at < out.size();) {
      const auto n = write(pipe_fd[1], out.data() + at, out.size() - at);
      if (n <= 0) break;
      at += static_cast<std::size_t>(n);
    }
    _exit(status);
  }
  close(pipe_fd[1]);
  std::string got;
  char buffer[65536];
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(kReadBound_s);
  bool late = false;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    pollfd in{pipe_fd[0], POLLIN, 0};
    const int ready = left.count() > 0 ? poll(&in, 1, static_cast<int>(left.count())) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      late = true;
      kill(pid, SIGKILL);
      break;
    }
    const ssize_t n = read_fd(pipe_fd[0], buffer, sizeof buffer);
    if (n <= 0) break;
    got.append(buffer, static_cast<std::size_t>(n));
  }
  close(pipe_fd[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (late)
    throw Error::usage(
        fmt::format("{}: the HDF5 library did not finish reading it in {} s: a damaged file", file, kReadBound_s));
  if (WIFSIGNALED(status))
    throw Error::usage(
        fmt::format("{}: the HDF5 library crashed reading it (signal {}): a damaged file", file, WTERMSIG(status)));
  if (!WIFEXITED(status) || WEXITSTATUS(status) == 3) throw Error::runtime(fmt::format("{}: {}", file, got));
  if (WEXITSTATUS(status) == 2) throw Error::usage(got);
  return got;
}

}  // namespace

std::vector<Row> read_rows(const std::string& file, const TableSpec& spec) {
  return unpack_rows(spec, in_child(file, [&] { return pack_rows(spec, read_rows_here(file, spec)); }));
}

bool has_table(const std::string& file, const TableSpec& spec) {
  return in_child(file, [&] {
           const auto f = open_file(file);
           const bool there = H5Lexists(f.get(), spec.group.c_str(), H5P_DEFAULT) > 0 &&
                              H5Lexists(f.get(), spec.path().c_str(), H5P_DEFAULT) > 0;
           return std::string(there ? "1" : "0");
         }) == "1";
}

std::string read_root_attribute(const std::string& file, const std::string& name) {
  return in_child(file, [&] { return read_root_attribute_here(file, name); });
}

double read_root_number(const std::string& file, const std::string& name) {
  const auto text = in_child(file, [&] {
    const auto f = open_file(file);
    if (H5Aexists(f.get(), name.c_str()) <= 0) return std::string();
    H5Id attr(H5Aopen(f.get(), name.c_str(), H5P_DEFAULT));
    H5Id file_type(H5Aget_type(attr.get()));
    H5Id space(H5Aget_space(attr.get()));
    double value = NAN;
    if (H5Tget_class(file_type.get()) == H5T_FLOAT && H5Sget_simple_extent_npoints(space.get()) == 1 &&
        H5Aread(attr.get(), H5T_NATIVE_DOUBLE, &value) >= 0)
      return fmt::format("{:.17g}", value);  // exact through the pipe
    return std::string();
  });
  return text.empty() ? NAN : std::strtod(text.c_str(), nullptr);
}

}  // namespace fabricbench::results
