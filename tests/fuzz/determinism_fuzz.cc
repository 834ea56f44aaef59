// Differential fuzzer of the determinism property: the input's first bytes
// choose how many files (2-5), where they are cut and the chunk size; the rest
// is the text. The files are scanned at -j1, at -j4 and as one partial per file
// merged in reverse (tests/differential.h); any difference is a crash.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>

#include "rules/rule_loader.h"
#include "tests/differential.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::unique_ptr<ncclscan::RuleSet> rules = [] {
    std::string err;
    return ncclscan::LoadRules({}, &err);
  }();
  static const std::string dir = [] {
    char tmpl[] = "/tmp/ncclscan_determinism_XXXXXX";
    return std::string(mkdtemp(tmpl));
  }();
  if (!rules) __builtin_trap();
  if (size < 8) return 0;
  const size_t files = 2 + data[0] % 4;
  const size_t chunk = 1 + ((size_t{data[1]} << 8 | data[2]) % 2048);
  std::string_view text(reinterpret_cast<const char*>(data) + 8, size - 8);
  std::vector<std::string> paths;
  size_t at = 0;
  for (size_t i = 0; i < files; ++i) {
    // Cut near an equal share, moved by a byte of the header, at a line end.
    size_t cut = i + 1 == files ? text.size() : std::min(text.size(), text.size() * (i + 1) / files + data[3 + i % 5]);
    size_t nl = text.find('\n', cut);
    cut = i + 1 == files || nl == std::string_view::npos ? text.size() : nl + 1;
    cut = std::max(cut, at);
    const std::string path = dir + "/f" + std::to_string(i) + ".log";
    std::ofstream(path, std::ios::binary | std::ios::trunc)
        .write(text.data() + at, static_cast<std::streamsize>(cut - at));
    paths.push_back(path);
    at = cut;
  }
  const std::string diff = ncclscan::DifferentialScan(*rules, paths, chunk, dir);
  if (!diff.empty()) {
    std::fprintf(stderr, "determinism: %s (chunk %zu, %zu files)\n", diff.c_str(), chunk, files);
    __builtin_trap();
  }
  return 0;
}
