// MPI as fabricbench uses it: the session (init/finalize), an owned communicator, and error checking that
// turns MPI error codes into fabricbench::Error with the library's message and the rank.
#pragma once
#include <mpi.h>

#include <string>
#include <string_view>
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

 private:
  explicit Communicator(MPI_Comm c, bool owned) : comm_(c), owned_(owned) {}
  MPI_Comm comm_ = MPI_COMM_NULL;
  bool owned_ = false;
};

}  // namespace fabricbench::runtime
