// Reports: the same diagnosis as a versioned JSON document (for bots, schema in
// docs/diagnosis.schema.json), a coloured terminal report (for people), and
// markdown (for tickets). Output is a pure function of JobState + Diagnosis, so
// it is byte-identical whatever the thread count or argument order.
//
// Thread-safety: pure functions.
#ifndef NCCLSCAN_ENGINE_REPORTS_REPORT_H_
#define NCCLSCAN_ENGINE_REPORTS_REPORT_H_

#include <functional>
#include <string>

#include "engine/models/diagnosis.h"
#include "engine/state/job_state.h"

namespace ncclscan {

inline constexpr const char* kSchemaVersion = "ncclscan.diagnosis/1";
// major.minor of the JSON document: the major is the "/1" of kSchemaVersion
// (a breaking change bumps both); a minor adds fields. 1.1: findings[].known_issues.
// 1.2: evidence rank/host/time, rank_ids, explained_by_findings/explains, ISO 8601
// times where the logs name the year, fingerprints without the role.
inline constexpr const char* kSchemaMinorVersion = "1.2";
const char* ToolVersion();

// Bounds on what a report prints (the rest is counted: "and N more"), so that
// a log with a storm of distinct messages cannot produce a report nobody can
// read or store. Findings are ranked, so the cut keeps the worst ones; the
// primary finding is always kept.
inline constexpr size_t kMaxJsonFindings = 200;   // JSON: then "findings_omitted"
inline constexpr size_t kMaxReportFindings = 50;  // text and markdown, per list
inline constexpr size_t kMaxFieldText = 2000;     // bytes of one explanation, fix, title, headline
inline constexpr size_t kMaxCellText = 160;       // bytes of one cell of a table (--ranks)
inline constexpr size_t kMaxRankRows = 1000;      // rows of the --ranks table
// Identity conflicts from which the input reads as several jobs (SeveralJobsNote).
inline constexpr size_t kConflictsOfSeveralJobs = 8;

struct ReportOptions {
  bool color = false;
  bool verbose = false;  // text: also list info findings in full
  // text: wrap prose and evidence to this many columns (the terminal's width);
  // 0: no wrapping (not a terminal).
  int width = 0;
  bool ranks = false;  // text and markdown: add the per-rank table
  // text: --rank R / --host H: only the findings that concern that rank or
  // host (numbered as in the whole report), with its evidence lines.
  int only_rank = -1;
  std::string only_host;
  // text: -C N: N lines before and after each evidence line, as context_lines
  // gives them ((line number, text) pairs around e; none where the input
  // cannot be read again, as stdin).
  int context = 0;
  std::function<std::vector<std::pair<int64_t, std::string>>(const Evidence& e)> context_lines;
};

// Every string from the input is escaped for the output it goes to: JSON by
// AppendJsonEscaped, text by SanitizeForTerminal (parsers/text_util.h),
// markdown by engine/reports/markdown_escape.h.
std::string RenderJson(const JobState& state, const Diagnosis& d);
// The rules a site file redefined or turned off, as one line for the text,
// markdown and trace reports ("rules changed: NCCL-CONN-CLOSED overridden
// (site/x.yaml:2), ..."); "" with the built-in rules as they are.
std::string RuleChangesLine(const RuleSet& rules);
std::string RenderText(const JobState& state, const Diagnosis& d, const ReportOptions& opts);
std::string RenderMarkdown(const JobState& state, const Diagnosis& d, const ReportOptions& opts = {});

// One known issue of a finding as the text and markdown reports say it:
// "known issue: TITLE (URL), fixed in NCCL 2.21.5; this log's NCCL 2.19.3 is
// affected" (or "should be fixed in this version (NCCL 2.22.3)", ...).
std::string KnownIssueLine(const KnownIssueNote& n);

// The per-rank table (--ranks): rank, host, pid, devices, NCCL version,
// transport, last sequence, first error; text columns or a markdown table.
std::string RenderRankTable(const JobState& state, bool markdown);

// `ncclscan rules --list`: every rule and correlation, the disabled ones last.
// Text: one aligned row each (id, kind, severity, category, title). JSON:
// {"rules": [{id, kind, category, severity (null for fact-only rules), title,
// source, line, enabled, references, known_issues}]}.
std::string RenderRuleList(const RuleSet& rules, bool json);

}  // namespace ncclscan

#endif  // NCCLSCAN_ENGINE_REPORTS_REPORT_H_
