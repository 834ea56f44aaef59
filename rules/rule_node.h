// RuleNode: the tree the rule reader reads — a YAML document's mappings,
// sequences and scalars with where each stands in its file. A user's rule file
// is parsed by yaml-cpp and converted (FromYaml); the built-in files are parsed
// once at build time and embedded as encoded trees (Encode / Decode), so a scan
// does not pay yaml-cpp's parse at every start (about half its start-up time).
//
// Thread-safety: a value type; const methods are safe to call concurrently.
#ifndef NCCLSCAN_RULES_RULE_NODE_H_
#define NCCLSCAN_RULES_RULE_NODE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace YAML {
class Node;
}

namespace ncclscan {

class RuleNode {
 public:
  enum class Kind : uint8_t { kUndefined, kNull, kScalar, kSequence, kMap };

  RuleNode() = default;

  bool IsDefined() const { return kind_ != Kind::kUndefined; }
  bool IsNull() const { return kind_ == Kind::kNull; }
  bool IsScalar() const { return kind_ == Kind::kScalar; }
  bool IsSequence() const { return kind_ == Kind::kSequence; }
  bool IsMap() const { return kind_ == Kind::kMap; }
  bool operator!() const { return !IsDefined(); }

  // A scalar's text ("" for any other node).
  const std::string& Scalar() const { return scalar_; }
  // A scalar written in quotes (YAML's non-specific tag "!"): its text starts
  // one column after the node's position.
  bool Quoted() const { return quoted_; }
  // 0-based, as YAML::Mark; -1 when unknown (an undefined node).
  int line() const { return line_; }
  int column() const { return column_; }

  // A sequence's items (empty for any other node).
  const std::vector<RuleNode>& items() const { return items_; }
  std::vector<RuleNode>::const_iterator begin() const { return items_.begin(); }
  std::vector<RuleNode>::const_iterator end() const { return items_.end(); }
  // A mapping's entries in file order, duplicates kept (empty for any other node).
  const std::vector<std::pair<RuleNode, RuleNode>>& entries() const { return entries_; }
  // The value of a mapping's first key `key`; an undefined node when there is none.
  const RuleNode& operator[](std::string_view key) const;

  // yaml-cpp's tree (aliases are copied: a user file is measured by
  // WithinYamlLimits first, which counts each alias as its whole value).
  static RuleNode FromYaml(const YAML::Node& n);

  // A compact encoding of the tree, and back. Decode returns false (and
  // leaves *in where it stopped) on bytes that are not one encoded tree.
  void Encode(std::string* out) const;
  static bool Decode(std::string_view* in, RuleNode* out);

  bool operator==(const RuleNode& o) const;
  bool operator!=(const RuleNode& o) const { return !(*this == o); }

 private:
  Kind kind_ = Kind::kUndefined;
  bool quoted_ = false;
  int line_ = -1;
  int column_ = -1;
  std::string scalar_;
  std::vector<RuleNode> items_;
  std::vector<std::pair<RuleNode, RuleNode>> entries_;

  static bool Decode(std::string_view* in, RuleNode* out, int depth);
};

// `text` with its comment lines and `examples:` blocks blank, line for line
// (diagnostics keep their positions); block scalars (`>-`, `|`) are kept whole.
std::string LeanRuleText(std::string_view text);

// Every document of a built-in rule file's lean text, parsed and encoded: what
// the build embeds (rules/rule_trees_main.cc) and RuleLoader::AddEmbedded decodes.
// Throws YAML::Exception when the text is not YAML.
std::string EncodeRuleDocuments(const std::string& text);
// Back: false when `bytes` are not what EncodeRuleDocuments wrote.
bool DecodeRuleDocuments(std::string_view bytes, std::vector<RuleNode>* docs);

}  // namespace ncclscan

#endif  // NCCLSCAN_RULES_RULE_NODE_H_
