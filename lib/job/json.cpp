#include "fabricbench/job/json.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cstdlib>
#include <stdexcept>

namespace fabricbench::job {

class JsonReader {
 public:
  JsonReader(std::string_view text, std::size_t* missing_commas, const Json::ElementHook& hook)
      : s_(text), missing_(missing_commas), hook_(hook) {}

  Json document() {
    if (s_.size() > Json::kMaxBytes) fail(fmt::format("more than {} MiB", Json::kMaxBytes >> 20));
    Json j = value(0);
    space();
    if (at_ < s_.size()) fail("text after the document");
    return j;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error(fmt::format("at byte {}: {}", at_, what));
  }
  void space() {
    while (at_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[at_]))) ++at_;
  }
  char peek() {
    space();
    if (at_ >= s_.size()) fail("the document ends early");
    return s_[at_];
  }
  void expect(char c) {
    if (peek() != c) fail(fmt::format("'{}' expected", c));
    ++at_;
  }
  // After a member or element: a comma, the closing bracket, or (lenient) the next one without its comma.
  bool more(char close) {
    const char c = peek();
    if (c == ',') return ++at_, true;
    if (c == close) return false;
    if (missing_) ++*missing_;
    return true;
  }

  Json value(int depth) {
    if (depth > 64) fail("nested more than 64 deep");
    if (++kept_ > Json::kMaxKept) fail(fmt::format("more than {} values held at once", Json::kMaxKept));
    Json j;
    const char c = peek();
    if (c == '{') {
      ++at_;
      j.type_ = Json::Type::object;
      if (peek() == '}') return ++at_, j;
      do {
        std::string key = string();
        expect(':');
        path_.push_back(key);
        j.members_[key] = value(depth + 1);
        path_.pop_back();
      } while (more('}'));
      expect('}');
    } else if (c == '[') {
      ++at_;
      j.type_ = Json::Type::array;
      if (peek() == ']') return ++at_, j;
      do {
        const std::size_t kept_before = kept_;
        Json e = value(depth + 1);
        if (hook_ && hook_(path_, e))
          kept_ = kept_before;  // taken: it and what it held are not kept
        else
          j.elements_.push_back(std::move(e));
      } while (more(']'));
      expect(']');
    } else if (c == '"') {
      j.type_ = Json::Type::string;
      j.text_ = string();
    } else if (word("true")) {
      j.type_ = Json::Type::boolean;
      j.boolean_ = true;
    } else if (word("false")) {
      j.type_ = Json::Type::boolean;
    } else if (word("null")) {
    } else if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) {
      const std::size_t start = at_;
      while (at_ < s_.size() && std::string_view("+-.eE0123456789").find(s_[at_]) != std::string_view::npos) ++at_;
      const std::string digits(s_.substr(start, at_ - start));
      char* end = nullptr;
      j.number_ = std::strtod(digits.c_str(), &end);
      if (end != digits.c_str() + digits.size()) fail(fmt::format("'{}' is not a number", digits));
      j.type_ = Json::Type::number;
    } else {
      fail(fmt::format("'{}' starts no value", c));
    }
    return j;
  }
  bool word(std::string_view w) {
    if (s_.substr(at_, w.size()) != w) return false;
    at_ += w.size();
    return true;
  }
  std::string string() {
    expect('"');
    std::string out;
    while (at_ < s_.size() && s_[at_] != '"') {
      char c = s_[at_++];
      if (c == '\\') {
        if (at_ >= s_.size()) break;
        c = s_[at_++];
        switch (c) {
          case 'n':
            c = '\n';
            break;
          case 't':
            c = '\t';
            break;
          case 'r':
            c = '\r';
            break;
          case 'b':
            c = '\b';
            break;
          case 'f':
            c = '\f';
            break;
          case 'u':  // kept as written: RAS replies are ASCII
            out += "\\u";
            continue;
          default:
            break;
        }
      }
      out += c;
    }
    if (at_ >= s_.size()) fail("a string is not closed");
    ++at_;
    return out;
  }

  std::string_view s_;
  std::size_t at_ = 0;
  std::size_t* missing_;
  const Json::ElementHook& hook_;
  std::vector<std::string> path_;  // the member names down to the value being read
  std::size_t kept_ = 0;           // values read and not taken by the hook
};

Json Json::parse(std::string_view text, std::size_t* missing_commas, const ElementHook& hook) {
  if (missing_commas) *missing_commas = 0;
  return JsonReader(text, missing_commas, hook).document();
}

const Json& Json::operator[](const std::string& key) const {
  static const Json none;
  const auto it = members_.find(key);
  return it == members_.end() ? none : it->second;
}

}  // namespace fabricbench::job
