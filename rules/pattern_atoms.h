// PatternAtoms: what the literal prefilter needs of one rule pattern — the key
// atoms every match contains one of, and the gates (more atoms a match holds)
// — chosen from RE2's own analysis of the pattern. The analysis compiles the
// pattern again, so the build runs it once for the built-in rules and embeds
// the results (rules/rule_trees_main.cc); the loader looks a pattern up there
// before it analyses it.
//
// Thread-safety: free functions over their arguments.
#ifndef NCCLSCAN_RULES_PATTERN_ATOMS_H_
#define NCCLSCAN_RULES_PATTERN_ATOMS_H_

#include <re2/re2.h>

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ncclscan {

// The RE2 options of every rule pattern.
inline RE2::Options RegexOptions() {
  RE2::Options opts;
  opts.set_log_errors(false);
  // Logs are bytes, not UTF-8: in Latin-1 mode '.' and negated classes match any
  // byte, so one invalid UTF-8 sequence cannot hide an error line. UTF-8
  // literals in patterns still match themselves byte for byte.
  opts.set_encoding(RE2::Options::EncodingLatin1);
  // Bounds each compiled program (~40k instructions); real rules use a few hundred.
  opts.set_max_mem(2 << 20);
  return opts;
}

// Gates a rule may have beyond its key atoms (each a few SIMD compares a line).
inline constexpr int kMaxGates = 3;
// PatternAtoms::match_prefix: the shortest literal worth anchoring on, and how
// far RE2::PossibleMatchRange looks.
inline constexpr size_t kMinMatchPrefix = 3;
inline constexpr int kMatchPrefixProbe = 16;

struct PatternAtoms {
  // No literal of 3 or more characters that every match contains (or the pattern
  // does not compile): the prefilter cannot gate it.
  bool no_literal = false;
  std::vector<std::string> key_atoms;
  std::vector<std::vector<std::string>> gate_atoms;
  // The literal every match starts with, for a pattern with captures (empty:
  // none of kMinMatchPrefix bytes). CompiledRule::match_prefix.
  std::string match_prefix;
  bool operator==(const PatternAtoms& o) const {
    return no_literal == o.no_literal && key_atoms == o.key_atoms && gate_atoms == o.gate_atoms &&
           match_prefix == o.match_prefix;
  }
};

// RE2's atoms of `pattern` (compiled with RegexOptions()): key atoms, a
// smallest-effort hitting set of them, and up to kMaxGates gates.
PatternAtoms AnalyzePattern(const std::string& pattern);

// A table of analysed patterns, encoded (the build) and decoded (the loader).
void EncodePatternAtoms(const std::map<std::string, PatternAtoms>& table, std::string* out);
bool DecodePatternAtoms(std::string_view bytes, std::map<std::string, PatternAtoms, std::less<>>* table);

}  // namespace ncclscan

#endif  // NCCLSCAN_RULES_PATTERN_ATOMS_H_
