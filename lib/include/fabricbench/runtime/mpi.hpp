// MPI as fabricbench uses it: the session (init/finalize), an owned communicator, and error checking that
// turns MPI error codes into fabricbench::Error with the library's message and the rank.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace fabricbench::runtime {

// Throws Error::runtime("<what> failed on rank R: <MPI error string>").
[[noreturn]] void throw_mpi_error(int rc, const char* what);
// Inline so that hot loops pay one compare; the failure path is out of line.
inline void check_mpi(int rc, const char* what) {
  if (__builtin_expect(rc != MPI_SUCCESS, 0)) throw_mpi_error(rc, what);
}

// Owns MPI_Init/MPI_Finalize. Errors on MPI_COMM_WORLD are returned, not fatal, so they become exceptions with
// context. Only the main thread calls MPI (the watchdog thread never does).
class MpiSession {
 public:
  MpiSession(int& argc, char**& argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  static std::string library_version();

 private:
  int rank_ = 0;
  int size_ = 1;
};

// One owner of an MPI communicator (freed on destruction unless it is a predefined one).
class Communicator {
 public:
  static Communicator world();
  Communicator() = default;
  Communicator(Communicator&& other) noexcept;
  Communicator& operator=(Communicator&& other) noexcept;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  ~Communicator();

  // MPI_Comm_split: ranks with the same color form a communicator, ordered by key. MPI_UNDEFINED -> empty.
  Communicator split(int color, int key) const;
  // Ranks that share memory with this one (one communicator per host).
  Communicator split_by_host() const;

  MPI_Comm get() const { return comm_; }
  bool empty() const { return comm_ == MPI_COMM_NULL; }
  int rank() const;
  int size() const;
  void barrier() const;

  // Every rank's string, on every rank (ranks send strings of any length).
  std::vector<std::string> all_gather(const std::string& mine) const;
  // Every rank's string, on rank `root` only (empty elsewhere).
  std::vector<std::string> gather(const std::string& mine, int root) const;
  // Root's string on every rank.
  std::string broadcast(std::string value, int root) const;

  // Every rank's array of plain values (laps, records), on `root` only: one vector per rank, empty elsewhere.
  template <typename T>
  std::vector<std::vector<T>> gather_arrays(const std::vector<T>& mine, int root) const {
    static_assert(std::is_trivially_copyable_v<T>);
    std::vector<std::vector<T>> out;
    for (const auto& bytes :
         gather(std::string(reinterpret_cast<const char*>(mine.data()), mine.size() * sizeof(T)), root)) {
      out.emplace_back(bytes.size() / sizeof(T));
      if (!bytes.empty()) std::memcpy(out.back().data(), bytes.data(), bytes.size());
    }
    return out;
  }
  // Every rank's value, on `root` only.
  template <typename T>
  std::vector<T> gather_values(const T& mine, int root) const {
    std::vector<T> out;
    for (const auto& one : gather_arrays(std::vector<T>{mine}, root)) out.push_back(one.at(0));
    return out;
  }
  // Root's array of plain values (a plan's pairs, hosts) on every rank.
  template <typename T>
  std::vector<T> broadcast_array(const std::vector<T>& values, int root) const {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto bytes =
        broadcast(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T)), root);
    std::vector<T> out(bytes.size() / sizeof(T));
    if (!bytes.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
    return out;
  }
  // Root's value on every rank.
  template <typename T>
  T broadcast_value(const T& value, int root) const {
    static_assert(std::is_trivially_copyable_v<T>);
    T out = value;
    check_mpi(MPI_Bcast(&out, sizeof(T), MPI_BYTE, root, comm_), "MPI_Bcast");
    return out;
  }
  // The sum over ranks, on `root` only (MPI_Reduce), and on every rank.
  std::uint64_t sum(std::uint64_t mine, int root) const;
  std::uint64_t all_sum(std::uint64_t mine) const;

 private:
  explicit Communicator(MPI_Comm c, bool owned) : comm_(c), owned_(owned) {}
  MPI_Comm comm_ = MPI_COMM_NULL;
  bool owned_ = false;
};

// A barrier that waits without spinning (MPI_Ibarrier, tested every 200 us): a rank with nothing to do, such as a
// resting sweep host or the passive side of an RDMA write test, must not take the CPU from ranks still measuring
// (RIGS.md: a rank spinning in MPI_Barrier halved verbs throughput on 2 vCPUs).
void idle_barrier(MPI_Comm comm);

// A message of `bytes` bytes as (count, datatype) for MPI's int counts: MPI_BYTE up to INT_MAX bytes, above it one
// committed derived datatype covering the whole message (blocks of `block_bytes` plus the remainder), count 1.
// Owns that datatype. Messages of 2 GiB and more are thus sent whole, as one message, like the smaller ones.
class ByteMessage {
 public:
  static constexpr std::uint64_t block_bytes = std::uint64_t{1} << 30;
  explicit ByteMessage(std::uint64_t bytes);
  ByteMessage(ByteMessage&& other) noexcept;
  ByteMessage& operator=(ByteMessage&&) = delete;
  ByteMessage(const ByteMessage&) = delete;
  ByteMessage& operator=(const ByteMessage&) = delete;
  ~ByteMessage();

  int count() const { return count_; }
  MPI_Datatype type() const { return type_; }
  bool derived() const { return type_ != MPI_BYTE; }

  // How a message of `bytes` splits: whole blocks and the bytes after them (exposed for tests).
  struct Split {
    std::uint64_t blocks, remainder;
  };
  static Split split(std::uint64_t bytes) { return {bytes / block_bytes, bytes % block_bytes}; }

 private:
  int count_ = 0;
  MPI_Datatype type_ = MPI_BYTE;
};

}  // namespace fabricbench::runtime
