// Collectives through MPI: host buffers, or device buffers with a CUDA-aware MPI. In-place follows MPI's rules
// (MPI_IN_PLACE), which place some inputs/outputs differently from NCCL's; the expected values are the same.
#include <fmt/format.h>

#include <cstring>
#include <optional>

#include "fabricbench/error.hpp"
#include "fabricbench/memory/buffer.hpp"
#include "fabricbench/ops/coll_backend.hpp"
#include "mpi_call.hpp"

namespace fabricbench::ops {
namespace {

using runtime::check_mpi;

// The one list of the types (and below, the reductions) MPI has: mpi_has reads it.
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
  bool supports(DataType t, RedOp op) const override { return mpi_has(t) && mpi_has(op); }
  bool synchronous() const override { return true; }
  bool in_place_defined(const CollectiveOp&) const override { return true; }  // MPI_IN_PLACE / MPI_Sendrecv_replace

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
    memory::Buffer* in = c.in_place ? &*recv_ : &*send_;
    if (c.op->mpi_one_buffer) {
      in = &*recv_;  // the root's input is where every rank receives
      if (rank_ != c.root) return;
    }
    // In place, MPI finds the input where NCCL does (all_gather: this rank's block of the output).
    const std::size_t in_offset = c.in_place ? c.counts.send_inplace_offset * rank_ * ts : 0;
    std::vector<std::uint8_t> bytes(in_count * ts);
    with_host_type(c.dtype, [&](auto zero) {
      using T = decltype(zero);
      auto* v = reinterpret_cast<T*>(bytes.data());
      for (std::uint64_t i = 0; i < in_count; ++i) v[i] = static_cast<T>(rule.input(rank_, i));
    });
    in->copy_from_host(bytes.data(), bytes.size(), in_offset);
  }

  void launch(const CollCase& c) override {
    c.op->mpi({send_->data(), recv_->data(), static_cast<int>(c.counts.param), mpi_type(c.dtype), mpi_op(c.redop),
               c.root, rank_, nranks_, c.in_place, world_.get()});
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

bool mpi_has(DataType t) { return mpi_type(t) != MPI_DATATYPE_NULL; }
bool mpi_has(RedOp op) { return mpi_op(op) != MPI_OP_NULL; }

std::unique_ptr<CollBackend> make_mpi_backend(const runtime::Communicator& world, bool device_memory) {
  return std::make_unique<MpiCollBackend>(world, device_memory);
}

}  // namespace fabricbench::ops
