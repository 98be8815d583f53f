// Collectives through MPI: host buffers, or device buffers with a CUDA-aware MPI. In-place follows MPI's rules
// (MPI_IN_PLACE), which place some inputs/outputs differently from NCCL's; the expected values are the same.
#include <fmt/format.h>

#include <cstring>
#include <optional>

#include "fabricbench/error.hpp"
#include "fabricbench/memory/buffer.hpp"
#include "fabricbench/ops/coll_backend.hpp"

namespace fabricbench::ops {
namespace {

using runtime::check_mpi;

MPI_Datatype mpi_type(DataType t) {
  switch (t) {
    case DataType::int8:
      return MPI_INT8_T;
    case DataType::uint8:
      return MPI_UINT8_T;
    case DataType::int32:
      return MPI_INT32_T;
    case DataType::uint32:
      return MPI_UINT32_T;
    case DataType::int64:
      return MPI_INT64_T;
    case DataType::uint64:
      return MPI_UINT64_T;
    case DataType::float32:
      return MPI_FLOAT;
    case DataType::float64:
      return MPI_DOUBLE;
    default:
      return MPI_DATATYPE_NULL;
  }
}

MPI_Op mpi_op(RedOp op) {
  switch (op) {
    case RedOp::sum:
      return MPI_SUM;
    case RedOp::prod:
      return MPI_PROD;
    case RedOp::min:
      return MPI_MIN;
    case RedOp::max:
      return MPI_MAX;
    default:
      return MPI_OP_NULL;
  }
}

// Calls f(T{}) with the C++ type of `t` (types MPI has).
template <typename F>
void with_host_type(DataType t, F&& f) {
  switch (t) {
    case DataType::int8:
      f(std::int8_t{});
      break;
    case DataType::uint8:
      f(std::uint8_t{});
      break;
    case DataType::int32:
      f(std::int32_t{});
      break;
    case DataType::uint32:
      f(std::uint32_t{});
      break;
    case DataType::int64:
      f(std::int64_t{});
      break;
    case DataType::uint64:
      f(std::uint64_t{});
      break;
    case DataType::float32:
      f(float{});
      break;
    case DataType::float64:
      f(double{});
      break;
    default:
      throw std::logic_error("type without a host representation");
  }
}

class MpiCollBackend : public CollBackend {
 public:
  MpiCollBackend(const runtime::Communicator& world, bool device_memory)
      : world_(world),
        kind_(device_memory ? memory::MemoryKind::device : memory::MemoryKind::host),
        rank_(world.rank()),
        nranks_(world.size()) {}

  std::string name() const override { return "mpi"; }
  bool supports(DataType t, RedOp op) const override {
    return mpi_type(t) != MPI_DATATYPE_NULL && mpi_op(op) != MPI_OP_NULL;
  }
  bool synchronous() const override { return true; }
  bool in_place_defined(CollKind) const override { return true; }  // MPI_IN_PLACE / MPI_Sendrecv_replace

  void allocate(std::size_t send_bytes, std::size_t recv_bytes) override {
    // In-place MPI collectives need the whole input in the receive buffer (reduce_scatter, alltoall).
    const auto bytes = std::max(send_bytes, recv_bytes);
    send_.emplace(kind_, bytes);
    recv_.emplace(kind_, bytes);
  }

  void prepare(const CollCase& c) override {
    const int ts = type_size(c.dtype);
    const auto rule = c.rule(nranks_, rank_);
    const std::vector<std::uint8_t> poison(recv_->size(), 0xff);
    recv_->copy_from_host(poison.data(), poison.size());
    // Where this rank's input goes.
    std::uint64_t in_count = c.counts.send;
    std::size_t in_offset = 0;
    memory::Buffer* in = c.in_place ? &*recv_ : &*send_;
    if (c.op->kind == CollKind::broadcast) {
      in = &*recv_;  // MPI_Bcast has one buffer: the root's input is where every rank receives
      if (rank_ != c.root) return;
    }
    if (c.in_place && c.op->kind == CollKind::all_gather)
      in_offset = static_cast<std::size_t>(rank_) * c.counts.param * ts;
    std::vector<std::uint8_t> bytes(in_count * ts);
    with_host_type(c.dtype, [&](auto zero) {
      using T = decltype(zero);
      auto* v = reinterpret_cast<T*>(bytes.data());
      for (std::uint64_t i = 0; i < in_count; ++i) v[i] = static_cast<T>(rule.input(rank_, i));
    });
    in->copy_from_host(bytes.data(), bytes.size(), in_offset);
  }

  void launch(const CollCase& c) override {
    const MPI_Datatype t = mpi_type(c.dtype);
    const MPI_Op op = mpi_op(c.redop);
    const MPI_Comm comm = world_.get();
    void* s = send_->data();
    void* r = recv_->data();
    const int n = static_cast<int>(c.counts.param);
    const bool ip = c.in_place;
    switch (c.op->kind) {
      case CollKind::all_reduce:
        check_mpi(MPI_Allreduce(ip ? MPI_IN_PLACE : s, r, n, t, op, comm), "MPI_Allreduce");
        break;
      case CollKind::all_gather:
        if (ip)
          check_mpi(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, n, t, comm), "MPI_Allgather");
        else
          check_mpi(MPI_Allgather(s, n, t, r, n, t, comm), "MPI_Allgather");
        break;
      case CollKind::reduce_scatter:
        check_mpi(MPI_Reduce_scatter_block(ip ? MPI_IN_PLACE : s, r, n, t, op, comm), "MPI_Reduce_scatter_block");
        break;
      case CollKind::broadcast:
        check_mpi(MPI_Bcast(r, n, t, c.root, comm), "MPI_Bcast");
        break;
      case CollKind::reduce:
        if (ip)
          check_mpi(MPI_Reduce(rank_ == c.root ? MPI_IN_PLACE : r, r, n, t, op, c.root, comm), "MPI_Reduce");
        else
          check_mpi(MPI_Reduce(s, r, n, t, op, c.root, comm), "MPI_Reduce");
        break;
      case CollKind::alltoall:
        if (ip)
          check_mpi(MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, n, t, comm), "MPI_Alltoall");
        else
          check_mpi(MPI_Alltoall(s, n, t, r, n, t, comm), "MPI_Alltoall");
        break;
      case CollKind::sendrecv: {
        const int next = (rank_ + 1) % nranks_, prev = (rank_ - 1 + nranks_) % nranks_;
        if (ip)
          check_mpi(MPI_Sendrecv_replace(r, n, t, next, 7, prev, 7, comm, MPI_STATUS_IGNORE), "MPI_Sendrecv_replace");
        else
          check_mpi(MPI_Sendrecv(s, n, t, next, 7, r, n, t, prev, 7, comm, MPI_STATUS_IGNORE), "MPI_Sendrecv");
        break;
      }
    }
  }

  void wait() override {}

  std::uint64_t count_wrong(const CollCase& c) override {
    const auto rule = c.rule(nranks_, rank_);
    const int ts = type_size(c.dtype);
    std::vector<std::uint8_t> bytes(c.counts.recv * ts);
    recv_->copy_to_host(bytes.data(), bytes.size());  // MPI puts every output at the start of recvbuf
    std::uint64_t wrong = 0;
    with_host_type(c.dtype, [&](auto zero) {
      using T = decltype(zero);
      const auto* v = reinterpret_cast<const T*>(bytes.data());
      Expected e{};
      for (std::uint64_t j = 0; j < c.counts.recv; ++j)
        if (rule.expected(j, &e) && !element_matches<T>(v[j], e, c.redop, nranks_)) ++wrong;
    });
    return wrong;
  }

  void flip_output_byte(const CollCase&) override {
    std::uint8_t b = 0;
    recv_->copy_to_host(&b, 1);
    b ^= 0xff;
    recv_->copy_from_host(&b, 1);
  }

 private:
  const runtime::Communicator& world_;
  memory::MemoryKind kind_;
  int rank_, nranks_;
  std::optional<memory::Buffer> send_, recv_;
};

}  // namespace

std::unique_ptr<CollBackend> make_mpi_backend(const runtime::Communicator& world, bool device_memory) {
  return std::make_unique<MpiCollBackend>(world, device_memory);
}

}  // namespace fabricbench::ops
