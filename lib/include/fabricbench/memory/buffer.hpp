// Buffers of host, pinned or device memory behind one small table of functions per kind (perftest's memory
// back ends), and the fill pattern that makes every received byte checkable.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fabricbench::memory {

enum class MemoryKind { host, pinned, device };

std::string_view to_string(MemoryKind kind);
// Throws Error::usage naming `option` and the kinds this build and machine can allocate.
MemoryKind parse_memory_kind(std::string_view text, std::string_view option);

// How one kind of memory is allocated, released and copied to/from the host. Device kinds are present only in
// CUDA builds; allocate() throws Error::runtime with the library's message.
struct MemoryBackend {
  MemoryKind kind;
  void* (*allocate)(std::size_t bytes);
  void (*release)(void* p) noexcept;
  void (*copy_to_host)(void* host_dst, const void* src, std::size_t bytes);
  void (*copy_from_host)(void* dst, const void* host_src, std::size_t bytes);
};

// Why `kind` cannot be used here (no CUDA in this build, no GPU visible), or empty when it can.
std::string unavailable_reason(MemoryKind kind);
const MemoryBackend& backend_for(MemoryKind kind);

// Owns `bytes` of one kind of memory. Move-only.
class Buffer {
 public:
  Buffer(MemoryKind kind, std::size_t bytes);
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  void* data() { return data_; }
  const void* data() const { return data_; }
  std::size_t size() const { return bytes_; }
  MemoryKind kind() const { return backend_->kind; }

  void copy_to_host(void* dst, std::size_t bytes, std::size_t offset = 0) const;
  void copy_from_host(const void* src, std::size_t bytes, std::size_t offset = 0);

 private:
  const MemoryBackend* backend_;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// Byte i of a message from `sender` is a function of (seed, i): a stale, shifted, truncated or foreign message
// fails the check. Host-side, so it serves every memory kind through copies outside timed loops.
struct FillPattern {
  std::uint32_t seed;
  std::uint8_t byte_at(std::size_t i) const {
    std::uint32_t x = seed ^ static_cast<std::uint32_t>(i * 2654435761u);
    x ^= x >> 13;
    return static_cast<std::uint8_t>(x * 0x5bd1e995u >> 24);
  }
  void fill(Buffer& buffer, std::size_t bytes) const;
  // Number of bytes among the first `bytes` that differ from the pattern.
  std::uint64_t count_wrong(const Buffer& buffer, std::size_t bytes) const;
  static std::uint64_t count_wrong(const std::vector<std::uint8_t>& data, FillPattern pattern);
};

void clear(Buffer& buffer, std::size_t bytes);

}  // namespace fabricbench::memory
