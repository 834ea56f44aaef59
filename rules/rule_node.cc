#include "rules/rule_node.h"

#include <yaml-cpp/yaml.h>

#include <cstdint>

#include "parsers/text_util.h"
#include "rules/varint.h"

namespace ncclscan {

namespace {

// Nesting a decoder follows: the built-in files are 7 deep, a user's file is
// capped at 64 (YamlLimits::max_depth) before it is ever encoded.
constexpr int kMaxDecodeDepth = 256;

// The indent of a line that opens a block scalar ("explanation: >-", "- |"), or -1.
int BlockScalarIndent(std::string_view line, size_t indent) {
  size_t end = line.find(" #");
  std::string_view s = line.substr(0, end);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  while (!s.empty() && (s.back() == '-' || s.back() == '+' || IsDigit(s.back()))) s.remove_suffix(1);
  if (s.empty() || (s.back() != '>' && s.back() != '|')) return -1;
  s.remove_suffix(1);
  if (s.size() <= indent) return -1;
  return s.back() == ' ' && (s[s.size() - 2] == ':' || s[s.size() - 2] == '-') ? static_cast<int>(indent) : -1;
}

constexpr char kDocumentsMagic[] = "NSRT1";  // ncclscan rule trees, version 1

}  // namespace

const RuleNode& RuleNode::operator[](std::string_view key) const {
  static const RuleNode kUndefined;
  for (const auto& e : entries_) {
    if (e.first.IsScalar() && e.first.scalar_ == key) return e.second;
  }
  return kUndefined;
}

RuleNode RuleNode::FromYaml(const YAML::Node& n) {
  RuleNode r;
  if (!n.IsDefined()) return r;
  const YAML::Mark m = n.Mark();
  r.line_ = m.line;
  r.column_ = m.column;
  switch (n.Type()) {
    case YAML::NodeType::Null:
      r.kind_ = Kind::kNull;
      break;
    case YAML::NodeType::Scalar:
      r.kind_ = Kind::kScalar;
      r.scalar_ = n.Scalar();
      r.quoted_ = n.Tag() == "!";
      break;
    case YAML::NodeType::Sequence:
      r.kind_ = Kind::kSequence;
      r.items_.reserve(n.size());
      for (const auto& e : n) r.items_.push_back(FromYaml(e));
      break;
    case YAML::NodeType::Map:
      r.kind_ = Kind::kMap;
      r.entries_.reserve(n.size());
      for (auto it = n.begin(); it != n.end(); ++it) r.entries_.emplace_back(FromYaml(it->first), FromYaml(it->second));
      break;
    default:
      break;
  }
  return r;
}

// kind | quoted << 3, line + 1, column + 1, then the scalar's text, the items
// or the entries, each preceded by its length or count.
void RuleNode::Encode(std::string* out) const {
  out->push_back(static_cast<char>(static_cast<uint8_t>(kind_) | (quoted_ ? 8 : 0)));
  PutVarint(static_cast<uint64_t>(line_ + 1), out);
  PutVarint(static_cast<uint64_t>(column_ + 1), out);
  switch (kind_) {
    case Kind::kScalar:
      PutVarint(scalar_.size(), out);
      out->append(scalar_);
      break;
    case Kind::kSequence:
      PutVarint(items_.size(), out);
      for (const RuleNode& i : items_) i.Encode(out);
      break;
    case Kind::kMap:
      PutVarint(entries_.size(), out);
      for (const auto& e : entries_) {
        e.first.Encode(out);
        e.second.Encode(out);
      }
      break;
    default:
      break;
  }
}

bool RuleNode::Decode(std::string_view* in, RuleNode* out) { return Decode(in, out, 0); }

bool RuleNode::Decode(std::string_view* in, RuleNode* out, int depth) {
  if (in->empty() || depth > kMaxDecodeDepth) return false;
  const uint8_t head = static_cast<uint8_t>(in->front());
  in->remove_prefix(1);
  if ((head & 7) > static_cast<uint8_t>(Kind::kMap) || (head & ~15)) return false;
  *out = RuleNode();
  out->kind_ = static_cast<Kind>(head & 7);
  out->quoted_ = head & 8;
  uint64_t line, column, n;
  if (!GetVarint(in, &line) || !GetVarint(in, &column) || line > INT32_MAX || column > INT32_MAX) return false;
  out->line_ = static_cast<int>(line) - 1;
  out->column_ = static_cast<int>(column) - 1;
  switch (out->kind_) {
    case Kind::kScalar:
      if (!GetVarint(in, &n) || n > in->size()) return false;
      out->scalar_.assign(in->data(), n);
      in->remove_prefix(n);
      return true;
    case Kind::kSequence:
      if (!GetVarint(in, &n) || n > in->size()) return false;  // each item takes a byte at least
      out->items_.resize(n);
      for (RuleNode& i : out->items_) {
        if (!Decode(in, &i, depth + 1)) return false;
      }
      return true;
    case Kind::kMap:
      if (!GetVarint(in, &n) || n > in->size()) return false;
      out->entries_.resize(n);
      for (auto& e : out->entries_) {
        if (!Decode(in, &e.first, depth + 1) || !Decode(in, &e.second, depth + 1)) return false;
      }
      return true;
    default:
      return true;
  }
}

bool RuleNode::operator==(const RuleNode& o) const {
  return kind_ == o.kind_ && quoted_ == o.quoted_ && line_ == o.line_ && column_ == o.column_ && scalar_ == o.scalar_ &&
         items_ == o.items_ && entries_ == o.entries_;
}

std::string LeanRuleText(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  int examples = -1;  // inside an examples: block: lines indented deeper are dropped
  int block = -1;     // inside a block scalar: lines indented deeper are its text
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    const size_t ind = line.find_first_not_of(' ');
    bool drop = false;
    if (ind == std::string_view::npos) {
      drop = examples >= 0;
    } else if (examples >= 0 && static_cast<int>(ind) > examples) {
      drop = true;
    } else if (block >= 0 && static_cast<int>(ind) > block) {
      examples = -1;  // the block's text: kept as it is
    } else {
      examples = block = -1;
      const std::string_view body = line.substr(ind);
      if (body[0] == '#') {
        drop = true;
      } else if (StartsWith(body, "examples:")) {
        drop = true;
        examples = static_cast<int>(ind);
      } else {
        block = BlockScalarIndent(line, ind);
      }
    }
    if (!drop) out.append(line);
    if (end < text.size()) out += '\n';
    pos = end + 1;
  }
  return out;
}

std::string EncodeRuleDocuments(const std::string& text) {
  std::string out = kDocumentsMagic;
  const std::vector<YAML::Node> docs = YAML::LoadAll(LeanRuleText(text));
  PutVarint(docs.size(), &out);
  for (const YAML::Node& d : docs) RuleNode::FromYaml(d).Encode(&out);
  return out;
}

bool DecodeRuleDocuments(std::string_view bytes, std::vector<RuleNode>* docs) {
  const std::string_view magic = kDocumentsMagic;
  if (bytes.substr(0, magic.size()) != magic) return false;
  bytes.remove_prefix(magic.size());
  uint64_t n;
  if (!GetVarint(&bytes, &n) || n > bytes.size()) return false;
  docs->assign(n, RuleNode());
  for (RuleNode& d : *docs) {
    if (!RuleNode::Decode(&bytes, &d)) return false;
  }
  return bytes.empty();
}

}  // namespace ncclscan
