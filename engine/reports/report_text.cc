// RenderText (engine/reports/report.h): the terminal report. Its head (status,
// headline, what was read and what could not be), each finding (in full, or
// one row for a consequence), --rank / --host filtering and -C context.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "engine/reports/report.h"
#include "engine/reports/report_internal.h"

namespace ncclscan {

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

// --rank R / --host H: what is shown, how many findings concern it, and the
// rank's last line (what it printed last, the first thing to read of a rank
// that went quiet).
std::string ShowingLine(const JobState& st, const ReportOptions& opts, size_t involved, size_t all) {
  std::string who, last;
  if (opts.only_rank >= 0) {
    who = fmt::format("rank {}", opts.only_rank);
    const int last_line = st.rules().fact(Fact::kLastLine);
    bool found = false;
    for (int s : st.LiveSubjects()) {
      const Subject& sub = st.subjects()[s];
      if (sub.rank != opts.only_rank) continue;
      found = true;
      if (!sub.host.empty()) who += " on " + sub.host;
      if (sub.pid >= 0) who += fmt::format(" (pid {})", sub.pid);
      if (const FactValue* v = last_line >= 0 ? sub.Get(last_line) : nullptr) {
        last = fmt::format("; its last line: {}:{}: {}", st.CitedPath(v->evidence, "?"), st.CitedLine(v->evidence),
                           v->evidence.text);
      }
      break;
    }
    if (!found) who += " (not in these logs: no line of it was read)";
  } else {
    size_t ranks = 0;
    for (int s : st.LiveSubjects()) ranks += st.subjects()[s].host == opts.only_host && st.subjects()[s].rank >= 0;
    who = fmt::format("host {} ({} rank{})", opts.only_host, ranks, ranks == 1 ? "" : "s");
  }
  return fmt::format("showing {}: {} of {} finding{} concern it{}", who, involved, all, all == 1 ? "" : "s", last);
}

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

// What a text report shows of each finding: its options, and which evidence
// lines (--rank / --host: that rank's or host's, where the finding has some).
struct TextView {
  const JobState& st;
  const Style& sty;
  const ReportOptions& opts;
  const EvidenceOwners& owners;
  bool Filtered() const { return opts.only_rank >= 0 || !opts.only_host.empty(); }
  bool Mine(const Evidence& e) const {
    return opts.only_rank >= 0 ? owners.Rank(e) == opts.only_rank : owners.Host(e) == opts.only_host;
  }
  // Whether finding f concerns the rank or host shown (always, unfiltered).
  bool Involves(const Finding& f) const {
    if (!Filtered()) return true;
    auto has = [](const auto& v, const auto& x) { return std::find(v.begin(), v.end(), x) != v.end(); };
    if (opts.only_rank >= 0 && (has(f.ranks, opts.only_rank) || has(f.suspect_ranks, opts.only_rank))) return true;
    if (!opts.only_host.empty() && (has(f.hosts, opts.only_host) || has(f.suspect_hosts, opts.only_host))) return true;
    return std::any_of(f.evidence.begin(), f.evidence.end(), [&](const Evidence& e) { return Mine(e); });
  }
};

// One evidence line: "file:line: text", one row on a terminal unless -v (a
// long path keeps its last two parts), with -C N's lines around it.
std::string TextEvidence(const TextView& v, const Evidence& e) {
  const JobState& st = v.st;
  const int width = v.opts.width;
  std::vector<std::pair<int64_t, std::string>> around;
  if (v.opts.context > 0 && v.opts.context_lines) around = v.opts.context_lines(e);
  std::string out;
  auto context_rows = [&](bool before) {
    for (const auto& [no, text] : around) {
      if ((no < e.line) != before || no == e.line) continue;
      out += "        " + v.sty.Wrap("2", fmt::format("{}-", no)) + " " +
             OneRow(SanitizeForTerminal(text, 200), 10 + std::to_string(no).size(), width) + "\n";
    }
  };
  context_rows(true);
  const bool one_row = !v.opts.verbose && width > 0;  // on a terminal; -v shows the whole line
  std::string path = st.CitedPath(e, "?");
  if (one_row && Columns(path) > static_cast<size_t>(width) / 3) {
    // A long path keeps its last two parts (the host or job directory and the file).
    const size_t last = path.rfind('/');
    const size_t before = last == std::string::npos || last == 0 ? std::string::npos : path.rfind('/', last - 1);
    if (before != std::string::npos && before > 0) path = ".../" + path.substr(before + 1);
  }
  const std::string cited = SanitizeForTerminal(path, kMaxCellText) + fmt::format(":{}:", st.CitedLine(e));
  if (one_row) {
    const std::string row = OneRow(cited + " " + SanitizeForTerminal(e.text, 200), 6, width);
    const size_t loc_len = std::min(row.size(), cited.size());
    out += "      " + v.sty.Wrap("2", row.substr(0, loc_len)) + row.substr(loc_len) + "\n";
  } else {
    std::string loc = WrapColumns(cited, 6, 8, width);
    std::string body = WrapColumns(SanitizeForTerminal(e.text, 200), EndColumn(loc, 6) + 1, 8, width);
    out += "      " + v.sty.Wrap("2", loc) + (StartsWith(body, "\n") ? "" : " ") + body + "\n";
  }
  context_rows(false);
  return out;
}

// Finding number n: title, where, explanation, up to three evidence lines,
// the fix and known issues.
std::string TextFinding(const TextView& v, const Finding& f, int n) {
  const Style& sty = v.sty;
  const int width = v.opts.width;
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
  std::string where = Where(f, v.opts.verbose);
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
  // --rank / --host: that rank's or host's lines where the finding holds some.
  std::vector<const Evidence*> evidence;
  for (const auto& e : f.evidence) {
    if (v.Filtered() && v.Mine(e)) evidence.push_back(&e);
  }
  if (evidence.empty()) {
    for (const auto& e : f.evidence) evidence.push_back(&e);
  }
  size_t shown = 0;
  for (const Evidence* e : evidence) {
    if (shown == 3) break;
    ++shown;
    out += TextEvidence(v, *e);
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
  const EvidenceOwners owners(st);
  const TextView view{st, sty, opts, owners};
  if (view.Filtered()) {
    size_t involved = 0;
    for (const Finding& f : d.findings) involved += view.Involves(f);
    out += sty.Wrap("1", WrapColumns(Safe(ShowingLine(st, opts, involved, d.findings.size())), 0, 2, width)) + "\n";
  }

  int n = 0;
  size_t omitted = 0;
  std::vector<const Finding*> infos;
  std::vector<std::pair<int, const Finding*>> cascades;  // one line each unless -v
  for (const Finding& f : d.findings) {
    const bool info_line = f.severity == Severity::kInfo && !opts.verbose && !f.primary;  // under "context:"
    if (!view.Involves(f)) {  // --rank / --host: numbers stay those of the whole report
      n += !info_line;
      continue;
    }
    if (info_line) {
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
    out += TextFinding(view, f, n);
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

}  // namespace ncclscan
