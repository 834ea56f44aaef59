// Pass 1 for one line rule (RuleReader::ReadRule): its keys read into a
// LineRule, its examples (match / no_match) included. The reader's scalar
// helpers, findings, references, correlations and facts are in rule_reader.cc.
#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>

#include "parsers/text_util.h"
#include "rules/rule_reader.h"
#include "rules/rule_reader_internal.h"

namespace ncclscan {

void RuleReader::ReadExamples(const RuleNode& n, LineRule* r) {
  ForEachKey(n, "examples", {"match", "no_match"}, [&](const std::string& key, const RuleNode&, const RuleNode& v) {
    std::vector<Example>* out = key == "match" ? &r->match : &r->no_match;
    if (!v.IsSequence()) {
      Error(Pos(v), "E-BAD-VALUE", "examples." + key + " must be a list");
      return;
    }
    for (const auto& e : v) {
      Example ex;
      if (e.IsMap()) {
        ForEachKey(e, "example", {"line", "captures"}, [&](const std::string& k, const RuleNode&, const RuleNode& ev) {
          if (k == "line") {
            Scalar(ev, "line", &ex.line);
          } else {
            ForEachKey(ev, "captures", {}, [&](const std::string& ck, const RuleNode&, const RuleNode& cv) {
              std::string s;
              if (Scalar(cv, "capture value", &s)) ex.captures[ck] = s;
            });
          }
        });
        if (ex.line.pos.line == 0) {
          ex.line.pos = Pos(e);
          Error(Pos(e), "E-MISSING-KEY", "example needs a 'line'");
          continue;
        }
      } else if (!Scalar(e, "example", &ex.line)) {
        continue;
      }
      out->push_back(ex);
    }
  });
}

void RuleReader::ReadRule(const RuleNode& n) {
  LineRule r;
  r.source_file = file;
  r.id.pos = Pos(n);
  bool have_pattern = false, have_family = false;
  ForEachKey(n, "rule",
             {"id", "title", "category", "family", "pattern", "fields", "facts", "identity", "lookup", "remember",
              "subject", "level", "fallback", "finding", "references", "examples", "enabled"},
             [&](const std::string& key, const RuleNode&, const RuleNode& v) {
               if (key == "id")
                 Scalar(v, "id", &r.id);
               else if (key == "title")
                 Scalar(v, "title", &r.title);
               else if (key == "category")
                 r.has_category = Word(v, "category", ParseCategory, CategoryNames(), &r.category);
               else if (key == "family") {
                 have_family = Scalar(v, "family", &r.family_name);
               } else if (key == "pattern") {
                 have_pattern = Scalar(v, "pattern", &r.pattern);
               } else if (key == "fields") {
                 have_pattern = true;
                 ReadFields(v, &r);
               } else if (key == "facts") {
                 ReadFactAssigns(v, &r);
               } else if (key == "identity") {
                 ReadIdentity(v, &r);
               } else if (key == "lookup") {
                 ReadLookups(v, &r);
               } else if (key == "remember") {
                 ForEachKey(v, "remember", {}, [&](const std::string& name, const RuleNode& kn, const RuleNode& tv) {
                   Located<std::string> k{name, Pos(kn)}, t;
                   if (Scalar(tv, "remember", &t)) r.remember.emplace_back(k, t);
                 });
               } else if (key == "subject") {
                 ReadSubject(v, &r);
               } else if (key == "level") {
                 if (v.IsScalar()) {
                   Located<std::string> l;
                   if (Scalar(v, "level", &l)) r.levels.push_back(l);
                 } else {
                   StringList(v, "level", &r.levels);
                 }
               } else if (key == "fallback") {
                 ReadFallback(v, &r);
               } else if (key == "finding") {
                 ReadFinding(v, &r.finding);
               } else if (key == "references") {
                 ReadReferences(v, &r.references, &r.known_issues);
               } else if (key == "examples") {
                 ReadExamples(v, &r);
               } else if (key == "enabled") {
                 Bool(v, "enabled", &r.enabled);
               }
             });
  if (r.id.value.empty()) {
    Error(Pos(n), "E-MISSING-KEY", "rule needs an 'id'");
    return;
  }
  if (!have_pattern) Error(Pos(n), "E-MISSING-KEY", "rule " + r.id.value + " needs a 'pattern' (or 'fields')");
  if (!r.fields.empty() && !r.pattern.value.empty()) {
    Error(r.pattern.pos, "E-BAD-VALUE", "rule " + r.id.value + " has both 'pattern' and 'fields'; use one");
  }
  if (!have_family) Error(Pos(n), "E-MISSING-KEY", "rule " + r.id.value + " needs a 'family'");
  if (r.title.empty()) Error(Pos(n), "E-MISSING-KEY", "rule " + r.id.value + " needs a 'title'");
  if (!r.has_category && !n["category"]) Error(Pos(n), "E-MISSING-KEY", "rule " + r.id.value + " needs a 'category'");
  if (!examples_stripped && (r.match.empty() || r.no_match.empty())) {
    Error(r.id.pos, "E-MISSING-KEY",
          "rule " + r.id.value + " needs examples with at least one 'match' and one 'no_match' line",
          "sample lines are checked at every load; they are the rule's regression test");
  }
  rules.push_back(RuleEntry{std::move(r), layer});
}

// `fields:` name -> {after|before: anchor}, the literal-anchored captures.
void RuleReader::ReadFields(const RuleNode& v, LineRule* r) {
  r->pattern.pos = Pos(v);
  ForEachKey(v, "fields", {}, [&](const std::string& name, const RuleNode&, const RuleNode& fv) {
    LineRule::Field f;
    f.name = name;
    ForEachKey(fv, "field", {"after", "before"}, [&](const std::string& k, const RuleNode&, const RuleNode& x) {
      Scalar(x, k, &f.anchor);
      f.before = k == "before";
    });
    if (f.anchor.value.size() < 3) {
      Error(Pos(fv), "E-BAD-VALUE", "field '" + name + "' needs an 'after' or 'before' anchor of 3+ characters");
    }
    r->fields.push_back(f);
  });
}

// `facts:` fact or fact[key] -> value template.
void RuleReader::ReadFactAssigns(const RuleNode& v, LineRule* r) {
  ForEachKey(v, "facts", {}, [&](const std::string& fk, const RuleNode& kn, const RuleNode& fv) {
    FactAssign a;
    a.fact.pos = Pos(kn);
    size_t br = fk.find('[');
    if (br != std::string::npos && fk.back() == ']') {
      a.fact.value = fk.substr(0, br);
      a.key.value = fk.substr(br + 1, fk.size() - br - 2);
      a.key.pos = Pos(kn);
      a.key.pos.col += static_cast<int>(br) + 1;
    } else {
      a.fact.value = fk;
    }
    if (Scalar(fv, "fact value", &a.value)) r->facts.push_back(a);
  });
}

void RuleReader::ReadIdentity(const RuleNode& v, LineRule* r) {
  ForEachKey(
      v, "identity",
      {"comm", "comm_id", "rank", "nranks", "event", "address", "global_rank", "host", "pid", "result", "rank_hint"},
      [&](const std::string& ik, const RuleNode&, const RuleNode& iv) {
        Located<std::string> l;
        if (Scalar(iv, "identity value", &l)) r->identity[ik] = l;
      });
}

// `lookup:` name -> {from: capture, map: {value: text}, default: template}.
void RuleReader::ReadLookups(const RuleNode& v, LineRule* r) {
  ForEachKey(v, "lookup", {}, [&](const std::string& name, const RuleNode&, const RuleNode& lv) {
    Lookup lk;
    lk.name = name;
    lk.from.pos = Pos(lv);
    ForEachKey(lv, "lookup", {"from", "map", "default"}, [&](const std::string& k, const RuleNode&, const RuleNode& x) {
      if (k == "from")
        Scalar(x, "from", &lk.from);
      else if (k == "default")
        Scalar(x, "default", &lk.default_value);
      else
        ForEachKey(x, "map", {}, [&](const std::string& mk, const RuleNode&, const RuleNode& mv) {
          std::string s;
          if (Scalar(mv, "map value", &s)) lk.map[mk] = s;
        });
    });
    r->lookups.push_back(lk);
  });
}

void RuleReader::ReadSubject(const RuleNode& v, LineRule* r) {
  Located<std::string> s;
  if (!Scalar(v, "subject", &s)) return;
  if (s.value == "line")
    r->subject = SubjectMode::kLine;
  else if (s.value == "capture")
    r->subject = SubjectMode::kCapture;
  else if (s.value == "previous")
    r->subject = SubjectMode::kPrevious;
  else if (s.value == "process")
    r->subject = SubjectMode::kProcess;
  else if (s.value == "device")
    r->subject = SubjectMode::kDevice;
  else if (s.value == "host")
    r->subject = SubjectMode::kHost;
  else
    Error(s.pos, "E-BAD-VALUE", "unknown subject '" + s.value + "'",
          "use line, capture, previous, process, device or host");
}

void RuleReader::ReadFallback(const RuleNode& v, LineRule* r) {
  Located<std::string> b;
  r->fallback_pos = Pos(v);
  if (!Scalar(v, "fallback", &b)) return;
  if (b.value == "true")
    r->fallback = true;
  else if (b.value != "false")
    Error(b.pos, "E-BAD-VALUE", "fallback must be true or false");
}

}  // namespace ncclscan
