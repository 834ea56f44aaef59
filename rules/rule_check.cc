// Pass 3 of the rule loader (RuleLoader::Build, rule_loader.cc): each rule's
// key atoms chosen and the literal prefilter built over them, then every
// rule's embedded examples checked through the whole compiled set.
#include <re2/filtered_re2.h>

#include <algorithm>
#include <atomic>
#include <set>
#include <string>
#include <vector>

#include "parsers/line_parser.h"
#include "parsers/text_util.h"
#include "rules/rule_loader_internal.h"

namespace ncclscan {

namespace {

// Whether text holds one of the rule's key atoms, as the prefilter sees it
// (case-blind: RE2's atoms are lower case).
bool ContainsKeyAtom(const CompiledRule& cr, std::string_view text) {
  std::string lower(text);
  auto fold = [](std::string* s) {
    for (char& c : *s) {
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
  };
  fold(&lower);
  for (std::string atom : cr.key_atoms) {
    fold(&atom);
    if (lower.find(atom) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

// Pass 3: each rule's key atoms chosen, and the prefilter built over them.
void RuleLoader::CompilePrefilter(RuleSet* rs) {
  Impl& im = *impl_;
  // Each rule's key atoms, on two threads (the atom analysis compiles the
  // pattern again); then registered in rule order.
  std::vector<char> no_literal(rs->rules_.size(), 0);
  OnTwoThreads(rs->rules_.size(), [&](size_t i) {
    CompiledRule& cr = rs->rules_[i];
    if (!cr.spec.fields.empty()) {
      // The longest anchor is required by construction.
      std::string best;
      for (const auto& f : cr.spec.fields) {
        if (f.anchor.value.size() > best.size()) best = f.anchor.value;
      }
      cr.key_atoms = {best};
      return;
    }
    // The build's analysis of a built-in pattern, else RE2's now.
    auto known = im.known_atoms.find(cr.spec.pattern.value);
    PatternAtoms atoms = known != im.known_atoms.end() ? known->second : AnalyzePattern(cr.spec.pattern.value);
    // A catch-all need not have a literal: it is tried only when no other
    // rule speaks for a line, and then on every line its level admits.
    if (atoms.no_literal && !cr.spec.fallback) no_literal[i] = 1;
    cr.key_atoms = std::move(atoms.key_atoms);
    cr.gate_atoms = std::move(atoms.gate_atoms);
    if (!atoms.match_prefix.empty() && cr.re) cr.match_prefix.emplace(atoms.match_prefix);
  });
  for (size_t i = 0; i < rs->rules_.size(); ++i) {
    const CompiledRule& cr = rs->rules_[i];
    if (no_literal[i]) {
      im.Error(cr.spec.pattern.pos, "E-RULE-NO-LITERAL",
               "pattern of rule " + cr.spec.id.value + " has no literal of 3 or more characters to prefilter on",
               "every line would run this regex; anchor it on a fixed word of the message");
    }
  }
  rs->IndexRules();
}

// Embedded samples must agree with the compiled rule (through the whole path).
// Rules are checked on two threads, each with its own parser and scratch;
// their diagnostics are reported in rule order.
void RuleLoader::CheckExamples(RuleSet* rs) {
  Impl& im = *impl_;
  std::vector<std::vector<Diagnostic>> sample_diags(rs->rules_.size());
  OnTwoThreads(rs->rules_.size(), [&](size_t idx) {
    LineParser parser;
    Arena arena;
    MatchScratch ms;
    const CompiledRule& cr = rs->rules_[idx];
    auto error = [&](const SourcePos& pos, const char* code, std::string msg, std::string help = "") {
      sample_diags[idx].push_back(Diagnostic{pos, code, std::move(msg), std::move(help)});
    };
    bool reached = false;  // some no_match example passed the prefilter
    auto run = [&](const Example& ex, bool want) {
      arena.Reset();
      bool matched = false;
      std::map<std::string, std::string> got;
      ParsedLine first;
      parser.ParseEach(ex.line.value, &arena, [&](ParsedLine& pl, int piece) {
        if (piece == 0) first = pl;
        rs->Match(pl, &ms, [&](int ri, const re2::StringPiece* g, int n) {
          if (ri != static_cast<int>(idx) || matched) return;
          matched = true;
          for (int i = 1; i < n; ++i) {
            if (!cr.capture_names[i].empty()) got[cr.capture_names[i]] = std::string(g[i].data(), g[i].size());
          }
        });
      });
      if (!want && matched) reached = true;  // reported below as E-SAMPLE-MATCHED
      if (!want && !matched && !reached) {
        // Near miss: the line holds one of the rule's key atoms where the prefilter
        // looks, and the rule still must not fire (its regex, family or level says no).
        parser.ParseEach(ex.line.value, &arena, [&](ParsedLine& pl, int) {
          if (ContainsKeyAtom(cr, RuleSet::PrefilterText(pl))) reached = true;
        });
      }
      if (want && !matched) {
        error(ex.line.pos, "E-SAMPLE-NO-MATCH", "rule " + cr.spec.id.value + " does not match its example",
              std::string("the line was read as family '") + FamilyName(first.family) + "' with message '" +
                  std::string(first.message.substr(0, 120)) + "'");
      } else if (!want && matched) {
        error(ex.line.pos, "E-SAMPLE-MATCHED", "rule " + cr.spec.id.value + " matches a no_match example");
      } else if (want) {
        for (const auto& kv : ex.captures) {
          auto it = got.find(kv.first);
          std::string actual = it == got.end() ? "<none>" : "'" + it->second + "'";
          if (it == got.end() || it->second != kv.second) {
            error(ex.line.pos, "E-SAMPLE-MISMATCH",
                  "rule " + cr.spec.id.value + ": capture '" + kv.first + "' is " + actual + ", example expects '" +
                      kv.second + "'");
          }
        }
      }
    };
    for (const Example& ex : cr.spec.match) run(ex, true);
    for (const Example& ex : cr.spec.no_match) run(ex, false);
    // A no_match example that the prefilter already drops tests nothing of the
    // regex: at least one must reach it (catch-alls have no prefilter).
    // A pattern that is one fixed phrase (its key atom alone, as a match example
    // writes it, matches) cannot reject a line holding the atom: nothing to test.
    auto atom_alone_matches = [&] {
      if (!cr.re) return false;
      for (const Example& ex : cr.spec.match) {
        bool alone = false;
        arena.Reset();
        parser.ParseEach(ex.line.value, &arena, [&](ParsedLine& pl, int) {
          std::string_view text = RuleSet::PrefilterText(pl);
          std::string lower(text);
          for (char& c : lower) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
          for (const std::string& atom : cr.key_atoms) {
            size_t at = lower.find(atom);
            if (at != std::string::npos && RE2::PartialMatch(re2::StringPiece(text.data() + at, atom.size()), *cr.re)) {
              alone = true;
            }
          }
        });
        if (alone) return true;
      }
      return false;
    };
    if (!cr.spec.fallback && !reached && !cr.key_atoms.empty() && !atom_alone_matches()) {
      std::string atom = cr.key_atoms[0];
      for (const auto& a : cr.key_atoms) {
        if (a.size() > atom.size()) atom = a;
      }
      error(cr.spec.no_match.empty() ? cr.spec.id.pos : cr.spec.no_match[0].line.pos, "E-SAMPLE-NO-NEAR-MISS",
            "rule " + cr.spec.id.value + " has no no_match example that reaches its regex",
            "add a no_match line that contains '" + atom + "' but must not match");
    }
  });
  for (auto& ds : sample_diags) im.diags.insert(im.diags.end(), ds.begin(), ds.end());
}

}  // namespace ncclscan
