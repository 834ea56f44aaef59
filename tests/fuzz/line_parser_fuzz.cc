// Fuzzes the unwrap + parse + match path on arbitrary bytes (one buffer = many lines).
#include <cstddef>
#include <cstdint>
#include <string>

#include "parsers/line_parser.h"
#include "rules/rule_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static ncclscan::RuleSet* rules = [] {
    std::string err;
    return ncclscan::LoadRules({}, &err).release();
  }();
  static ncclscan::LineParser parser;
  static ncclscan::Arena arena;
  static ncclscan::MatchScratch scratch;
  std::string_view all(reinterpret_cast<const char*>(data), size);
  size_t start = 0;
  while (start <= all.size()) {
    size_t nl = all.find('\n', start);
    if (nl == std::string_view::npos) nl = all.size();
    parser.ParseEach(all.substr(start, nl - start), &arena, [&](ncclscan::ParsedLine& pl, int) {
      if (rules) rules->Match(pl, &scratch, [](int, const re2::StringPiece*, int) {});
    });
    start = nl + 1;
  }
  arena.Reset();
  return 0;
}
