#include "rules/pattern_atoms.h"

#include <re2/filtered_re2.h>

#include <algorithm>
#include <cctype>

#include "rules/varint.h"

namespace ncclscan {

namespace {

// A count, each of whose items takes a byte at least: no more than the bytes left.
bool GetCount(std::string_view* in, uint64_t* v) { return GetVarint(in, v) && *v <= in->size(); }

void PutString(const std::string& s, std::string* out) {
  PutVarint(s.size(), out);
  out->append(s);
}

bool GetString(std::string_view* in, std::string* s) {
  uint64_t n;
  if (!GetCount(in, &n)) return false;
  s->assign(in->data(), n);
  in->remove_prefix(n);
  return true;
}

void PutStrings(const std::vector<std::string>& v, std::string* out) {
  PutVarint(v.size(), out);
  for (const auto& s : v) PutString(s, out);
}

bool GetStrings(std::string_view* in, std::vector<std::string>* v) {
  uint64_t n;
  if (!GetCount(in, &n)) return false;
  v->resize(n);
  for (auto& s : *v) {
    if (!GetString(in, &s)) return false;
  }
  return true;
}

}  // namespace

// The literal every match of `pattern` starts with: its leading plain
// characters (or escaped punctuation), up to the first operator, less a last
// character a quantifier applies to; none when the pattern has a top-level
// alternation. Read from the text, not from RE2::PossibleMatchRange, whose
// bounds consider one copy of a repetition ("(ab)+cd" gives "abcd"); the
// range's common prefix still bounds it, as a check.
std::string MatchPrefix(const std::string& pattern) {
  RE2 re(pattern, RegexOptions());
  if (!re.ok() || re.NumberOfCapturingGroups() == 0) return "";
  int depth = 0;
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\') {
      ++i;
    } else if (in_class) {
      in_class = c != ']';
    } else if (c == '[') {
      in_class = true;
    } else if (c == '(') {
      ++depth;
    } else if (c == ')') {
      --depth;
    } else if (c == '|' && depth == 0) {
      return "";
    }
  }
  std::string lit;
  size_t i = 0;
  for (; i < pattern.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(pattern[i]);
    if (c == '\\' && i + 1 < pattern.size() && std::ispunct(static_cast<unsigned char>(pattern[i + 1]))) {
      lit.push_back(pattern[++i]);
    } else if (std::isalnum(c) || c == ' ' || c == '_' || c == '-' || c == ':' || c == '/' || c == '=' || c == ',' ||
               c == '\'' || c == '"' || c == '<' || c == '>' || c == '@' || c == '#' || c == '%' || c == '!' ||
               c == '&' || c == ';' || c == '~' || c == '`') {
      lit.push_back(static_cast<char>(c));
    } else {
      break;
    }
  }
  // A quantifier after the run applies to its last character.
  if (i < pattern.size() && !lit.empty() &&
      (pattern[i] == '?' || pattern[i] == '*' || pattern[i] == '+' || pattern[i] == '{')) {
    lit.pop_back();
  }
  std::string low, high;
  if (lit.size() < kMinMatchPrefix || !re.PossibleMatchRange(&low, &high, kMatchPrefixProbe)) return "";
  size_t k = 0;
  while (k < low.size() && k < high.size() && low[k] == high[k]) ++k;
  lit.resize(std::min(lit.size(), k));
  return lit.size() >= kMinMatchPrefix ? lit : "";
}

PatternAtoms AnalyzePattern(const std::string& pattern) {
  PatternAtoms r;
  r.match_prefix = MatchPrefix(pattern);
  // FilteredRE2 on this rule alone: its atoms, and which ones are required.
  re2::FilteredRE2 one(3);
  int id;
  one.Add(pattern, RegexOptions(), &id);
  std::vector<std::string> atoms;
  one.Compile(&atoms);
  std::vector<int> none, pots;
  one.AllPotentials(none, &pots);
  if (atoms.empty() || !pots.empty()) {
    r.no_literal = true;
    return r;
  }
  // Key atoms: a smallest-effort hitting set — every match contains at least one
  // of them. Greedily drop atoms, shortest (least selective) first, while the
  // rule still cannot pass the prefilter without one of the remaining ones.
  std::vector<size_t> order(atoms.size());
  for (size_t a = 0; a < atoms.size(); ++a) order[a] = a;
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    return atoms[x].size() != atoms[y].size() ? atoms[x].size() < atoms[y].size() : atoms[x] < atoms[y];
  });
  std::vector<bool> key(atoms.size(), true);
  for (size_t a : order) {
    key[a] = false;
    std::vector<int> outside;
    for (size_t b = 0; b < atoms.size(); ++b) {
      if (!key[b]) outside.push_back(static_cast<int>(b));
    }
    pots.clear();
    one.AllPotentials(outside, &pots);
    if (!pots.empty()) key[a] = true;  // without it the rule could match unseen
  }
  for (size_t a = 0; a < atoms.size(); ++a) {
    if (key[a]) r.key_atoms.push_back(atoms[a]);
  }
  // Gates: with every key atom present, hitting sets of the other atoms
  // (ASCII ones only: a gate compares bytes), each chosen the way the key
  // atoms are and each over the atoms no earlier one took; every gate must
  // pass. "virbr" after "bootstrap" and ": using ", an exception's name
  // after "rank ".
  std::vector<bool> free_atom(atoms.size());
  for (size_t a = 0; a < atoms.size(); ++a) {
    free_atom[a] = !key[a] && std::all_of(atoms[a].begin(), atoms[a].end(),
                                          [](char c) { return static_cast<unsigned char>(c) < 0x80; });
  }
  std::vector<bool> gate(atoms.size());
  auto admits = [&]() {  // whether the rule may match with the gate's atoms absent
    std::vector<int> present;
    for (size_t b = 0; b < atoms.size(); ++b) {
      if (!gate[b]) present.push_back(static_cast<int>(b));
    }
    pots.clear();
    one.AllPotentials(present, &pots);
    return !pots.empty();
  };
  for (int g = 0; g < kMaxGates; ++g) {
    gate = free_atom;
    if (admits()) break;  // the atoms left may all be absent from a match
    for (size_t a : order) {
      if (!gate[a]) continue;
      gate[a] = false;
      if (admits()) gate[a] = true;
    }
    r.gate_atoms.emplace_back();
    for (size_t a = 0; a < atoms.size(); ++a) {
      if (gate[a]) {
        r.gate_atoms.back().push_back(atoms[a]);
        free_atom[a] = false;
      }
    }
  }
  return r;
}

void EncodePatternAtoms(const std::map<std::string, PatternAtoms>& table, std::string* out) {
  PutVarint(table.size(), out);
  for (const auto& [pattern, a] : table) {
    PutString(pattern, out);
    out->push_back(a.no_literal ? 1 : 0);
    PutStrings(a.key_atoms, out);
    PutVarint(a.gate_atoms.size(), out);
    for (const auto& g : a.gate_atoms) PutStrings(g, out);
    PutString(a.match_prefix, out);
  }
}

bool DecodePatternAtoms(std::string_view bytes, std::map<std::string, PatternAtoms, std::less<>>* table) {
  uint64_t n;
  if (!GetCount(&bytes, &n)) return false;
  for (uint64_t i = 0; i < n; ++i) {
    std::string pattern;
    PatternAtoms a;
    uint64_t gates;
    if (!GetString(&bytes, &pattern) || bytes.empty()) return false;
    a.no_literal = bytes.front() != 0;
    bytes.remove_prefix(1);
    if (!GetStrings(&bytes, &a.key_atoms) || !GetCount(&bytes, &gates)) return false;
    a.gate_atoms.resize(gates);
    for (auto& g : a.gate_atoms) {
      if (!GetStrings(&bytes, &g)) return false;
    }
    if (!GetString(&bytes, &a.match_prefix)) return false;
    (*table)[std::move(pattern)] = std::move(a);
  }
  return bytes.empty();
}

}  // namespace ncclscan
