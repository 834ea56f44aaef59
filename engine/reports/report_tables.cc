// The tables and lists of engine/reports/report.h that are not the diagnosis
// itself: the per-rank table (--ranks, text and markdown), `rules --list`
// (text and JSON) and the line naming the rules a user layer changed.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "engine/reports/markdown_escape.h"
#include "engine/reports/report.h"
#include "engine/reports/report_internal.h"
#include "parsers/text_util.h"

namespace ncclscan {

std::string RenderRankTable(const JobState& st, bool markdown) {
  const RuleSet& rules = st.rules();
  const int f_nccl = rules.fact(Fact::kNcclVersion), f_net = rules.fact(Fact::kNetwork),
            f_inter = rules.fact(Fact::kInterTransport), f_enq = rules.fact(Fact::kLastEnqueued),
            f_done = rules.fact(Fact::kLastCompleted), f_tseq = rules.fact(Fact::kTimeoutSeq),
            f_op = rules.fact(Fact::kLastOpcount), f_err = rules.fact(Fact::kFirstError);
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"rank", "host", "pid", "devices", "NCCL", "transport", "last seq", "first error"});
  size_t omitted = 0;
  for (int si : st.LiveSubjects()) {
    if (rows.size() > kMaxRankRows) {
      ++omitted;
      continue;
    }
    const Subject& s = st.subjects()[si];
    auto value = [&](int fact) -> std::string {
      const FactValue* v = s.Get(fact);
      if (!v) return "";
      if (v->values.empty()) return v->value;
      std::string j;
      for (const auto& x : v->values) j += (j.empty() ? "" : "+") + x;
      return j;
    };
    // Per process group (or communicator): the default group "0" when present.
    auto keyed = [&](int fact) -> const FactValue* {
      if (fact < 0 || fact >= static_cast<int>(s.keyed.size()) || s.keyed[fact].empty()) return nullptr;
      auto it = s.keyed[fact].find("0");
      return it != s.keyed[fact].end() ? &it->second : &s.keyed[fact].begin()->second;
    };
    std::vector<int> devs;
    for (int b = 0; b < 64; ++b) {
      if (s.devices >> b & 1) devs.push_back(b);
    }
    std::string transport = value(f_net);
    if (transport.empty()) transport = value(f_inter);
    std::string seq;
    if (const FactValue* v = keyed(f_enq)) seq = "enq " + v->value;
    if (const FactValue* v = keyed(f_done)) seq += (seq.empty() ? "" : ", ") + std::string("done ") + v->value;
    if (seq.empty()) {
      if (const FactValue* v = keyed(f_tseq)) seq = "timeout " + v->value;
    }
    if (seq.empty() && f_op >= 0 && !s.keyed[f_op].empty()) {
      // NCCL's opCount is hex without a prefix; the highest over the rank's communicators.
      long double best = -1;
      std::string raw;
      for (const auto& kv : s.keyed[f_op]) {
        long double v;
        if (ParseNumber(kv.second.value, true, &v) && v > best) {
          best = v;
          raw = kv.second.value;
        }
      }
      if (best >= 0 && best < 1.8e19L) {
        seq =
            fmt::format("opCount {} (0x{})", static_cast<uint64_t>(best), StartsWith(raw, "0x") ? raw.substr(2) : raw);
      }
    }
    rows.push_back({s.rank >= 0 ? std::to_string(s.rank) : "?", s.host.empty() ? s.label : s.host,
                    s.pid >= 0 ? std::to_string(s.pid) : "", CompactRanks(devs), value(f_nccl), transport, seq,
                    value(f_err)});
  }
  std::string out;
  if (markdown) {
    for (size_t r = 0; r < rows.size(); ++r) {
      out += "|";
      for (const auto& cell : rows[r]) out += " " + (cell.empty() ? "-" : MarkdownText(cell, kMaxCellText)) + " |";
      out += "\n";
      if (r == 0) out += "|---|---|---|---|---|---|---|---|\n";
    }
    if (omitted) out += fmt::format("\n_and {} more rank{}_\n", omitted, omitted == 1 ? "" : "s");
    return out;
  }
  for (auto& row : rows) {
    for (auto& cell : row) cell = cell.empty() ? "-" : SanitizeForTerminal(cell, kMaxCellText);
  }
  std::vector<size_t> widths(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], Columns(row[c]));
  }
  for (const auto& row : rows) {
    std::string line = " ";
    for (size_t c = 0; c < row.size(); ++c) {
      line += " " + row[c];
      if (c + 1 < row.size()) line.append(widths[c] - Columns(row[c]) + 1, ' ');
    }
    out += line + "\n";
  }
  if (omitted) out += fmt::format("  ... and {} more rank{}\n", omitted, omitted == 1 ? "" : "s");
  return out;
}

std::string RenderRuleList(const RuleSet& rules, bool json) {
  struct Row {
    const std::string& id;
    const char* kind;
    const char* category;
    const char* severity;  // null: the rule only sets facts
    const std::string& title;
    const SourcePos& pos;
    bool enabled;
    const std::vector<std::string>& references;
    const std::vector<KnownIssue>& known_issues;
  };
  std::vector<Row> rows;
  auto add_rules = [&](const std::vector<CompiledRule>& rs, bool enabled) {
    for (const auto& r : rs) {
      const LineRule& s = r.spec;
      rows.push_back({s.id.value, "line", CategoryName(s.category),
                      s.finding.present ? SeverityName(s.finding.severity) : nullptr, s.title, s.id.pos, enabled,
                      s.references, s.known_issues});
    }
  };
  auto add_correlations = [&](const std::vector<CompiledCorrelation>& cs, bool enabled) {
    for (const auto& c : cs) {
      const CorrelationRule& s = c.spec;
      rows.push_back({s.id.value, KindName(s.kind), CategoryName(s.category), SeverityName(s.finding.severity), s.title,
                      s.id.pos, enabled, s.references, s.known_issues});
    }
  };
  add_rules(rules.rules(), true);
  add_rules(rules.disabled_rules(), false);
  add_correlations(rules.correlations(), true);
  add_correlations(rules.disabled_correlations(), false);
  if (!json) {
    std::string out;
    for (const Row& r : rows) {
      out += fmt::format("{:<32} {:<8} {:<8} {:<11} {}{}\n", r.id, r.kind, r.severity ? r.severity : "facts",
                         r.category, r.title, r.enabled ? "" : " (disabled)");
    }
    return out;
  }
  Json j;
  j.BeginObject();
  j.Key("rules");
  j.BeginArray();
  for (const Row& r : rows) {
    j.BeginObject();
    j.KV("id", r.id);
    j.KV("kind", r.kind);
    j.KV("category", r.category);
    j.Key("severity");
    if (r.severity)
      j.String(r.severity);
    else
      j.Null();
    j.KV("title", r.title);
    j.KV("source", r.pos.file);
    j.KVInt("line", r.pos.line);
    j.Key("enabled");
    j.Bool(r.enabled);
    j.Key("references");
    j.BeginArray();
    for (const auto& u : r.references) j.String(u);
    j.EndArray();
    j.Key("known_issues");
    j.BeginArray();
    for (const KnownIssue& k : r.known_issues) {
      j.BeginObject();
      j.KV("url", k.url.value);
      j.KV("title", k.title);
      j.KV("component", k.component);
      j.KV("affected", k.affected_range.text());
      j.KV("fixed_in", k.fixed_in.value);
      j.Key("affected_only");
      j.Bool(k.affected_only);
      j.EndObject();
    }
    j.EndArray();
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();
  j.str() += "\n";
  return j.str();
}

std::string RuleChangesLine(const RuleSet& rules) {
  std::string line;
  for (const RuleChange& c : rules.changes()) {
    line += (line.empty() ? "rules changed: " : ", ") + c.id + " " + c.change + " (" + c.where + ")";
  }
  return line;
}

}  // namespace ncclscan
