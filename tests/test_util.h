// Helpers shared by the engine tests: temporary directories and files.
#ifndef NCCLSCAN_TESTS_TEST_UTIL_H_
#define NCCLSCAN_TESTS_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#include "rules/rule_loader.h"

namespace ncclscan {

// The built-in rules, loaded once per test binary.
inline const RuleSet& BuiltInRules() {
  static std::unique_ptr<RuleSet> set = [] {
    std::string err;
    auto s = LoadRules({}, &err);
    if (!s) ADD_FAILURE() << err;
    return s;
  }();
  return *set;
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/ncclscan_test_XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  const std::string& path() const { return path_; }
  std::string Write(const std::string& name, const std::string& content) const {
    std::string p = path_ + "/" + name;
    std::system(("mkdir -p \"$(dirname '" + p + "')\"").c_str());
    std::ofstream(p, std::ios::binary) << content;
    return p;
  }

 private:
  std::string path_;
};

}  // namespace ncclscan

#endif  // NCCLSCAN_TESTS_TEST_UTIL_H_
