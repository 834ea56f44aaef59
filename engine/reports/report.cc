#include "engine/reports/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <tuple>

#include "engine/reports/markdown_escape.h"
#include "engine/reports/report_internal.h"
#include "parsers/text_util.h"

#ifndef NCCLSCAN_VERSION
#define NCCLSCAN_VERSION "0.0.0"
#endif

namespace ncclscan {

const char* ToolVersion() { return NCCLSCAN_VERSION; }

std::string RanksOfSubjects(const JobState& st, const std::vector<int>& subjects) {
  std::vector<int> r;
  for (int s : subjects) {
    if (st.subjects()[s].rank >= 0) r.push_back(st.subjects()[s].rank);
  }
  return CompactRanks(r);
}

// NCCL / PyTorch versions and the ranks that reported each.
std::map<std::string, std::vector<int>> VersionsOf(const JobState& st, Fact fact_id) {
  std::map<std::string, std::vector<int>> out;
  int fact = st.rules().fact(fact_id);
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

// input.skipped and input.walk_errors (engine/io/source.h: SkippedInputs).
void WriteSkipped(Json* j, const SkippedInputs& sk) {
  j->Key("skipped");
  j->BeginObject();
  for (const char* reason : {kSkipNotALog, kSkipBinary, kSkipDuplicate, kSkipHidden}) {
    auto it = sk.count.find(reason);
    j->Key(reason);
    j->UInt(it == sk.count.end() ? 0 : it->second);
  }
  j->Key("paths");
  j->BeginArray();
  for (const auto& p : sk.paths) {
    j->BeginObject();
    j->KV("path", p.second);
    j->KV("reason", p.first);
    j->EndObject();
  }
  j->EndArray();
  j->EndObject();
  j->Key("walk_errors");
  j->UInt(sk.walk_errors);
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

// A field of a report at most kMaxFieldText bytes long, cut between characters.
std::string Bounded(std::string_view s) {
  if (s.size() <= kMaxFieldText) return std::string(s);
  return std::string(CutUtf8(s, kMaxFieldText - 3)) + "...";
}

std::string WithCommas(uint64_t v) {
  std::string s = std::to_string(v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

std::string KnownIssueLine(const KnownIssueNote& n) {
  const KnownIssue& k = *n.issue;
  const std::string lib = k.component == "torch" ? "PyTorch" : "NCCL";
  std::string versions;
  for (size_t i = 0; i < n.versions.size() && i < 3; ++i) versions += (i ? ", " : "") + n.versions[i];
  if (n.versions.size() > 3) versions += fmt::format(" and {} more", n.versions.size() - 3);
  std::string out = "known issue: " + k.title + " (" + k.url.value + ")";
  if (k.affected_range.every() && k.fixed_in.value.empty()) {
    // A mechanism of the environment or of usage: no release has or lacks it.
    return out + ", applies to every " + lib + " release";
  }
  out += k.fixed_in.value.empty() ? ", not fixed in any " + lib + " release"
                                  : ", fixed in " + lib + " " + k.fixed_in.value;
  if (n.status == "affected") {
    out += "; this log's " + lib + " " + versions + (n.versions.size() == 1 ? " is" : " are") + " affected";
  } else if (n.status == "fixed") {
    out += "; should be fixed in this version (" + lib + " " + versions + "): if it still happens, look further";
  } else if (n.status == "not_affected") {
    out +=
        "; this log's " + lib + " " + versions + " is outside the affected releases (" + k.affected_range.text() + ")";
  } else {
    out += "; the log does not say its " + lib + " version" +
           (k.affected_only ? ", so the finding stands unconfirmed" : "");
  }
  return out;
}

namespace {

// Every rank and host of a finding (up to six hosts), for -v.
std::string EveryWho(const Finding& f) {
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
  return w;
}

}  // namespace

// Where a finding is: who, compactly ("ranks 0-11 on 3 hosts", WhoText) or
// in full (verbose); then its communicator, group, op and sequence.
std::string Where(const Finding& f, bool verbose) {
  std::string w = verbose ? EveryWho(f) : WhoText(f.ranks, f.others, f.hosts);
  if (!f.communicator.empty()) w += " comm " + f.communicator;
  if (!f.process_group.empty()) w += " pg " + f.process_group;
  if (!f.op_type.empty()) w += " " + f.op_type;
  if (!f.sequence.empty()) w += " #" + f.sequence;
  return w;
}

std::string InputLine(const JobState& st) {
  const Counters& c = st.counters();
  int ranks = 0;
  for (int s : st.LiveSubjects()) ranks += st.subjects()[s].rank >= 0;
  std::string versions;
  for (const auto& kv : VersionsOf(st, Fact::kNcclVersion)) versions += (versions.empty() ? "" : ", ") + kv.first;
  std::string fams;
  for (int i = 0; i < kNumFamilies; ++i) {
    if (!c.family_lines[i]) continue;
    fams += (fams.empty() ? "" : ", ") +
            fmt::format("{} {}", FamilyName(static_cast<Family>(i)), WithCommas(c.family_lines[i]));
  }
  std::string out =
      fmt::format("scanned {} file{}, {}, {} lines ({})", st.files().size(), st.files().size() == 1 ? "" : "s",
                  HumanBytes(c.bytes), WithCommas(c.lines), fams.empty() ? "empty" : fams);
  out += fmt::format("; {} rank{} on {} host{}", ranks, ranks == 1 ? "" : "s", st.Hosts().size(),
                     st.Hosts().size() == 1 ? "" : "s");
  if (!st.comms().empty())
    out += fmt::format(", {} communicator{}", st.comms().size(), st.comms().size() == 1 ? "" : "s");
  if (!versions.empty()) out += "; NCCL " + versions;
  return out;
}

// The one line a run without problems gets: what was healthy.
// What the state's bounds left out (JobState: kMaxSubjects, kMaxComms,
// kMaxKeysPerFact), a line each; none when the input stayed within them.
std::string InternalErrorNote(const std::string& e) {
  return "internal error in " + e + ": that check did not run; the rest of the diagnosis stands (please report this)";
}

std::vector<std::string> LimitNotes(const JobState& st) {
  const Counters& c = st.counters();
  std::vector<std::string> notes;
  if (c.over_subject_cap) {
    notes.push_back(
        fmt::format("limit: more than {} processes and ranks; {} line(s) of the others are summarised as "
                    "one subject, '(more processes and ranks than the subject cap)'",
                    kMaxSubjects, c.over_subject_cap));
  }
  if (c.over_comm_cap) {
    notes.push_back(
        fmt::format("limit: more than {} communicators; {} line(s) of the others were read for facts and "
                    "findings but their communicators are not tracked",
                    kMaxComms, c.over_comm_cap));
  }
  if (c.over_key_cap) {
    notes.push_back(fmt::format("limit: {} value(s) of keyed facts past {} keys on one process were dropped",
                                c.over_key_cap, kMaxKeysPerFact));
  }
  if (c.over_fr_entry_cap) {
    notes.push_back(
        fmt::format("limit: {} older Flight Recorder entries were not kept (each dump keeps its newest {}; "
                    "past {} entries held, its newest {})",
                    c.over_fr_entry_cap, kMaxFrEntriesPerDump, kMaxFrEntriesHeld, kFrEntriesPastBound));
  }
  return notes;
}

std::string HealthLine(const JobState& st) {
  int ranks = 0;
  std::set<std::string> nets;
  const int net = st.rules().fact(Fact::kNetwork);
  for (int s : st.LiveSubjects()) {
    const Subject& sub = st.subjects()[s];
    ranks += sub.rank >= 0;
    if (const FactValue* v = sub.Get(net)) nets.insert(v->value);
  }
  size_t hosts = st.Hosts().size(), complete = 0;
  for (const auto& kv : st.comms()) {
    complete += kv.second.nranks > 0 && kv.second.ranks_completed.size() >= static_cast<size_t>(kv.second.nranks);
  }
  std::string out =
      fmt::format("healthy: {} rank{} on {} host{}", ranks, ranks == 1 ? "" : "s", hosts, hosts == 1 ? "" : "s");
  if (!st.comms().empty()) {
    out += fmt::format("; {} of {} communicator{} initialised on every rank", complete, st.comms().size(),
                       st.comms().size() == 1 ? "" : "s");
  }
  if (!nets.empty()) {
    out += "; network ";
    for (const auto& n : nets) out += (n == *nets.begin() ? "" : ", ") + n;
  }
  return out + "; nothing at warning or above";
}

std::string RenderMarkdown(const JobState& st, const Diagnosis& d, const ReportOptions& opts) {
  // Every string from the input is escaped (markdown_escape.h): MarkdownText
  // in prose, headings and cells, MarkdownCodeSpan in inline code, and code
  // blocks fenced by MarkdownFence after SanitizeForTerminal.
  auto text = [](std::string_view s) { return MarkdownText(s, kMaxFieldText); };
  std::string out;
  out += fmt::format("## ncclscan: {} — {}\n\n", StatusHeadline(d.status), text(d.headline));
  out += "_" + text(InputLine(st)) + "_\n\n";
  if (d.status == Status::kOk) out += text(HealthLine(st)) + "\n\n";
  bool notes = false;
  for (const auto& f : st.files()) {
    if (f.error.empty()) continue;
    out += "- unreadable: " + MarkdownCodeSpan(f.path) + ": " + text(f.error) + "\n";
    notes = true;
  }
  for (const auto& ic : st.identity_conflicts()) {
    out += "- identity: " + text(ic) + "\n";
    notes = true;
  }
  for (const auto& note : LimitNotes(st)) {
    out += "- " + text(note) + "\n";
    notes = true;
  }
  for (const auto& e : d.internal_errors) {
    out += "- " + text(InternalErrorNote(e)) + "\n";
    notes = true;
  }
  if (std::string sk = st.skipped().Summary(); !sk.empty()) {
    out += "- " + text(sk) + "\n";
    notes = true;
  }
  if (std::string rc = RuleChangesLine(st.rules()); !rc.empty()) {
    out += "- " + text(rc) + "\n";
    notes = true;
  }
  if (notes) out += "\n";
  if (d.findings.empty()) {
    out += "No findings.\n";
    if (opts.ranks) out += "\n### Ranks\n\n" + RenderRankTable(st, true);
    return out;
  }
  const size_t listed = std::min(d.findings.size(), kMaxReportFindings);
  out += "| # | severity | finding | where | role |\n|---|---|---|---|---|\n";
  for (size_t i = 0; i < listed; ++i) {
    const Finding& f = d.findings[i];
    out += fmt::format("| {} | {} | {} ({}) | {} | {} |\n", i + 1, SeverityName(f.severity), text(f.title),
                       MarkdownCodeSpan(f.rule_id, /*in_table_cell=*/true), text(Where(f, true)), RoleName(f.role));
  }
  if (d.findings.size() > listed) {
    size_t more = d.findings.size() - listed;
    out += fmt::format("\n_and {} more finding{} (`ncclscan --format json` lists up to {})_\n", more,
                       more == 1 ? "" : "s", kMaxJsonFindings);
  }
  for (size_t i = 0; i < listed; ++i) {
    const Finding& f = d.findings[i];
    if (f.severity == Severity::kInfo) continue;
    out += fmt::format("\n### {}. {} ({}, {})\n\n", i + 1, text(f.title), MarkdownCodeSpan(f.rule_id),
                       SeverityName(f.severity));
    std::string where = Where(f, true);
    if (!where.empty()) out += "**Where:** " + text(where) + "  \n";
    out += "**Why:** " + text(f.explanation) + "  \n";
    if (!f.result.empty()) out += "**NCCL returned:** " + text(f.result) + "  \n";
    if (!f.remediation.empty()) out += "**Fix:** " + text(f.remediation) + "  \n";
    for (const KnownIssueNote& k : f.known_issues) {
      out += "**Known issue:** " + text(KnownIssueLine(k).substr(sizeof("known issue: ") - 1)) + "  \n";
    }
    out += "**Fingerprint:** " + MarkdownCodeSpan(f.fingerprint) + "\n";
    if (!f.evidence.empty()) {
      std::vector<std::string> lines;
      for (const auto& e : f.evidence) {
        lines.push_back(SanitizeForTerminal(st.CitedPath(e, "?"), kMaxCellText) +
                        fmt::format(":{}: ", st.CitedLine(e)) + SanitizeForTerminal(e.text));
      }
      // Longer than any run of backticks inside: the block cannot be closed early.
      const std::string fence = MarkdownFence(lines);
      out += "\n" + fence + "text\n";
      for (const auto& l : lines) out += l + "\n";
      out += fence + "\n";
      if (!f.kind && f.count > static_cast<int64_t>(f.evidence.size())) {
        out += fmt::format("\n_{} matching lines in all; the first {} are shown._\n", WithCommas(f.count),
                           f.evidence.size());
      }
    }
  }
  if (opts.ranks) out += "\n### Ranks\n\n" + RenderRankTable(st, true);
  return out;
}

}  // namespace ncclscan
