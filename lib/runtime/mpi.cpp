#include "fabricbench/runtime/mpi.hpp"

#include <fmt/format.h>

#include <chrono>
#include <climits>
#include <numeric>
#include <thread>
#include <utility>

#include "fabricbench/error.hpp"

namespace fabricbench::runtime {

void throw_mpi_error(int rc, const char* what) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  throw Error::runtime(fmt::format("{} failed on rank {}: {}", what, rank, std::string(text, len)));
}

MpiSession::MpiSession(int& argc, char**& argv) {
  // Plain MPI_Init (thread level SINGLE), as OSU and nccl-tests do: Open MPI 4.1 switches on its internal locking
  // for any higher level, which measured +60 ns per 8 B ping-pong over shared memory (+40% latency). Only the main
  // thread ever calls MPI; the watchdog thread never does.
  check_mpi(MPI_Init(&argc, &argv), "MPI_Init");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

std::string MpiSession::library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(text, &len);
  std::string v(text, len);
  if (auto nl = v.find_first_of("\r\n,"); nl != std::string::npos) v.resize(nl);
  return v;
}

Communicator Communicator::world() { return Communicator(MPI_COMM_WORLD, false); }

Communicator::Communicator(Communicator&& other) noexcept
    : comm_(std::exchange(other.comm_, MPI_COMM_NULL)), owned_(std::exchange(other.owned_, false)) {}

Communicator& Communicator::operator=(Communicator&& other) noexcept {
  if (this != &other) {
    Communicator old(std::move(*this));
    comm_ = std::exchange(other.comm_, MPI_COMM_NULL);
    owned_ = std::exchange(other.owned_, false);
  }
  return *this;
}

Communicator::~Communicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owned_ && comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm_);
}

Communicator Communicator::split(int color, int key) const {
  MPI_Comm out = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split(comm_, color, key, &out), "MPI_Comm_split");
  if (out != MPI_COMM_NULL) MPI_Comm_set_errhandler(out, MPI_ERRORS_RETURN);
  return Communicator(out, true);
}

Communicator Communicator::split_by_host() const {
  MPI_Comm out = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank(), MPI_INFO_NULL, &out), "MPI_Comm_split_type");
  MPI_Comm_set_errhandler(out, MPI_ERRORS_RETURN);
  return Communicator(out, true);
}

int Communicator::rank() const {
  int r = 0;
  check_mpi(MPI_Comm_rank(comm_, &r), "MPI_Comm_rank");
  return r;
}

int Communicator::size() const {
  int s = 0;
  check_mpi(MPI_Comm_size(comm_, &s), "MPI_Comm_size");
  return s;
}

void Communicator::barrier() const { check_mpi(MPI_Barrier(comm_), "MPI_Barrier"); }

void idle_barrier(MPI_Comm comm) {
  MPI_Request request;
  check_mpi(MPI_Ibarrier(comm, &request), "MPI_Ibarrier");
  for (int done = 0;;) {
    check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done) return;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

namespace {
// Shared by gather and all_gather: lengths first, then the characters with displacements.
std::vector<std::string> split_by_lengths(const std::vector<char>& all, const std::vector<int>& lengths) {
  std::vector<std::string> out;
  std::size_t offset = 0;
  for (int len : lengths) {
    out.emplace_back(all.data() + offset, static_cast<std::size_t>(len));
    offset += static_cast<std::size_t>(len);
  }
  return out;
}
std::vector<int> displacements(const std::vector<int>& lengths) {
  std::vector<int> d(lengths.size(), 0);
  if (!lengths.empty()) std::partial_sum(lengths.begin(), lengths.end() - 1, d.begin() + 1);
  return d;
}
}  // namespace

std::vector<std::string> Communicator::all_gather(const std::string& mine) const {
  const int n = size();
  int len = static_cast<int>(mine.size());
  std::vector<int> lengths(n);
  check_mpi(MPI_Allgather(&len, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm_), "MPI_Allgather");
  const auto displ = displacements(lengths);
  std::vector<char> all(static_cast<std::size_t>(displ.back() + lengths.back()) + 1);
  check_mpi(MPI_Allgatherv(mine.data(), len, MPI_CHAR, all.data(), lengths.data(), displ.data(), MPI_CHAR, comm_),
            "MPI_Allgatherv");
  return split_by_lengths(all, lengths);
}

std::vector<std::string> Communicator::gather(const std::string& mine, int root) const {
  const int n = size();
  const bool is_root = rank() == root;
  int len = static_cast<int>(mine.size());
  std::vector<int> lengths(is_root ? n : 0);
  check_mpi(MPI_Gather(&len, 1, MPI_INT, lengths.data(), 1, MPI_INT, root, comm_), "MPI_Gather");
  std::vector<int> displ = is_root ? displacements(lengths) : std::vector<int>{};
  std::vector<char> all(is_root ? static_cast<std::size_t>(displ.back() + lengths.back()) + 1 : 1);
  check_mpi(MPI_Gatherv(mine.data(), len, MPI_CHAR, all.data(), lengths.data(), displ.data(), MPI_CHAR, root, comm_),
            "MPI_Gatherv");
  return is_root ? split_by_lengths(all, lengths) : std::vector<std::string>{};
}

std::string Communicator::broadcast(std::string value, int root) const {
  int len = static_cast<int>(value.size());
  check_mpi(MPI_Bcast(&len, 1, MPI_INT, root, comm_), "MPI_Bcast");
  value.resize(static_cast<std::size_t>(len));
  check_mpi(MPI_Bcast(value.data(), len, MPI_CHAR, root, comm_), "MPI_Bcast");
  return value;
}

std::uint64_t Communicator::sum(std::uint64_t mine, int root) const {
  std::uint64_t total = 0;
  check_mpi(MPI_Reduce(&mine, &total, 1, MPI_UINT64_T, MPI_SUM, root, comm_), "MPI_Reduce");
  return total;
}

std::uint64_t Communicator::all_sum(std::uint64_t mine) const {
  std::uint64_t total = 0;
  check_mpi(MPI_Allreduce(&mine, &total, 1, MPI_UINT64_T, MPI_SUM, comm_), "MPI_Allreduce");
  return total;
}

ByteMessage::ByteMessage(std::uint64_t bytes) {
  if (bytes <= static_cast<std::uint64_t>(INT_MAX)) {
    count_ = static_cast<int>(bytes);
    return;
  }
  const auto [blocks, remainder] = split(bytes);
  if (blocks > static_cast<std::uint64_t>(INT_MAX))
    throw Error::usage(fmt::format("a message of {} bytes is beyond what MPI can describe", bytes));
  MPI_Datatype block = MPI_DATATYPE_NULL;
  check_mpi(MPI_Type_contiguous(static_cast<int>(block_bytes), MPI_BYTE, &block), "MPI_Type_contiguous");
  int rc = MPI_SUCCESS;
  if (remainder == 0) {
    rc = MPI_Type_contiguous(static_cast<int>(blocks), block, &type_);
  } else {
    const int lengths[2] = {static_cast<int>(blocks), static_cast<int>(remainder)};
    const MPI_Aint offsets[2] = {0, static_cast<MPI_Aint>(blocks * block_bytes)};
    const MPI_Datatype types[2] = {block, MPI_BYTE};
    rc = MPI_Type_create_struct(2, lengths, offsets, types, &type_);
  }
  MPI_Type_free(&block);
  check_mpi(rc, "MPI_Type_create_struct");
  check_mpi(MPI_Type_commit(&type_), "MPI_Type_commit");
  count_ = 1;
}

ByteMessage::ByteMessage(ByteMessage&& other) noexcept : count_(other.count_), type_(other.type_) {
  other.type_ = MPI_BYTE;
}

ByteMessage::~ByteMessage() {
  if (type_ != MPI_BYTE) MPI_Type_free(&type_);
}

}  // namespace fabricbench::runtime
