// RuleLoader: YAML rule files -> typed structs (pass 1) -> validated (pass 2)
// -> compiled immutable RuleSet (pass 3), in the manner of Falco's loader.
//
// Every problem is collected (not just the first) as a Diagnostic with a
// position and a stable code; RenderDiagnostic() prints it ninja-style:
//
//   rules/net.yaml:14:22: error: invalid regex: missing ): (abc [E-BAD-REGEX]
//       pattern: '(abc'
//                ^
//   help: …
//
// Sources are added in layers: the rules compiled into the binary first, then
// each --rules directory. A rule id repeated inside one layer is an error; a
// later layer replaces a rule of an earlier one (that is how users override).
// A rule is turned off by `enabled: false` on its definition, by a file's
// top-level `disable: [ID, …]` (any layer, any rule), or by Disable().
//
// Thread-safety: single-threaded builder; the RuleSet it returns is immutable.
#ifndef NCCLSCAN_RULES_RULE_LOADER_H_
#define NCCLSCAN_RULES_RULE_LOADER_H_

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "rules/rule.h"
#include "rules/rule_node.h"
#include "rules/rule_set.h"

namespace ncclscan {

struct Diagnostic {
  SourcePos pos;
  std::string code;  // E-BAD-REGEX …
  std::string message;
  std::string help;  // optional
};

class RuleLoader {
 public:
  RuleLoader();
  ~RuleLoader();

  // Adds the rule files compiled into the binary (layer 0). Without
  // `examples`, their comment lines and `examples:` blocks are blanked before
  // they are parsed (LeanRuleText): a scan never reads them, and they are half
  // the bytes yaml-cpp would parse at every start.
  void AddEmbedded(bool examples = true);
  // Build then requires every fact the engine reads (rules/engine_contract.h)
  // to be declared, as it does with the built-in rules (AddEmbedded sets it):
  // for rule files that stand in for the built-in ones.
  void RequireEngineFacts();
  // Starts a new layer; files added after it override rules of earlier layers.
  void BeginLayer();
  // Adds one YAML document. `name` is used in diagnostics.
  void AddSource(const std::string& name, const std::string& text);
  // Adds every *.yaml / *.yml file under dir (sorted), every YAML document of
  // each. Only regular files are read (E-FILE-TYPE: a FIFO would block, a link
  // to /dev/zero never ends), and each within YamlLimits (rules/yaml_limits.h:
  // E-FILE-TOO-BIG, E-YAML-TOO-DEEP, E-YAML-TOO-LARGE). Returns false (with a
  // diagnostic) if the directory cannot be read.
  bool AddDirectory(const std::string& dir);
  // Turns off the rule or correlation `id` (--disable); Build reports an id
  // that no layer defines (E-UNKNOWN-RULE).
  void Disable(const std::string& id);
  // Whether Build runs every rule's examples (default). A scan with the
  // built-in rules alone may skip them: the same binary's `rules --check` and
  // tests ran them, and they cost a third of start-up.
  void set_check_examples(bool check) { check_examples_ = check; }

  // Validates and compiles. Returns null if there was any error; *diags gets
  // every problem found.
  std::unique_ptr<RuleSet> Build(std::vector<Diagnostic>* diags);

  // Source text by file name, for rendering diagnostics.
  const std::map<std::string, std::string>& sources() const { return sources_; }

 private:
  // Build's passes (rule_loader.cc).
  void Validate(RuleSet* rs, std::set<std::string>* off);
  // Validate's steps, in order (rule_loader.cc).
  void ValidateFacts(RuleSet* rs);
  void SelectDefinitions(std::vector<const LineRule*>* rules, std::vector<const CorrelationRule*>* corrs,
                         std::map<std::string, SourcePos>* overridden);
  void CompileRule(RuleSet* rs, const LineRule* lr, const std::shared_ptr<const RE2>& compiled);
  // CompileRule's steps, in order (rule_compile.cc).
  void CompileFamily(LineRule* r);
  std::set<std::string> CompileCaptures(const std::shared_ptr<const RE2>& compiled, CompiledRule* cr);
  void CompileLookups(const RE2& re, CompiledRule* cr, std::set<std::string>* vars);
  void CompileFacts(const RuleSet& rs, const std::set<std::string>& vars, CompiledRule* cr);
  void CompileIdentity(const std::set<std::string>& vars, CompiledRule* cr);
  void CompileSubjectAndFinding(const RE2& re, const std::set<std::string>& vars, CompiledRule* cr);
  void CompileLevels(CompiledRule* cr);
  void CheckFallback(const LineRule& r);
  void CheckExplains(const FindingSpec& f, const std::set<std::string>& all_ids);
  void ApplyDisables(RuleSet* rs, const std::vector<const CorrelationRule*>& corrs,
                     const std::map<std::string, SourcePos>& overridden, const std::set<std::string>& all_ids,
                     std::set<std::string>* off_out);
  void CompileCorrelation(RuleSet* rs, const CorrelationRule* c, const std::set<std::string>& all_ids);
  void CheckTemplate(const Located<std::string>& src, const std::set<std::string>& vars, Template* out,
                     const std::string& what);
  void CompilePrefilter(RuleSet* rs);
  void CheckExamples(RuleSet* rs);

  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::map<std::string, std::string> sources_;
  bool check_examples_ = true;
};

std::string RenderDiagnostic(const Diagnostic& d, const std::map<std::string, std::string>& sources);

// LoadRules renders at most this many diagnostics, then how many more there were.
inline constexpr size_t kMaxRenderedDiagnostics = 50;

// Convenience: the built-in rules plus optional user directories, less the
// rules in `disable`. On failure returns null and writes rendered diagnostics
// to *errors. `examples`: check every rule's examples; with false they are
// still checked whenever user rule files are loaded (a user rule can change
// what a built-in example matches).
std::unique_ptr<RuleSet> LoadRules(const std::vector<std::string>& user_dirs, std::string* errors,
                                   int* num_errors = nullptr, const std::vector<std::string>& disable = {},
                                   bool examples = true);

// The rule files embedded at build time (generated from rules/*.yaml).
struct EmbeddedRuleFile {
  const char* name;
  const char* text;
};
extern const EmbeddedRuleFile kEmbeddedRuleFiles[];
extern const int kNumEmbeddedRuleFiles;

// The same files' lean text (LeanRuleText) parsed at build time, in the same
// order: EncodeRuleDocuments's bytes (rules/rule_trees_main.cc writes them).
struct EmbeddedRuleTrees {
  const char* bytes;
  size_t size;
};
extern const EmbeddedRuleTrees kEmbeddedRuleTrees[];
// Their patterns' prefilter atoms (rules/pattern_atoms.h), EncodePatternAtoms's bytes.
extern const EmbeddedRuleTrees kEmbeddedPatternAtoms;

}  // namespace ncclscan

#endif  // NCCLSCAN_RULES_RULE_LOADER_H_
