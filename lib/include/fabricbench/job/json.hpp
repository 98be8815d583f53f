// A JSON document read from a reply NCCL's RAS service wrote (fabric-doctor --nccl-ras): objects, arrays, strings,
// numbers, true, false and null, with a bounded cost (depth 64, 16 MiB). Lenient in the one way a real reply needs:
// NCCL 2.28.9 leaves out the comma between "nvml_dev" and "status" of a missing rank, so a member or element that
// follows another without its comma is read and counted in `missing_commas`.
#pragma once
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace fabricbench::job {

class Json {
 public:
  enum class Type { null, boolean, number, string, array, object };

  // Throws std::runtime_error("at byte N: what") where `text` is not such a document.
  static Json parse(std::string_view text, std::size_t* missing_commas = nullptr);

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
