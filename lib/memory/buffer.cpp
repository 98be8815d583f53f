#include "fabricbench/memory/buffer.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "fabricbench/cli/choice.hpp"
#include "fabricbench/error.hpp"

namespace fabricbench::memory {

// Defined in cuda_memory.cpp (CUDA builds) or below (no CUDA).
const MemoryBackend* cuda_backend(MemoryKind kind);
std::string cuda_unavailable_reason();

#ifndef FABRICBENCH_HAVE_CUDA
const MemoryBackend* cuda_backend(MemoryKind) { return nullptr; }
std::string cuda_unavailable_reason() {
  return "this build has no CUDA (configured with FABRICBENCH_CUDA=OFF or no CUDA Toolkit)";
}
#endif

namespace {

void* host_allocate(std::size_t bytes) {
  // Page-aligned like the peers' host buffers; at least one byte so a 0-byte message has a valid address.
  void* p = nullptr;
  if (posix_memalign(&p, 4096, bytes == 0 ? 1 : bytes) != 0)
    throw Error::runtime(fmt::format("cannot allocate {} bytes of host memory", bytes));
  return p;
}
void host_release(void* p) noexcept { std::free(p); }
void host_copy(void* dst, const void* src, std::size_t bytes) { std::memcpy(dst, src, bytes); }

const MemoryBackend host_backend{MemoryKind::host, host_allocate, host_release, host_copy, host_copy};

}  // namespace

// The words of --memory (fabric-p2p, fabric-verbs), in the order the refusal lists them.
constexpr cli::Choice<MemoryKind> kMemoryKinds[] = {
    {"host", MemoryKind::host}, {"pinned", MemoryKind::pinned}, {"device", MemoryKind::device}};

std::string_view to_string(MemoryKind kind) {
  const auto name = cli::choice_name(kMemoryKinds, kind);
  return name.empty() ? "?" : name;
}

std::string unavailable_reason(MemoryKind kind) {
  if (kind == MemoryKind::host) return {};
  return cuda_backend(kind) ? std::string{} : cuda_unavailable_reason();
}

MemoryKind parse_memory_kind(std::string_view text, std::string_view option) {
  const auto kind = cli::parse_choice(text, option, kMemoryKinds);
  if (auto why = unavailable_reason(kind); !why.empty())
    throw Error::usage(fmt::format("{} {}: not available here: {}; allowed here: host", option, text, why));
  return kind;
}

const MemoryBackend& backend_for(MemoryKind kind) {
  if (kind == MemoryKind::host) return host_backend;
  if (const auto* b = cuda_backend(kind)) return *b;
  throw Error::usage(fmt::format("{} memory is not available: {}", to_string(kind), cuda_unavailable_reason()));
}

Buffer::Buffer(MemoryKind kind, std::size_t bytes) : backend_(&backend_for(kind)), bytes_(bytes) {
  data_ = backend_->allocate(bytes);
}

Buffer::Buffer(Buffer&& other) noexcept
    : backend_(other.backend_), data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    if (data_) backend_->release(data_);
    backend_ = other.backend_;
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

Buffer::~Buffer() {
  if (data_) backend_->release(data_);
}

void Buffer::copy_to_host(void* dst, std::size_t bytes, std::size_t offset) const {
  if (offset + bytes > bytes_) throw std::logic_error("Buffer::copy_to_host past the end");
  backend_->copy_to_host(dst, static_cast<const char*>(data_) + offset, bytes);
}
void Buffer::copy_from_host(const void* src, std::size_t bytes, std::size_t offset) {
  if (offset + bytes > bytes_) throw std::logic_error("Buffer::copy_from_host past the end");
  backend_->copy_from_host(static_cast<char*>(data_) + offset, src, bytes);
}

void FillPattern::fill(Buffer& buffer, std::size_t bytes) const {
  if (bytes > buffer.size()) throw std::logic_error("FillPattern::fill past the end of the buffer");
  if (buffer.kind() == MemoryKind::host) {  // in place: a second copy of a multi-GiB message is not needed
    auto* p = static_cast<std::uint8_t*>(buffer.data());
    for (std::size_t i = 0; i < bytes; ++i) p[i] = byte_at(i);
    return;
  }
  std::vector<std::uint8_t> host(bytes);
  for (std::size_t i = 0; i < bytes; ++i) host[i] = byte_at(i);
  buffer.copy_from_host(host.data(), bytes);
}

std::uint64_t FillPattern::count_wrong(const std::vector<std::uint8_t>& data, FillPattern pattern) {
  std::uint64_t wrong = 0;
  for (std::size_t i = 0; i < data.size(); ++i) wrong += data[i] != pattern.byte_at(i);
  return wrong;
}

std::uint64_t FillPattern::count_wrong(const Buffer& buffer, std::size_t bytes) const {
  if (bytes > buffer.size()) throw std::logic_error("FillPattern::count_wrong past the end of the buffer");
  if (buffer.kind() == MemoryKind::host) {
    const auto* p = static_cast<const std::uint8_t*>(buffer.data());
    std::uint64_t wrong = 0;
    for (std::size_t i = 0; i < bytes; ++i) wrong += p[i] != byte_at(i);
    return wrong;
  }
  std::vector<std::uint8_t> host(bytes);
  buffer.copy_to_host(host.data(), bytes);
  return count_wrong(host, *this);
}

void clear(Buffer& buffer, std::size_t bytes) {
  if (buffer.kind() == MemoryKind::host) {
    if (bytes > buffer.size()) throw std::logic_error("clear past the end of the buffer");
    std::memset(buffer.data(), 0, bytes);
    return;
  }
  const std::vector<std::uint8_t> zeros(bytes, 0);
  buffer.copy_from_host(zeros.data(), bytes);
}

}  // namespace fabricbench::memory
