// argc/argv for option parsing tests: program name first, then the given arguments.
#pragma once
#include <string>
#include <vector>

struct Argv {
  Argv(const std::string& program, std::vector<std::string> args) : strings(std::move(args)) {
    strings.insert(strings.begin(), program);
    for (auto& s : strings) pointers.push_back(s.data());
  }
  int argc() const { return static_cast<int>(pointers.size()); }
  char** argv() { return pointers.data(); }
  std::vector<std::string> strings;
  std::vector<char*> pointers;
};
