// A JSON document read from a reply NCCL's RAS service wrote (fabric-doctor --nccl-ras): objects, arrays, strings,
// numbers, true, false and null, with a bounded cost (depth 64, kMaxBytes, kMaxKept values held at once). A large
// reply (a rank object per rank and communicator: 54 MB at 100,000 ranks) is read element by element through a hook
// that takes each element as it is read, so the document is never held whole. Lenient in the one way a real reply
// needs: NCCL 2.28.9 leaves out the comma between "nvml_dev" and "status" of a missing rank, so a member or element
// that follows another without its comma is read and counted in `missing_commas`.
#pragma once
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace fabricbench::job {

class Json {
 public:
  enum class Type { null, boolean, number, string, array, object };
  static constexpr std::size_t kMaxBytes = std::size_t(512) << 20;
  static constexpr std::size_t kMaxKept = 2'000'000;

  // Called with each element of an array as soon as it is read, and the member names that lead to the array (the
  // elements of {"a": [{"b": [x]}]}'s inner array have the path a, b); an element it takes (returns true) is not kept.
  using ElementHook = std::function<bool(const std::vector<std::string>& path, Json& element)>;

  // Throws std::runtime_error("at byte N: what") where `text` is not such a document.
  static Json parse(std::string_view text, std::size_t* missing_commas = nullptr, const ElementHook& hook = {});

  Type type() const { return type_; }
  bool is(Type t) const { return type_ == t; }
  // Members and elements; a missing member is null, the wrong type a default (0, false, "", empty).
  const Json& operator[](const std::string& key) const;
  const std::vector<Json>& elements() const { return elements_; }
  const std::map<std::string, Json>& members() const { return members_; }
  double number(double otherwise = 0) const { return type_ == Type::number ? number_ : otherwise; }
  bool boolean() const { return type_ == Type::boolean && boolean_; }
  const std::string& text() const { return text_; }

 private:
  friend class JsonReader;
  Type type_ = Type::null;
  bool boolean_ = false;
  double number_ = 0;
  std::string text_;
  std::vector<Json> elements_;
  std::map<std::string, Json> members_;
};

}  // namespace fabricbench::job
