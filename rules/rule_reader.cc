#include "rules/rule_reader.h"

#include <re2/re2.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>

#include "parsers/text_util.h"
#include "rules/pattern_atoms.h"
#include "rules/rule_reader_internal.h"

namespace ncclscan {

namespace {

bool ValidFactName(const std::string& n) {
  if (n.empty() || !(n[0] >= 'a' && n[0] <= 'z')) return false;
  for (char c : n) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

}  // namespace

SourcePos RuleReader::Pos(const RuleNode& n) const {
  SourcePos p;
  p.file = file;
  if (n.line() >= 0) {
    p.line = n.line() + 1;
    p.col = n.column() + 1;
  }
  return p;
}

void RuleReader::Error(const SourcePos& pos, const std::string& code, const std::string& msg, const std::string& help) {
  diags.push_back(Diagnostic{pos, code, msg, help});
}

bool RuleReader::Scalar(const RuleNode& n, const std::string& what, Located<std::string>* out) {
  if (!n.IsScalar()) {
    Error(Pos(n), "E-BAD-VALUE", what + " must be a string");
    return false;
  }
  out->value = n.Scalar();
  out->pos = Pos(n);
  return true;
}

bool RuleReader::Scalar(const RuleNode& n, const std::string& what, std::string* out) {
  Located<std::string> l;
  if (!Scalar(n, what, &l)) return false;
  *out = l.value;
  return true;
}

bool RuleReader::Bool(const RuleNode& n, const std::string& what, bool* out) {
  std::string s;
  if (!Scalar(n, what, &s)) return false;
  if (s != "true" && s != "false") {
    Error(Pos(n), "E-BAD-VALUE", what + " must be true or false");
    return false;
  }
  *out = s == "true";
  return true;
}

bool RuleReader::Int(const RuleNode& n, const std::string& what, int min, int* out) {
  std::string s;
  if (!Scalar(n, what, &s)) return false;
  errno = 0;
  char* end = nullptr;
  long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end || errno == ERANGE || v < min || v > INT_MAX) {
    Error(Pos(n), "E-BAD-VALUE",
          what + " must be " + (min == 1 ? "a positive integer" : "an integer of " + std::to_string(min) + " or more") +
              ", not '" + s + "'");
    return false;
  }
  *out = static_cast<int>(v);
  return true;
}

void RuleReader::OneOf(const RuleNode& n, const std::string& what, const std::string& a, const std::string& b,
                       std::string* out) {
  std::string s;
  if (!Scalar(n, what, &s)) return;
  if (s != a && s != b) Error(Pos(n), "E-BAD-VALUE", what + " must be '" + a + "' or '" + b + "'");
  *out = s;  // kept even when wrong, so later checks do not pile up
}

int RuleReader::Choice(const RuleNode& n, const std::string& what, std::initializer_list<const char*> names) {
  std::string s;
  if (!Scalar(n, what, &s)) return -1;
  std::string all;
  int i = 0;
  for (const char* name : names) {
    if (s == name) return i;
    all += (i++ ? ", " : "") + std::string(name);
  }
  Error(Pos(n), "E-BAD-VALUE", "unknown " + what + " '" + s + "'", "use one of: " + all);
  return -1;
}

bool RuleReader::StringList(const RuleNode& n, const std::string& what, std::vector<Located<std::string>>* out) {
  if (n.IsScalar()) {
    Located<std::string> l;
    Scalar(n, what, &l);
    out->push_back(l);
    return true;
  }
  if (!n.IsSequence()) {
    Error(Pos(n), "E-BAD-VALUE", what + " must be a list of strings");
    return false;
  }
  for (const auto& e : n) {
    Located<std::string> l;
    if (Scalar(e, what, &l)) out->push_back(l);
  }
  return true;
}

void RuleReader::ReadFinding(const RuleNode& n, FindingSpec* f) {
  f->present = true;
  f->explanation.pos = Pos(n);
  ForEachKey(n, "finding",
             {"severity", "confidence", "role", "group_by", "explanation", "remediation", "explains", "owner", "scope",
              "suspects", "impact", "stops_run"},
             [&](const std::string& key, const RuleNode&, const RuleNode& v) {
               std::string s;
               if (key == "severity") {
                 if (Scalar(v, "severity", &s) && !ParseSeverity(s, &f->severity)) {
                   Error(Pos(v), "E-BAD-VALUE", "unknown severity '" + s + "'",
                         "use one of: info, warning, error, critical");
                 }
               } else if (key == "confidence") {
                 if (Scalar(v, "confidence", &s)) {
                   char* end = nullptr;
                   double c = std::strtod(s.c_str(), &end);
                   if (end == s.c_str() || *end || c < 0 || c > 1) {
                     Error(Pos(v), "E-BAD-VALUE", "confidence must be a number between 0 and 1");
                   } else {
                     f->confidence = c;
                   }
                 }
               } else if (key == "role") {
                 if (Scalar(v, "role", &s) && !ParseRole(s, &f->role)) {
                   Error(Pos(v), "E-BAD-VALUE", "unknown role '" + s + "'", "use one of: root, cascade, context");
                 }
               } else if (key == "group_by") {
                 StringList(v, "group_by", &f->group_by);
               } else if (key == "explanation") {
                 Scalar(v, "explanation", &f->explanation);
               } else if (key == "remediation") {
                 Scalar(v, "remediation", &f->remediation);
               } else if (key == "explains") {
                 StringList(v, "explains", &f->explains);
               } else if (key == "owner") {
                 f->has_owner = Word(v, "owner", ParseOwner, OwnerNames(), &f->owner);
               } else if (key == "scope") {
                 f->multi_node_only = Choice(v, "scope", {"any", "multi_node"}) == 1;
               } else if (key == "impact") {
                 f->performance_only = Choice(v, "impact", {"failure", "performance"}) == 1;
               } else if (key == "stops_run") {
                 f->stops_with_error = Choice(v, "stops_run", {"hang", "error"}) == 1;
               } else if (key == "suspects") {
                 const int c = Choice(v, "suspects", {"all", "first", "none"});
                 if (c > 0) f->suspects = c == 1 ? FindingSpec::Suspects::kFirst : FindingSpec::Suspects::kNone;
               }
             });
  if (f->explanation.value.empty()) Error(Pos(n), "E-MISSING-KEY", "finding needs an 'explanation'");
}

// Where byte `offset` of scalar `n`'s value is in the file: a quoted scalar's
// mark is its opening quote (yaml-cpp tags quoted scalars "!", plain ones "?").
SourcePos RuleReader::PosInScalar(const RuleNode& n, size_t offset) const {
  SourcePos p = Pos(n);
  if (p.line > 0) p.col += static_cast<int>(offset) + (n.Quoted() ? 1 : 0);
  return p;
}

void RuleReader::ReadReferences(const RuleNode& n, std::vector<std::string>* urls, std::vector<KnownIssue>* issues) {
  if (!n.IsSequence() && !n.IsScalar()) {
    Error(Pos(n), "E-BAD-VALUE",
          "references must be a list of URLs or known issues ({url, title, affected, fixed_in})");
    return;
  }
  auto url_ok = [&](const Located<std::string>& u) {
    if (u.value.rfind("https://", 0) != 0 && u.value.rfind("http://", 0) != 0) {
      Error(u.pos, "E-BAD-VALUE", "reference '" + u.value + "' is not an http(s) URL");
      return false;
    }
    return true;
  };
  std::vector<RuleNode> entries;
  if (n.IsScalar())
    entries.push_back(n);
  else
    for (const auto& e : n) entries.push_back(e);
  int affected_only = 0;
  // `references` lists each URL once: several known issues may cite one release note.
  auto add_url = [urls](const std::string& u) {
    if (std::find(urls->begin(), urls->end(), u) == urls->end()) urls->push_back(u);
  };
  for (const RuleNode& e : entries) {
    if (e.IsScalar()) {
      Located<std::string> u;
      // A plain reference stays free text as it always was (reports escape it).
      if (Scalar(e, "reference", &u)) add_url(u.value);
      continue;
    }
    if (!e.IsMap()) {
      Error(Pos(e), "E-BAD-VALUE", "a reference is a URL or a mapping {url, title, affected, fixed_in}");
      continue;
    }
    KnownIssue k;
    k.url.pos = Pos(e);
    bool have_url = false;
    ForEachKey(e, "known issue", {"url", "title", "component", "affected", "fixed_in", "affected_only", "when"},
               [&](const std::string& key, const RuleNode&, const RuleNode& v) {
                 if (key == "url") {
                   have_url = Scalar(v, "url", &k.url) && url_ok(k.url);
                 } else if (key == "title") {
                   if (Scalar(v, "title", &k.title) && k.title.size() > 120) {
                     Error(Pos(v), "E-BAD-VALUE",
                           "known issue title is " + std::to_string(k.title.size()) + " characters; keep it under 120",
                           "the title is one line of the report; the thread holds the rest");
                   }
                 } else if (key == "component") {
                   OneOf(v, "component", "nccl", "torch", &k.component);
                 } else if (key == "affected") {
                   if (!Scalar(v, "affected", &k.affected)) return;
                   std::string err;
                   size_t off = 0;
                   if (!k.affected_range.Parse(k.affected.value, &err, &off)) {
                     Error(PosInScalar(v, off), "E-BAD-VALUE", "bad version range: " + err,
                           "write comparisons joined by ',', e.g. \">=2.19.1,<2.21.5\" (operators >= > <= < ==)");
                   }
                 } else if (key == "fixed_in") {
                   if (Scalar(v, "fixed_in", &k.fixed_in) && !ParseExactVersion(k.fixed_in.value, &k.fixed_version)) {
                     Error(k.fixed_in.pos, "E-BAD-VALUE", "fixed_in '" + k.fixed_in.value + "' is not a version",
                           "write the release that has the fix, e.g. \"2.21.5\"");
                   }
                 } else if (key == "affected_only") {
                   k.affected_only_pos = Pos(v);
                   Bool(v, "affected_only", &k.affected_only);
                 } else if (key == "when") {
                   if (!Scalar(v, "when", &k.when)) return;
                   auto re = std::make_shared<const RE2>(k.when.value, RegexOptions());
                   if (re->ok())
                     k.when_re = std::move(re);
                   else
                     Error(k.when.pos, "E-BAD-REGEX", "invalid regex in 'when': " + re->error());
                 }
               });
    if (!have_url) {
      if (k.url.value.empty()) Error(Pos(e), "E-MISSING-KEY", "known issue needs a 'url'");
      continue;
    }
    if (k.title.empty()) Error(Pos(e), "E-MISSING-KEY", "known issue " + k.url.value + " needs a 'title'");
    if (k.affected.value.empty() && k.fixed_in.value.empty()) {
      Error(Pos(e), "E-MISSING-KEY", "known issue " + k.url.value + " needs 'affected' or 'fixed_in'",
            "a plain URL is enough for a reference that names no versions");
    }
    if (k.fixed_version.ok() && !k.affected_range.empty() && k.affected_range.Contains(k.fixed_version)) {
      Error(k.fixed_in.pos, "E-BAD-VALUE",
            "fixed_in " + k.fixed_in.value + " lies inside the affected range '" + k.affected.value + "'");
    }
    if (k.affected_only && ++affected_only == 2) {
      Error(k.affected_only_pos, "E-BAD-VALUE", "only one reference of a rule may say affected_only",
            "the rule's finding is one known issue; give it the affected range of that one");
    }
    add_url(k.url.value);
    issues->push_back(std::move(k));
  }
}

void RuleReader::ReadCondition(const RuleNode& w, Condition* cond) {
  cond->fact.pos = Pos(w);
  std::vector<std::string> keys = {"fact"};
  for (int i = 0; i < static_cast<int>(ConditionOp::kCount); ++i) keys.push_back(OpName(static_cast<ConditionOp>(i)));
  ForEachKey(w, "condition", std::set<std::string>(keys.begin(), keys.end()),
             [&](const std::string& k, const RuleNode& kn, const RuleNode& x) {
               if (k == "fact") {
                 // env[NCCL_IB_TIMEOUT]: one key of a keyed fact.
                 if (!Scalar(x, "fact", &cond->fact)) return;
                 const std::string& f = cond->fact.value;
                 size_t br = f.find('[');
                 if (br != std::string::npos && f.size() > br + 2 && f.back() == ']') {
                   cond->key = {f.substr(br + 1, f.size() - br - 2), cond->fact.pos};
                   cond->fact.value = f.substr(0, br);
                 }
                 return;
               }
               ConditionOp op;
               ParseConditionOp(k, &op);  // one of the allowed keys
               if (cond->op != ConditionOp::kCount) {
                 Error(Pos(kn), "E-BAD-VALUE",
                       "condition has two operators ('" + std::string(OpName(cond->op)) + "' and '" + k +
                           "'); write one condition per operator");
                 return;
               }
               cond->op = op;
               if (!Scalar(x, k, &cond->value)) return;
               long double num;
               if (IsNumericOp(op) && !ParseNumber(cond->value.value, false, &num)) {
                 Error(cond->value.pos, "E-BAD-VALUE",
                       "'" + k + "' compares numbers; '" + cond->value.value + "' is not a number",
                       "write an integer (decimal, or hex with 0x); use equals / matches for text");
               }
             });
  if (cond->op == ConditionOp::kCount)
    Error(Pos(w), "E-MISSING-KEY", "condition needs an operator (equals, exists, …)");
}

void RuleReader::ReadCorrelation(const RuleNode& n) {
  CorrelationRule c;
  c.source_file = file;
  c.id.pos = Pos(n);
  // Every key any kind reads; which of them this correlation's kind reads is
  // checked once the kind is known (below).
  std::set<std::string> allowed;
  for (const auto& k : CommonCorrelationKeys()) allowed.insert(std::string(k));
  for (const CorrelationKindInfo& info : CorrelationKinds()) {
    for (const auto& k : info.keys) allowed.insert(std::string(k));
  }
  std::vector<std::pair<std::string, SourcePos>> given;  // kind-specific keys, where written
  bool kind_given = false;
  ForEachKey(n, "correlation", allowed, [&](const std::string& key, const RuleNode& kn, const RuleNode& v) {
    const bool common =
        std::find(CommonCorrelationKeys().begin(), CommonCorrelationKeys().end(), key) != CommonCorrelationKeys().end();
    if (!common) given.push_back({key, Pos(kn)});
    if (key == "id")
      Scalar(v, "id", &c.id);
    else if (key == "title")
      Scalar(v, "title", &c.title);
    else if (key == "category")
      c.has_category = Word(v, "category", ParseCategory, CategoryNames(), &c.category);
    else if (key == "kind") {
      kind_given = true;
      c.kind_pos = Pos(v);
      Word(v, "correlation kind", ParseCorrelationKind, CorrelationKindNames(), &c.kind);
    } else if (key == "fact")
      Scalar(v, "fact", &c.fact);
    else if (key == "over") {
      std::string s;
      OneOf(v, "over", "rank", "host", &s);
      c.over = s == "host" ? Over::kHost : Over::kRank;
    } else if (key == "min_subjects" || key == "min_reporters") {
      Int(v, key, 1, key == "min_subjects" ? &c.min_subjects : &c.min_reporters);
    } else if (key == "enabled") {
      Bool(v, "enabled", &c.enabled);
    } else if (key == "where") {
      if (!v.IsSequence()) {
        Error(Pos(v), "E-BAD-VALUE", "where must be a list of conditions");
        return;
      }
      for (const auto& w : v) {
        Condition cond;
        ReadCondition(w, &cond);
        c.where.push_back(cond);
      }
    } else if (key == "job") {
      ForEachKey(v, "job", {"hosts_gt"}, [&](const std::string&, const RuleNode&, const RuleNode& x) {
        Int(x, "hosts_gt", 0, &c.job_hosts_gt);
      });
    } else if (key == "silent_is_behind" || key == "ignore_unset") {
      Bool(v, key, key == "ignore_unset" ? &c.ignore_unset : &c.silent_is_behind);
    } else if (key == "tie") {
      std::string t;
      if (Scalar(v, "tie", &t)) {
        if (t == "newest")
          c.tie_newest = true;
        else
          Error(Pos(v), "E-BAD-VALUE", "unknown tie rule '" + t + "'", "use: newest (the newest version wins a tie)");
      }
    } else if (key == "normal") {
      std::vector<Located<std::string>> vals;
      StringList(v, "normal", &vals);
      for (auto& x : vals) c.normal.push_back(x.value);
    } else if (key == "population")
      Scalar(v, "population", &c.population);
    else if (key == "check")
      Word(v, "collective check", ParseCollectiveCheck, CollectiveCheckNames(), &c.check);
    else if (key == "present")
      Scalar(v, "present", &c.present);
    else if (key == "absent")
      Scalar(v, "absent", &c.absent);
    else if (key == "select") {
      std::string s;
      OneOf(v, "select", "min", "max", &s);
      c.select = s == "max" ? Select::kMax : Select::kMin;
    } else if (key == "require")
      StringList(v, "require", &c.require);
    else if (key == "finding") {
      ReadFinding(v, &c.finding);
      // A correlation names its suspects itself.
      if (c.finding.suspects != FindingSpec::Suspects::kAll)
        Error(Pos(v), "E-BAD-VALUE", "'suspects:' is for line rules: a correlation names its own");
    } else if (key == "references")
      ReadReferences(v, &c.references, &c.known_issues);
  });
  if (c.id.value.empty()) {
    Error(Pos(n), "E-MISSING-KEY", "correlation needs an 'id'");
    return;
  }
  if (!kind_given) Error(Pos(n), "E-MISSING-KEY", "correlation " + c.id.value + " needs a 'kind'");
  if (c.kind != CorrelationKind::kCount) {
    // A key another kind reads means nothing to this one: refused, not ignored.
    const CorrelationKindInfo& info = KindInfo(c.kind);
    for (const auto& [key, pos] : given) {
      if (std::find(info.keys.begin(), info.keys.end(), key) != info.keys.end()) continue;
      std::string keys;
      for (const auto& k : info.keys) keys += (keys.empty() ? "" : ", ") + std::string(k);
      Error(pos, "E-UNKNOWN-KEY", "'" + key + "' means nothing to a " + info.name + " correlation",
            keys.empty() ? std::string("a ") + info.name + " correlation takes only the common keys"
                         : std::string("a ") + info.name + " correlation reads: " + keys);
    }
    for (const auto& key : info.required) {
      bool have = false;
      for (const auto& g : given) have |= g.first == key;
      if (!have) {
        Error(Pos(n), "E-MISSING-KEY",
              "correlation " + c.id.value + " (" + info.name + ") needs '" + std::string(key) + "'");
      }
    }
  }
  if (c.title.empty()) Error(Pos(n), "E-MISSING-KEY", "correlation " + c.id.value + " needs a 'title'");
  if (!c.has_category && !n["category"])
    Error(Pos(n), "E-MISSING-KEY", "correlation " + c.id.value + " needs a 'category'");
  if (!c.finding.present) Error(Pos(n), "E-MISSING-KEY", "correlation " + c.id.value + " needs a 'finding'");
  correlations.push_back(CorrEntry{std::move(c), layer});
}

void RuleReader::ReadFact(const RuleNode& n) {
  FactSpec f;
  f.name.pos = Pos(n);
  ForEachKey(n, "fact", {"name", "merge", "keyed", "hex", "key", "window", "fields", "placeholder", "description"},
             [&](const std::string& key, const RuleNode&, const RuleNode& v) {
               std::string s;
               if (key == "name")
                 Scalar(v, "name", &f.name);
               else if (key == "merge") {
                 if (Scalar(v, "merge", &s) && !ParseMergeMode(s, &f.merge)) {
                   Error(Pos(v), "E-BAD-VALUE", "unknown merge mode '" + s + "'",
                         "use one of: first, last, set, max, min, count");
                 }
               } else if (key == "keyed" || key == "hex") {
                 Bool(v, key, key == "keyed" ? &f.keyed : &f.hex);
               } else if (key == "key") {
                 if (Scalar(v, "key", &s) && !ParseKeyKind(s, &f.key_kind)) {
                   Error(Pos(v), "E-BAD-VALUE", "key must be comm, pg or name");
                 }
               } else if (key == "window") {
                 Int(v, "window", 1, &f.window);
               } else if (key == "fields") {
                 std::vector<Located<std::string>> names;
                 StringList(v, "fields", &names);
                 for (const auto& name : names) {
                   if (!ValidFactName(name.value)) {
                     Error(name.pos, "E-BAD-VALUE", "invalid field name '" + name.value + "'",
                           "field names match [a-z][a-z0-9_]* (the capture that fills them)");
                   } else if (std::find(f.fields.begin(), f.fields.end(), name.value) != f.fields.end()) {
                     Error(name.pos, "E-BAD-VALUE", "field '" + name.value + "' is listed twice");
                   } else {
                     f.fields.push_back(name.value);
                   }
                 }
               } else if (key == "placeholder") {
                 Scalar(v, "placeholder", &f.placeholder);
               } else if (key == "description")
                 Scalar(v, "description", &f.description);
             });
  if (f.name.value.empty()) {
    Error(Pos(n), "E-MISSING-KEY", "fact needs a 'name'");
    return;
  }
  if (!ValidFactName(f.name.value)) {
    Error(f.name.pos, "E-BAD-VALUE", "invalid fact name '" + f.name.value + "'", "fact names match [a-z][a-z0-9_]*");
  }
  facts.push_back(FactEntry{std::move(f), layer});
}

RuleReader::Parsed RuleReader::Parse(const std::string& name, const std::string& text, const YamlLimits* limits) {
  Parsed doc;
  if (limits) {
    YamlLimitError err;
    if (!WithinYamlLimits(name, text, *limits, &err)) {
      doc.error_pos = err.pos;
      doc.error_code = err.code;
      doc.error = err.message;
      doc.help = err.help;
      return doc;
    }
  }
  try {
    for (const YAML::Node& d : YAML::LoadAll(text)) doc.docs.push_back(RuleNode::FromYaml(d));
    doc.ok = true;
  } catch (const YAML::Exception& e) {
    doc.error_pos = SourcePos{name, e.mark.line >= 0 ? e.mark.line + 1 : 0, e.mark.column >= 0 ? e.mark.column + 1 : 0};
    doc.error = "not valid YAML: " + e.msg;
  } catch (const std::exception& e) {  // not a YAML error (out of memory): a load error
    doc.error_pos = SourcePos{name, 0, 0};
    doc.error = std::string("cannot parse: ") + e.what();
  }
  return doc;
}

void RuleReader::ReadFile(const std::string& name, const std::string& text, const YamlLimits& limits) {
  Read(name, Parse(name, text, &limits));
}

void RuleReader::Read(const std::string& name, const Parsed& doc) {
  file = name;
  if (!doc.ok) {
    Error(doc.error_pos, doc.error_code, doc.error, doc.help);
    return;
  }
  // Every document is read: a file that a tool or a person split with "---"
  // must not lose its later rules silently.
  for (const RuleNode& root : doc.docs) ReadDocument(root);
}

void RuleReader::ReadDocument(const RuleNode& root) {
  if (root.IsNull()) return;  // empty file or document
  if (!root.IsMap()) {
    Error(Pos(root), "E-BAD-VALUE", "a rule file must be a mapping with keys facts, rules, correlations, disable");
    return;
  }
  ForEachKey(root, "rule file", {"facts", "rules", "correlations", "disable"},
             [&](const std::string& key, const RuleNode&, const RuleNode& v) {
               if (key == "disable") {  // ids of rules defined elsewhere (built in, another file)
                 StringList(v, "disable", &disabled);
                 return;
               }
               if (!v.IsSequence()) {
                 Error(Pos(v), "E-BAD-VALUE", key + " must be a list");
                 return;
               }
               for (const auto& item : v) {
                 if (key == "facts")
                   ReadFact(item);
                 else if (key == "rules")
                   ReadRule(item);
                 else
                   ReadCorrelation(item);
               }
             });
}

}  // namespace ncclscan
