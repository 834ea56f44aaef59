#include "engine/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "parsers/text_util.h"

#ifndef NCCLSCAN_VERSION
#define NCCLSCAN_VERSION "0.0.0"
#endif

namespace ncclscan {

const char* ToolVersion() { return NCCLSCAN_VERSION; }

namespace {

// Minimal streaming JSON writer: keys in the order written, text escaped with
// invalid UTF-8 replaced (log text is arbitrary bytes).
class Json {
 public:
  void BeginObject() { Sep(); out_ += '{'; first_ = true; }
  void EndObject() { out_ += '}'; first_ = false; }
  void BeginArray() { Sep(); out_ += '['; first_ = true; }
  void EndArray() { out_ += ']'; first_ = false; }
  void Key(std::string_view k) {
    Sep();
    out_ += '"';
    AppendJsonEscaped(&out_, k);
    out_ += "\":";
    first_ = true;  // the value follows without a comma
  }
  void String(std::string_view s) {
    Sep();
    out_ += '"';
    AppendJsonEscaped(&out_, s);
    out_ += '"';
  }
  void Int(int64_t v) { Sep(); out_ += std::to_string(v); }
  void UInt(uint64_t v) { Sep(); out_ += std::to_string(v); }
  void Double(double v) { Sep(); out_ += fmt::format("{:.2f}", v); }
  void Bool(bool b) { Sep(); out_ += b ? "true" : "false"; }
  void Null() { Sep(); out_ += "null"; }
  void KV(std::string_view k, std::string_view v) { Key(k); String(v); }
  void KVInt(std::string_view k, int64_t v) { Key(k); Int(v); }
  std::string& str() { return out_; }

 private:
  void Sep() {
    if (!first_) out_ += ',';
    first_ = false;
  }
  std::string out_;
  bool first_ = true;
};

std::string RanksOfSubjects(const JobState& st, const std::vector<int>& subjects) {
  std::vector<int> r;
  for (int s : subjects) {
    if (st.subjects()[s].rank >= 0) r.push_back(st.subjects()[s].rank);
  }
  return CompactRanks(r);
}

// NCCL / PyTorch versions and the ranks that reported each.
std::map<std::string, std::vector<int>> VersionsOf(const JobState& st, const char* fact_name) {
  std::map<std::string, std::vector<int>> out;
  int fact = st.rules().FindFact(fact_name);
  if (fact < 0) return out;
  for (int s : st.LiveSubjects()) {
    const FactValue* v = st.subjects()[s].Get(fact);
    if (v) out[v->value].push_back(s);
  }
  return out;
}

void WriteFactValue(Json* j, const FactSpec& spec, const FactValue& v) {
  if (spec.merge == MergeMode::kSet) {
    j->BeginArray();
    for (const auto& x : v.values) j->String(x);
    j->EndArray();
  } else {
    j->String(v.value);
  }
}

void WriteEvidence(Json* j, const JobState& st, const std::vector<Evidence>& ev) {
  j->BeginArray();
  for (const auto& e : ev) {
    j->BeginObject();
    j->KV("file", e.file >= 0 ? st.files()[e.file].path : "");
    j->KVInt("line", e.line);
    j->KV("text", e.text);
    j->EndObject();
  }
  j->EndArray();
}

std::string HumanBytes(uint64_t b) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1000 && u < 4) {
    v /= 1000;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", b) : fmt::format("{:.1f} {}", v, units[u]);
}

std::string WithCommas(uint64_t v) {
  std::string s = std::to_string(v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

}  // namespace

std::string RenderJson(const JobState& st, const Diagnosis& d) {
  Json j;
  const Counters& c = st.counters();
  j.BeginObject();
  j.KV("schema", kSchemaVersion);
  j.Key("tool");
  j.BeginObject();
  j.KV("name", "ncclscan");
  j.KV("version", ToolVersion());
  j.EndObject();

  j.Key("input");
  j.BeginObject();
  j.Key("files");
  j.BeginArray();
  int unreadable = 0;
  for (const auto& f : st.files()) {
    j.BeginObject();
    j.KV("path", f.path);
    j.Key("bytes");
    j.UInt(f.bytes);
    j.Key("lines");
    j.UInt(f.lines);
    if (!f.error.empty()) {
      j.KV("error", f.error);
      ++unreadable;
    }
    j.EndObject();
  }
  j.EndArray();
  j.Key("bytes");
  j.UInt(c.bytes);
  j.Key("lines");
  j.UInt(c.lines);
  j.Key("lines_by_family");
  j.BeginObject();
  for (int i = 0; i < kNumFamilies; ++i) {
    j.Key(FamilyName(static_cast<Family>(i)));
    j.UInt(c.family_lines[i]);
  }
  j.EndObject();
  j.Key("lines_recognised");
  j.UInt(c.lines - c.family_lines[static_cast<int>(Family::kOther)]);
  j.Key("lines_matched");
  j.UInt(c.matched_lines);
  j.Key("lines_unparsed");
  j.BeginObject();
  j.Key("binary");
  j.UInt(c.binary_lines);
  j.Key("with_nul");
  j.UInt(c.nul_lines);
  j.Key("overlong_cut");
  j.UInt(c.overlong_lines);
  j.Key("glued_split");
  j.UInt(c.glued_lines);
  j.EndObject();
  j.KVInt("unreadable_files", unreadable);

  std::vector<int> live = st.LiveSubjects();
  std::vector<int> ranks;
  for (int s : live) {
    if (st.subjects()[s].rank >= 0) ranks.push_back(st.subjects()[s].rank);
  }
  j.Key("ranks");
  j.BeginObject();
  j.KVInt("count", static_cast<int64_t>(ranks.size()));
  j.KV("list", CompactRanks(ranks));
  j.EndObject();
  j.Key("hosts");
  j.BeginArray();
  for (const auto& h : st.Hosts()) j.String(h);
  j.EndArray();
  j.Key("communicators");
  j.BeginArray();
  for (const auto& kv : st.comms()) {
    const CommInfo& ci = kv.second;
    j.BeginObject();
    j.KV("id", ci.id);
    j.KVInt("nranks", ci.nranks);
    std::set<int> seen = ci.RanksSeen();
    j.KV("ranks_seen", CompactRanks(std::vector<int>(seen.begin(), seen.end())));
    j.KV("ranks_init_complete", CompactRanks(std::vector<int>(ci.ranks_completed.begin(), ci.ranks_completed.end())));
    std::set<std::string> hosts;
    for (int s : ci.subjects) {
      if (!st.subjects()[s].host.empty()) hosts.insert(st.subjects()[s].host);
    }
    j.Key("hosts");
    j.BeginArray();
    for (const auto& h : hosts) j.String(h);
    j.EndArray();
    j.EndObject();
  }
  j.EndArray();
  j.Key("versions");
  j.BeginObject();
  for (const char* name : {"nccl", "pytorch"}) {
    j.Key(name);
    j.BeginArray();
    for (const auto& kv : VersionsOf(st, std::string(name) == "nccl" ? "nccl_version" : "torch_version")) {
      j.BeginObject();
      j.KV("version", kv.first);
      j.KV("ranks", RanksOfSubjects(st, kv.second));
      j.EndObject();
    }
    j.EndArray();
  }
  j.EndObject();
  j.Key("identity_conflicts");
  j.BeginArray();
  for (const auto& s : st.identity_conflicts()) j.String(s);
  j.EndArray();
  j.EndObject();  // input

  // Per-subject facts (ranks first).
  j.Key("subjects");
  j.BeginArray();
  const auto& facts = st.rules().facts();
  for (int si : live) {
    const Subject& s = st.subjects()[si];
    j.BeginObject();
    if (s.rank >= 0) j.KVInt("rank", s.rank);
    else j.Key("rank"), j.Null();
    j.KV("label", s.label);
    j.KV("host", s.host);
    if (s.pid >= 0) j.KVInt("pid", s.pid);
    j.Key("facts");
    j.BeginObject();
    for (size_t f = 0; f < facts.size(); ++f) {
      if (facts[f].keyed) {
        if (s.keyed[f].empty()) continue;
        j.Key(facts[f].name.value);
        j.BeginObject();
        for (const auto& kv : s.keyed[f]) {
          j.Key(kv.first);
          WriteFactValue(&j, facts[f], kv.second);
        }
        j.EndObject();
      } else if (const FactValue* v = s.Get(static_cast<int>(f))) {
        j.Key(facts[f].name.value);
        WriteFactValue(&j, facts[f], *v);
      }
    }
    j.EndObject();
    j.EndObject();
  }
  j.EndArray();

  j.Key("verdict");
  j.BeginObject();
  j.KV("status", d.status);
  j.KV("headline", d.headline);
  if (d.primary >= 0) {
    j.KV("primary", d.findings[d.primary].rule_id);
    j.KV("primary_fingerprint", d.findings[d.primary].fingerprint);
  } else {
    j.Key("primary");
    j.Null();
    j.Key("primary_fingerprint");
    j.Null();
  }
  j.EndObject();

  j.Key("findings");
  j.BeginArray();
  for (const Finding& f : d.findings) {
    j.BeginObject();
    j.KV("rule", f.rule_id);
    j.KV("kind", f.kind);
    j.KV("category", f.category);
    j.KV("severity", SeverityName(f.severity));
    j.Key("confidence");
    j.Double(f.confidence);
    j.KV("role", RoleName(f.role));
    j.KV("title", f.title);
    j.KV("explanation", f.explanation);
    j.KV("ranks", CompactRanks(f.ranks));
    j.Key("hosts");
    j.BeginArray();
    for (const auto& h : f.hosts) j.String(h);
    j.EndArray();
    j.Key("other_subjects");
    j.BeginArray();
    for (const auto& o : f.others) j.String(o);
    j.EndArray();
    for (auto [k, v] : {std::pair<const char*, const std::string*>{"communicator", &f.communicator},
                        {"process_group", &f.process_group},
                        {"op_type", &f.op_type},
                        {"sequence", &f.sequence}}) {
      j.Key(k);
      if (v->empty()) j.Null();
      else j.String(*v);
    }
    j.KVInt("count", f.count);
    j.Key("evidence");
    WriteEvidence(&j, st, f.evidence);
    j.KV("remediation", f.remediation);
    j.Key("references");
    j.BeginArray();
    for (const auto& r : f.references) j.String(r);
    j.EndArray();
    j.Key("explained_by");
    j.BeginArray();
    for (const auto& e : f.explained_by) j.String(e);
    j.EndArray();
    j.Key("nccl_result");
    if (f.result.empty()) j.Null();
    else j.String(f.result);
    j.KV("fingerprint", f.fingerprint);
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();
  j.str() += '\n';
  return j.str();
}

namespace {

struct Style {
  bool on;
  std::string Wrap(std::string_view code, std::string_view s) const {
    if (!on) return std::string(s);
    return fmt::format("\x1b[{}m{}\x1b[0m", code, s);
  }
  std::string Sev(Severity s) const {
    static const char* codes[] = {"2", "33;1", "31;1", "41;97;1"};
    std::string name = SeverityName(s);
    std::transform(name.begin(), name.end(), name.begin(), ::toupper);
    return Wrap(codes[static_cast<int>(s)], fmt::format("{:<8}", name));
  }
};

std::string Where(const Finding& f) {
  std::string w;
  if (!f.ranks.empty()) w = (f.ranks.size() == 1 ? "rank " : "ranks ") + CompactRanks(f.ranks);
  for (const auto& o : f.others) w += (w.empty() ? "" : ", ") + o;
  if (!f.hosts.empty()) {
    std::string h;
    size_t shown = 0;
    for (const auto& x : f.hosts) {
      if (shown++ == 6) {
        h += fmt::format(" +{} more", f.hosts.size() - 6);
        break;
      }
      h += (h.empty() ? "" : ",") + x;
    }
    w += (w.empty() ? "on " : " on ") + h;
  }
  std::string extra;
  if (!f.communicator.empty()) extra += " comm " + f.communicator;
  if (!f.process_group.empty()) extra += " pg " + f.process_group;
  if (!f.op_type.empty()) extra += " " + f.op_type;
  if (!f.sequence.empty()) extra += " #" + f.sequence;
  return w + extra;
}

std::string InputLine(const JobState& st) {
  const Counters& c = st.counters();
  int ranks = 0;
  for (int s : st.LiveSubjects()) ranks += st.subjects()[s].rank >= 0;
  std::string versions;
  for (const auto& kv : VersionsOf(st, "nccl_version")) versions += (versions.empty() ? "" : ", ") + kv.first;
  std::string fams;
  for (int i = 0; i < kNumFamilies; ++i) {
    if (!c.family_lines[i]) continue;
    fams += (fams.empty() ? "" : ", ") + fmt::format("{} {}", FamilyName(static_cast<Family>(i)),
                                                         WithCommas(c.family_lines[i]));
  }
  std::string out = fmt::format("scanned {} file{}, {}, {} lines ({})", st.files().size(),
                                st.files().size() == 1 ? "" : "s", HumanBytes(c.bytes), WithCommas(c.lines),
                                fams.empty() ? "empty" : fams);
  out += fmt::format("; {} rank{} on {} host{}", ranks, ranks == 1 ? "" : "s", st.Hosts().size(),
                     st.Hosts().size() == 1 ? "" : "s");
  if (!st.comms().empty()) out += fmt::format(", {} communicator{}", st.comms().size(), st.comms().size() == 1 ? "" : "s");
  if (!versions.empty()) out += "; NCCL " + versions;
  return out;
}

}  // namespace

std::string RenderText(const JobState& st, const Diagnosis& d, const ReportOptions& opts) {
  Style sty{opts.color};
  std::string out;
  std::string status = d.status == "fail"      ? sty.Wrap("31;1", "FAIL")
                       : d.status == "warn"    ? sty.Wrap("33;1", "WARN")
                       : d.status == "unknown" ? sty.Wrap("35;1", "UNKNOWN")
                       : d.status == "partial" ? sty.Wrap("35;1", "PARTIAL")
                                               : sty.Wrap("32;1", "OK");
  out += fmt::format("{} {}\n", status, sty.Wrap("1", d.headline));
  out += sty.Wrap("2", InputLine(st)) + "\n";
  const Counters& c = st.counters();
  if (c.binary_lines || c.overlong_lines || c.nul_lines) {
    out += sty.Wrap("2", fmt::format("unparsed: {} binary line(s), {} line(s) with NUL bytes, {} line(s) cut at the "
                                     "maximum length",
                                     c.binary_lines, c.nul_lines, c.overlong_lines)) + "\n";
  }
  for (const auto& f : st.files()) {
    if (!f.error.empty()) out += sty.Wrap("31", "unreadable: " + f.error) + "\n";
  }
  for (const auto& ic : st.identity_conflicts()) out += sty.Wrap("33", "identity: " + ic) + "\n";

  int n = 0;
  std::vector<const Finding*> infos;
  for (const Finding& f : d.findings) {
    if (f.severity == Severity::kInfo && !opts.verbose) {
      infos.push_back(&f);
      continue;
    }
    ++n;
    out += "\n";
    out += fmt::format("{} {} {}  {}\n", sty.Wrap("1", fmt::format("[{}]", n)), sty.Sev(f.severity),
                       sty.Wrap("1", f.title), sty.Wrap("2", fmt::format("{} · {} · confidence {:.2f}", f.rule_id,
                                                                         RoleName(f.role), f.confidence)));
    std::string where = Where(f);
    if (!where.empty()) out += "    " + sty.Wrap("36", where) + "\n";
    if (!f.explained_by.empty()) {
      std::string e;
      for (const auto& x : f.explained_by) e += (e.empty() ? "" : ", ") + x;
      out += "    " + sty.Wrap("2", "consequence of " + e) + "\n";
    }
    out += "    " + SanitizeForTerminal(f.explanation) + "\n";
    if (!f.result.empty()) out += "    " + sty.Wrap("2", "NCCL returned: ") + SanitizeForTerminal(f.result) + "\n";
    size_t shown = 0;
    for (const auto& e : f.evidence) {
      if (shown++ == 3) break;
      std::string loc = fmt::format("{}:{}", e.file >= 0 ? st.files()[e.file].path : "?", e.line);
      std::string text = SanitizeForTerminal(e.text);
      if (text.size() > 200) text = text.substr(0, 197) + "...";
      out += "      " + sty.Wrap("2", loc + ":") + " " + text + "\n";
    }
    if (f.count > static_cast<int64_t>(shown) && f.kind == "line") {
      out += "      " + sty.Wrap("2", fmt::format("({} matching lines in all)", WithCommas(f.count))) + "\n";
    }
    if (!f.remediation.empty()) out += "    " + sty.Wrap("32", "fix: ") + SanitizeForTerminal(f.remediation) + "\n";
  }
  if (!infos.empty()) {
    out += "\n" + sty.Wrap("2", "context:") + "\n";
    for (const Finding* f : infos) {
      out += "  " + sty.Wrap("2", "- " + f->title + " [" + f->rule_id + "]" +
                                      (Where(*f).empty() ? "" : " (" + Where(*f) + ")")) + "\n";
    }
  }
  if (d.findings.empty()) out += "\nno findings.\n";
  return out;
}

std::string RenderMarkdown(const JobState& st, const Diagnosis& d) {
  std::string out;
  std::string status = d.status == "fail"      ? "FAIL"
                       : d.status == "warn"    ? "WARN"
                       : d.status == "unknown" ? "UNKNOWN"
                       : d.status == "partial" ? "PARTIAL"
                                               : "OK";
  out += fmt::format("## ncclscan: {} — {}\n\n", status, d.headline);
  out += "_" + InputLine(st) + "_\n\n";
  if (d.findings.empty()) {
    out += "No findings.\n";
    return out;
  }
  out += "| # | severity | finding | where | role |\n|---|---|---|---|---|\n";
  int n = 0;
  auto cell = [](std::string s) {
    std::string o;
    for (char ch : SanitizeForTerminal(s)) {
      if (ch == '|') o += "\\|";
      else o += ch;
    }
    return o;
  };
  for (const Finding& f : d.findings) {
    out += fmt::format("| {} | {} | {} (`{}`) | {} | {} |\n", ++n, SeverityName(f.severity), cell(f.title), f.rule_id,
                       cell(Where(f)), RoleName(f.role));
  }
  n = 0;
  for (const Finding& f : d.findings) {
    ++n;
    if (f.severity == Severity::kInfo) continue;
    out += fmt::format("\n### {}. {} (`{}`, {})\n\n", n, f.title, f.rule_id, SeverityName(f.severity));
    std::string where = Where(f);
    if (!where.empty()) out += "**Where:** " + cell(where) + "  \n";
    out += "**Why:** " + SanitizeForTerminal(f.explanation) + "  \n";
    if (!f.result.empty()) out += "**NCCL returned:** " + cell(f.result) + "  \n";
    if (!f.remediation.empty()) out += "**Fix:** " + SanitizeForTerminal(f.remediation) + "  \n";
    out += "**Fingerprint:** `" + f.fingerprint + "`\n";
    if (!f.evidence.empty()) {
      out += "\n```text\n";
      for (const auto& e : f.evidence) {
        std::string text = SanitizeForTerminal(e.text);
        // A fence inside evidence would end the block early.
        for (size_t p = text.find("```"); p != std::string::npos; p = text.find("```", p + 1)) text[p] = '\'';
        out += fmt::format("{}:{}: {}\n", e.file >= 0 ? st.files()[e.file].path : "?", e.line, text);
      }
      out += "```\n";
    }
  }
  return out;
}

}  // namespace ncclscan
