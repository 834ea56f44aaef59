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

}  // namespace

namespace {

// When the input looks like the logs of several jobs: many ranks claimed
// twice over (identity conflicts) or several NCCL releases beside conflicts.
// "" otherwise. One scan should be one job; the note says so before anything.
std::string SeveralJobsNote(const JobState& st) {
  const size_t conflicts = st.identity_conflicts().size();
  const size_t versions = VersionsOf(st, Fact::kNcclVersion).size();
  if (conflicts == 0 || (conflicts < kConflictsOfSeveralJobs && versions < 2)) return "";
  return fmt::format(
      "this looks like several jobs: {} identity conflict{} (ranks or processes claimed twice), {} hosts, {} NCCL "
      "release{}; scan each job's logs on their own for a diagnosis of one job",
      conflicts >= kMaxIdentityConflicts ? fmt::format("{}+", conflicts) : std::to_string(conflicts),
      conflicts == 1 ? "" : "s", st.Hosts().size(), versions, versions == 1 ? "" : "s");
}

// Every string from the input goes through this before it reaches the terminal.
std::string Safe(std::string_view s) { return SanitizeForTerminal(s, kMaxFieldText); }

// The text report's head: the status and headline, what was read, and the
// notes on what could not be (unparsed lines, unreadable files, limits).
std::string TextHead(const JobState& st, const Diagnosis& d, const Style& sty, int width, bool verbose) {
  std::string out;
  const std::string status = StatusHeadline(d.status);
  static const std::map<std::string, const char*> kStatusColor = {
      {"FAIL", "31;1"}, {"CRASHED", "31;1"}, {"HUNG", "31;1"},    {"INCOMPLETE", "35;1"},
      {"WARN", "33;1"}, {"UNKNOWN", "35;1"}, {"PARTIAL", "35;1"}, {"OK", "32;1"}};
  out += fmt::format("{} {}\n", sty.Wrap(kStatusColor.at(status), status),
                     sty.Wrap("1", WrapColumns(Safe(d.headline), status.size() + 1, 2, width)));
  out += sty.Wrap("2", WrapColumns(Safe(InputLine(st)), 0, 2, width)) + "\n";
  if (d.status == Status::kOk) out += sty.Wrap("32", WrapColumns(Safe(HealthLine(st)), 0, 2, width)) + "\n";
  const Counters& c = st.counters();
  if (c.binary_lines || c.overlong_lines || c.nul_lines) {
    out += sty.Wrap("2", WrapColumns(fmt::format("unparsed: {} binary line(s), {} line(s) with NUL bytes, {} line(s) "
                                                 "cut at the maximum length",
                                                 c.binary_lines, c.nul_lines, c.overlong_lines),
                                     0, 2, width)) +
           "\n";
  }
  if (c.bad_numbers) {
    out += sty.Wrap("2", WrapColumns(fmt::format("unparsed: {} line(s) with a rank or count too large to be one "
                                                 "(not attributed to it)",
                                                 c.bad_numbers),
                                     0, 2, width)) +
           "\n";
  }
  for (const auto& f : st.files()) {
    if (f.error.empty()) continue;
    out += sty.Wrap("31", WrapColumns(Safe("unreadable: " + f.path + ": " + f.error), 0, 2, width)) + "\n";
  }
  const auto& conflicts = st.identity_conflicts();
  if (std::string jobs = SeveralJobsNote(st); !jobs.empty()) {
    out += sty.Wrap("33;1", WrapColumns(Safe(jobs), 0, 2, width)) + "\n";
  }
  const size_t kShownConflicts = 3;  // the rest are one line unless -v
  for (size_t i = 0; i < conflicts.size(); ++i) {
    if (!verbose && i == kShownConflicts) {
      out += sty.Wrap("33", fmt::format("identity: and {} more conflict{} like these (-v lists them)",
                                        conflicts.size() - i, conflicts.size() - i == 1 ? "" : "s")) +
             "\n";
      break;
    }
    out += sty.Wrap("33", WrapColumns(Safe("identity: " + conflicts[i]), 0, 2, width)) + "\n";
  }
  for (const auto& note : LimitNotes(st)) out += sty.Wrap("33", WrapColumns(note, 0, 2, width)) + "\n";
  for (const auto& e : d.internal_errors) {
    out += sty.Wrap("31", WrapColumns(Safe(InternalErrorNote(e)), 0, 2, width)) + "\n";
  }
  if (std::string sk = st.skipped().Summary(); !sk.empty())
    out += sty.Wrap("2", WrapColumns(Safe(sk), 0, 2, width)) + "\n";
  if (std::string rc = RuleChangesLine(st.rules()); !rc.empty())
    out += sty.Wrap("33", WrapColumns(Safe(rc), 0, 2, width)) + "\n";
  return out;
}

// Finding number n: title, where, explanation, up to three evidence lines,
// the fix and known issues.
std::string TextFinding(const JobState& st, const Finding& f, int n, const Style& sty, int width, bool verbose) {
  std::string out;
  {
    std::string num = fmt::format("[{}]", n);
    std::string meta = fmt::format("{} · {} · confidence {:.2f}", Safe(f.rule_id), RoleName(f.role), f.confidence);
    const size_t title_col = num.size() + 10;  // "[n] SEVERITY "
    std::string title = WrapColumns(Safe(f.title), title_col, 4, width);
    bool meta_fits = width <= 0 || EndColumn(title, title_col) + 2 + Columns(meta) <= static_cast<size_t>(width);
    out += fmt::format("{} {} {}{}{}\n", sty.Wrap("1", num), sty.Sev(f.severity), sty.Wrap("1", title),
                       meta_fits ? "  " : "\n    ", sty.Wrap("2", meta_fits ? meta : WrapColumns(meta, 4, 6, width)));
  }
  std::string where = Where(f, verbose);
  if (!where.empty()) out += "    " + sty.Wrap("36", WrapColumns(Safe(where), 4, 6, width)) + "\n";
  if (!f.explained_by.empty()) {
    std::string e;
    for (const auto& x : f.explained_by) e += (e.empty() ? "" : ", ") + x;
    out += "    " + sty.Wrap("2", WrapColumns(Safe("consequence of " + e), 4, 6, width)) + "\n";
  }
  out += "    " + WrapColumns(Safe(f.explanation), 4, 4, width) + "\n";
  if (!f.result.empty()) {
    out += "    " + sty.Wrap("2", "NCCL returned: ") + WrapColumns(Safe(f.result), 19, 6, width) + "\n";
  }
  size_t shown = 0;
  for (const auto& e : f.evidence) {
    if (shown == 3) break;
    ++shown;
    const std::string cited =
        SanitizeForTerminal(st.CitedPath(e, "?"), kMaxCellText) + fmt::format(":{}:", st.CitedLine(e));
    if (!verbose && width > 0) {  // one row each on a terminal; -v shows the whole line
      // A long path keeps its last two parts (the host or job directory and the file).
      const std::string path = st.CitedPath(e, "?");
      std::string shown_path = path;
      if (Columns(path) > static_cast<size_t>(width) / 3) {
        const size_t last = path.rfind('/');
        const size_t before = last == std::string::npos || last == 0 ? std::string::npos : path.rfind('/', last - 1);
        if (before != std::string::npos && before > 0) shown_path = ".../" + path.substr(before + 1);
      }
      const std::string cited_short =
          SanitizeForTerminal(shown_path, kMaxCellText) + fmt::format(":{}:", st.CitedLine(e));
      const std::string row = OneRow(cited_short + " " + SanitizeForTerminal(e.text, 200), 6, width);
      const size_t loc_len = std::min(row.size(), cited_short.size());
      out += "      " + sty.Wrap("2", row.substr(0, loc_len)) + row.substr(loc_len) + "\n";
      continue;
    }
    std::string loc = WrapColumns(cited, 6, 8, width);
    std::string body = WrapColumns(SanitizeForTerminal(e.text, 200), EndColumn(loc, 6) + 1, 8, width);
    out += "      " + sty.Wrap("2", loc) + (StartsWith(body, "\n") ? "" : " ") + body + "\n";
  }
  if (!f.kind && f.count > static_cast<int64_t>(shown)) {
    out += "      " + sty.Wrap("2", fmt::format("({} matching lines in all, {} shown)", WithCommas(f.count), shown)) +
           "\n";
  } else if (f.evidence.size() > shown) {
    out += "      " +
           sty.Wrap("2", fmt::format("({} more evidence line{}: --format json or markdown)", f.evidence.size() - shown,
                                     f.evidence.size() - shown == 1 ? "" : "s")) +
           "\n";
  }
  if (!f.remediation.empty()) {
    out += "    " + sty.Wrap("32", "fix: ") + WrapColumns(Safe(f.remediation), 9, 6, width) + "\n";
  }
  for (const KnownIssueNote& k : f.known_issues) {
    out += "    " + sty.Wrap("35", "known issue: ") +
           WrapColumns(Safe(KnownIssueLine(k).substr(sizeof("known issue: ") - 1)), 17, 6, width) + "\n";
  }
  return out;
}

// The info findings not shown in full, one line each, under "context:".
std::string TextContext(const std::vector<const Finding*>& infos, const Style& sty, int width) {
  std::string out = "\n" + sty.Wrap("2", "context:") + "\n";
  size_t listed = 0;
  for (const Finding* f : infos) {
    if (listed++ == kMaxReportFindings) {
      out += "  " + sty.Wrap("2", fmt::format("- and {} more", infos.size() - kMaxReportFindings)) + "\n";
      break;
    }
    const std::string where = Where(*f, false);
    std::string line = "- " + f->title + " [" + f->rule_id + "]" + (where.empty() ? "" : " (" + where + ")");
    out += "  " + sty.Wrap("2", WrapColumns(Safe(line), 2, 4, width)) + "\n";
  }
  return out;
}

// The consequences of the findings above (cascades), one line each: number,
// severity, title, who and rule. -v shows them in full.
std::string TextConsequences(const std::vector<std::pair<int, const Finding*>>& cascades, const Finding* primary,
                             const Style& sty, int width) {
  std::string out = "\n" + sty.Wrap("2", "consequences (-v shows each in full):") + "\n";
  for (const auto& [n, f] : cascades) {
    const std::string num = fmt::format("[{}]", n);
    const std::string where = WhoText(f->ranks, f->others, f->hosts);
    std::string tail = (where.empty() ? "" : " (" + where + ")") + "  " + f->rule_id;
    if (!f->explained_by.empty()) {
      // Of the primary finding where it is one of the causes, else of the first.
      const auto& ex = f->explained_by;
      const bool of_primary = primary && std::find(ex.begin(), ex.end(), primary->rule_id) != ex.end();
      tail += " · of " + (of_primary ? primary->rule_id : ex.front());
    }
    const size_t col = 2 + num.size() + 10;
    out +=
        "  " + sty.Wrap("1", num) + " " + sty.Sev(f->severity) + " " + OneRow(Safe(f->title + tail), col, width) + "\n";
  }
  return out;
}

}  // namespace

std::string RenderText(const JobState& st, const Diagnosis& d, const ReportOptions& opts) {
  Style sty{opts.color};
  const int width = opts.width;
  std::string out = TextHead(st, d, sty, width, opts.verbose);

  int n = 0;
  size_t omitted = 0;
  std::vector<const Finding*> infos;
  std::vector<std::pair<int, const Finding*>> cascades;  // one line each unless -v
  for (const Finding& f : d.findings) {
    if (f.severity == Severity::kInfo && !opts.verbose && !f.primary) {
      infos.push_back(&f);
      continue;
    }
    if (static_cast<size_t>(n) == kMaxReportFindings) {
      ++omitted;
      continue;
    }
    ++n;
    if (!opts.verbose && !f.primary && f.role == Role::kCascade) {
      cascades.emplace_back(n, &f);
      continue;
    }
    out += "\n";
    out += TextFinding(st, f, n, sty, width, opts.verbose);
  }
  if (!cascades.empty())
    out += TextConsequences(cascades, d.primary >= 0 ? &d.findings[d.primary] : nullptr, sty, width);
  if (omitted) {
    out += "\n" +
           sty.Wrap("1", fmt::format("... and {} more finding{} (--format json lists up to {})", omitted,
                                     omitted == 1 ? "" : "s", kMaxJsonFindings)) +
           "\n";
  }
  if (!infos.empty()) out += TextContext(infos, sty, width);
  if (d.findings.empty()) out += "\nno findings.\n";
  if (opts.ranks) out += "\n" + sty.Wrap("1", "ranks:") + "\n" + RenderRankTable(st, false);
  return out;
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
