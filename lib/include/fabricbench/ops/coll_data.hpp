// What every element of a collective's input and output is, so that results are exactly predictable: shared by
// the host checker (MPI backend) and the CUDA kernels (NCCL backend), hence plain structs and FB_HD functions.
// Values are small integers chosen per reduction so that every result is exact in every type (half, bfloat16,
// int8 included) for realistic rank counts; integer overflow wraps the same way in NCCL, MPI and here.
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define FB_HD __host__ __device__
#else
#define FB_HD
#endif

namespace fabricbench::ops {

enum class DataType : int { int8, uint8, int32, uint32, int64, uint64, float16, float32, float64, bfloat16 };
enum class RedOp : int { sum, prod, min, max, avg };
enum class CollKind : int { all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall, sendrecv };
// How many kinds there are: a new kind goes last in CollKind and moves this. The tables indexed by CollKind
// (collectives(), the NCCL calls) hold their rows against it at compile time (collective.hpp, indexed_by_kind).
inline constexpr int kCollKindCount = static_cast<int>(CollKind::sendrecv) + 1;

// The expected value of one output element, both as wrapped integer bits and as a real number.
struct Expected {
  std::uint64_t bits;  // integer result, modulo 2^64 (callers truncate to the type's width)
  double real;         // floating result (exact except for avg)
};

struct ElementRule {
  CollKind kind;
  RedOp redop;
  int nranks;
  int rank;  // the rank whose output is checked
  int root;
  std::uint64_t count;  // per-rank element count (nccl-tests' paramcount)
  bool reduces;

  // Rank r's input element i.
  FB_HD std::uint64_t input(int r, std::uint64_t i) const {
    std::uint64_t h = (i + 1) * 0x9E3779B97F4A7C15ull ^ (static_cast<std::uint64_t>(r) + 1) * 0xC2B2AE3D27D4EB4Full;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 32;
    if (!reduces) return 1 + h % 113;  // < 128: exact in int8 and bfloat16
    switch (redop) {
      case RedOp::prod:
        return 1 + h % 2;  // products are powers of two
      case RedOp::min:
      case RedOp::max:
        return h % 100;
      default:
        return h % 3;  // sums stay small
    }
  }

  // Output element j of `rank`; false when this rank's output is not defined (reduce on a non-root rank).
  FB_HD bool expected(std::uint64_t j, Expected* out) const {
    switch (kind) {
      case CollKind::all_reduce:
        return reduce_over_ranks(j, out);
      case CollKind::reduce:
        return rank == root && reduce_over_ranks(j, out);
      case CollKind::reduce_scatter:
        return reduce_over_ranks(static_cast<std::uint64_t>(rank) * count + j, out);
      case CollKind::all_gather:
        return single(input(static_cast<int>(j / count), j % count), out);
      case CollKind::broadcast:
        return single(input(root, j), out);
      case CollKind::alltoall:
        return single(input(static_cast<int>(j / count), static_cast<std::uint64_t>(rank) * count + j % count), out);
      case CollKind::sendrecv:
        return single(input((rank - 1 + nranks) % nranks, j), out);
    }
    return false;
  }

 private:
  FB_HD static bool single(std::uint64_t v, Expected* out) {
    out->bits = v;
    out->real = static_cast<double>(v);
    return true;
  }
  FB_HD bool reduce_over_ranks(std::uint64_t i, Expected* out) const {
    std::uint64_t acc = input(0, i);
    double real = static_cast<double>(acc);
    for (int r = 1; r < nranks; ++r) {
      const std::uint64_t v = input(r, i);
      switch (redop) {
        case RedOp::prod:
          acc *= v;
          real *= static_cast<double>(v);
          break;
        case RedOp::min:
          acc = v < acc ? v : acc;
          real = static_cast<double>(acc);
          break;
        case RedOp::max:
          acc = v > acc ? v : acc;
          real = static_cast<double>(acc);
          break;
        default:
          acc += v;
          real += static_cast<double>(v);
          break;
      }
    }
    if (redop == RedOp::avg) real /= nranks;
    out->bits = acc;
    out->real = real;
    return true;
  }
};

}  // namespace fabricbench::ops
