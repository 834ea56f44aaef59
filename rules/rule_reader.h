// RuleReader: pass 1 of the rule loader — YAML documents (RuleNode trees) into typed structs
// that keep file:line:col, collecting every problem as a Diagnostic.
//
// Thread-safety: single-threaded; used only by RuleLoader.
#ifndef NCCLSCAN_RULES_RULE_READER_H_
#define NCCLSCAN_RULES_RULE_READER_H_

#include <initializer_list>
#include <set>
#include <string>
#include <vector>

#include "rules/rule.h"
#include "rules/rule_loader.h"
#include "rules/rule_node.h"
#include "rules/yaml_limits.h"

namespace ncclscan {

class RuleReader {
 public:
  int layer = 0;
  struct FactEntry {
    FactSpec spec;
    int layer;
  };
  struct RuleEntry {
    LineRule rule;
    int layer;
  };
  struct CorrEntry {
    CorrelationRule rule;
    int layer;
  };
  std::vector<FactEntry> facts;
  std::vector<RuleEntry> rules;
  std::vector<CorrEntry> correlations;
  // Ids named by a file's top-level `disable:` list, or by --disable (file
  // "--disable"): turned off in the final rule set, whatever layer defines them.
  std::vector<Located<std::string>> disabled;
  std::vector<Diagnostic> diags;

  std::string file;  // the document being read, for positions
  // The built-in files being read had their examples blanked (LeanRuleText):
  // their rules need none (rules --check and the tests read them whole).
  bool examples_stripped = false;

  // Reads one rule file, every YAML document of it, into facts / rules /
  // correlations (all layers' data stays here; RuleLoader::Build validates and
  // compiles it). The text is first measured against `limits` (user files).
  void ReadFile(const std::string& name, const std::string& text, const YamlLimits& limits = YamlLimits());

  // ReadFile in two steps, so that the slow part (YAML parsing) of several
  // files can run on several threads: Parse is thread-safe, Read is not.
  struct Parsed {
    std::vector<RuleNode> docs;  // every document ("---" starts the next)
    bool ok = false;
    SourcePos error_pos;
    std::string error_code = "E-YAML";
    std::string error;
    std::string help;
  };
  // `limits` null: the text is trusted (the built-in files, measured by tests).
  static Parsed Parse(const std::string& name, const std::string& text, const YamlLimits* limits);
  void Read(const std::string& name, const Parsed& doc);
  void Error(const SourcePos& pos, const std::string& code, const std::string& msg, const std::string& help = "");

 private:
  SourcePos Pos(const RuleNode& n) const;
  bool Scalar(const RuleNode& n, const std::string& what, Located<std::string>* out);
  bool Scalar(const RuleNode& n, const std::string& what, std::string* out);
  bool Bool(const RuleNode& n, const std::string& what, bool* out);
  // A whole decimal integer >= min (atoi would read "many" as 0 and "3x" as 3).
  bool Int(const RuleNode& n, const std::string& what, int min, int* out);
  // A scalar that must be `a` or `b` (an error otherwise; the value is kept).
  void OneOf(const RuleNode& n, const std::string& what, const std::string& a, const std::string& b, std::string* out);
  // The index of scalar n's value among `names`; -1 (and an error naming them) when it is none.
  int Choice(const RuleNode& n, const std::string& what, std::initializer_list<const char*> names);
  // A scalar naming a word of a vocabulary table (rules/vocabulary.h); an
  // unknown one is an error whose help lists the table's words.
  template <typename E>
  bool Word(const RuleNode& n, const std::string& what, bool (*parse)(std::string_view, E*), const std::string& names,
            E* out) {
    std::string s;
    if (!Scalar(n, what, &s)) return false;
    if (parse(s, out)) return true;
    Error(Pos(n), "E-BAD-VALUE", "unknown " + what + " '" + s + "'", "use one of: " + names);
    return false;
  }
  bool StringList(const RuleNode& n, const std::string& what, std::vector<Located<std::string>>* out);
  // Iterates a mapping, reporting keys not in `allowed` (empty = any key).
  template <typename F>
  bool ForEachKey(const RuleNode& n, const std::string& what, const std::set<std::string>& allowed, F&& fn);
  SourcePos PosInScalar(const RuleNode& n, size_t offset) const;
  void ReadFinding(const RuleNode& n, FindingSpec* f);
  // `references:` a URL, or a list of URLs and known issues (KnownIssue).
  void ReadReferences(const RuleNode& n, std::vector<std::string>* urls, std::vector<KnownIssue>* issues);
  void ReadExamples(const RuleNode& n, LineRule* r);
  void ReadRule(const RuleNode& n);
  // ReadRule's keys that hold more than a scalar (rule_reader_rule.cc).
  void ReadFields(const RuleNode& v, LineRule* r);
  void ReadFactAssigns(const RuleNode& v, LineRule* r);
  void ReadIdentity(const RuleNode& v, LineRule* r);
  void ReadLookups(const RuleNode& v, LineRule* r);
  void ReadSubject(const RuleNode& v, LineRule* r);
  void ReadFallback(const RuleNode& v, LineRule* r);
  void ReadDocument(const RuleNode& root);
  void ReadCorrelation(const RuleNode& n);
  void ReadCondition(const RuleNode& w, Condition* cond);
  void ReadFact(const RuleNode& n);
};

}  // namespace ncclscan

#endif  // NCCLSCAN_RULES_RULE_READER_H_
