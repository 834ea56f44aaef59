// catalog_coverage: how much of NCCL's and PyTorch's own message catalogs the
// rules diagnose (DESIGN.md §6). Reads a TSV of instantiated catalog lines
// (tools/nccl_catalog.py instantiate, or docs/catalog/torch_messages.tsv),
// runs each line alone through the parser and the built-in rules, and sorts it
// into: specific (a rule with a finding at warning or above that is not a
// catch-all), catch-all only, or nothing. Prints the figures per group and the
// lines that got nothing, and fails below the floors given.
//
// usage: ncclscan_catalog_coverage TSV [--min-warning F] [--min-specific F] [--list-catchall]
//   TSV columns (by header name): id, subsystem|source, logline|example, and an
//   optional expect column: rows whose expect is "context" need no finding.
//   Without a header the columns are id, subsystem, logline.
//   Rows whose group starts with "info-" are NCCL WARN call sites inside
//   NOWARN(), which NCCL prints at INFO level as tolerated probes: they are
//   reported apart and not held to the floors.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "parsers/line_parser.h"
#include "rules/rule_loader.h"

namespace ncclscan {
namespace {

struct Row {
  std::string id, group, line, expect;
};

std::vector<std::string> SplitTabs(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == '\t') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

bool ReadRows(const std::string& path, std::vector<Row>* rows, std::string* err) {
  std::ifstream in(path);
  if (!in) {
    *err = "cannot read " + path;
    return false;
  }
  std::string line;
  if (!std::getline(in, line)) {
    *err = path + ": empty";
    return false;
  }
  std::vector<std::string> head = SplitTabs(line);
  int id = -1, group = -1, text = -1, expect = -1;
  for (size_t i = 0; i < head.size(); ++i) {
    const std::string& h = head[i];
    if (h == "id")
      id = static_cast<int>(i);
    else if (h == "subsystem" || h == "source")
      group = static_cast<int>(i);
    else if (h == "logline" || h == "example")
      text = static_cast<int>(i);
    else if (h == "expect")
      expect = static_cast<int>(i);
  }
  int n = 1;
  if (id < 0 && group < 0 && text < 0 && head.size() >= 3) {
    // No header: tools/nccl_catalog.py instantiate writes id, subsystem, logline.
    id = 0, group = 1, text = 2;
    rows->push_back(Row{head[0], head[1], head[2], ""});
  } else if (id < 0 || group < 0 || text < 0) {
    *err = path + ": header needs columns id, subsystem (or source) and logline (or example)";
    return false;
  }
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    std::vector<std::string> f = SplitTabs(line);
    if (static_cast<int>(f.size()) <= std::max({id, group, text, expect})) {
      *err = path + ":" + std::to_string(n) + ": too few columns";
      return false;
    }
    rows->push_back(Row{f[id], f[group], f[text], expect >= 0 ? f[expect] : ""});
  }
  return true;
}

double Arg(int argc, char** argv, const char* name, double def) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == name) return std::atof(argv[i + 1]);
  }
  return def;
}

bool Flag(int argc, char** argv, const char* name) {
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == name) return true;
  }
  return false;
}

enum Outcome { kSpecific, kCatchAll, kNone };

int Main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: ncclscan_catalog_coverage TSV [--min-warning F] [--min-specific F]\n");
    return 2;
  }
  std::vector<Row> rows;
  std::string err;
  if (!ReadRows(argv[1], &rows, &err)) {
    std::fprintf(stderr, "catalog_coverage: error: %s\n", err.c_str());
    return 2;
  }
  std::string load_errors;
  auto rules = LoadRules({}, &load_errors, nullptr);
  if (!rules) {
    std::fprintf(stderr, "%s", load_errors.c_str());
    return 2;
  }
  const double min_warning = Arg(argc, argv, "--min-warning", 1.0);
  const double min_specific = Arg(argc, argv, "--min-specific", 0.0);

  LineParser parser;
  Arena arena;
  MatchScratch ms;
  struct Tally {
    int n = 0, specific = 0, catchall = 0, none = 0;
  };
  std::map<std::string, Tally> by_group;
  Tally held, info;
  int context_rows = 0;  // benign lines in a table of shapes: they need no finding
  std::vector<std::string> nothing, catchall_lines;
  for (const Row& row : rows) {
    arena.Reset();
    Outcome o = kNone;
    parser.ParseEach(row.line, &arena, [&](ParsedLine& pl, int) {
      rules->Match(pl, &ms, [&](int ri, const re2::StringPiece*, int) {
        const CompiledRule& r = rules->rules()[ri];
        if (!r.spec.finding.present || r.spec.finding.severity < Severity::kWarning) return;
        Outcome got = r.spec.fallback ? kCatchAll : kSpecific;
        if (got < o) o = got;
      });
    });
    const bool is_info = row.group.rfind("info-", 0) == 0;
    const bool context = row.expect == "context";
    context_rows += context;
    Tally& g = by_group[row.group];
    Tally& total = is_info ? info : held;
    for (Tally* t : {&g, &total}) {
      t->n++;
      if (o == kSpecific)
        t->specific++;
      else if (o == kCatchAll)
        t->catchall++;
      else
        t->none++;
    }
    if (o == kNone && !is_info && !context) nothing.push_back(row.id + "\t" + row.group + "\t" + row.line);
    if (o == kCatchAll && !is_info) catchall_lines.push_back(row.id + "\t" + row.group + "\t" + row.line);
  }
  std::printf("%-28s %6s %9s %10s %8s\n", "group", "lines", "specific", "catch-all", "nothing");
  for (const auto& kv : by_group) {
    const Tally& t = kv.second;
    std::printf("%-28s %6d %9d %10d %8d\n", kv.first.c_str(), t.n, t.specific, t.catchall, t.none);
  }
  if (Flag(argc, argv, "--list-catchall")) {
    std::printf("\nonly the catch-all:\n");
    for (const auto& l : catchall_lines) std::printf("  %s\n", l.c_str());
  }
  if (!nothing.empty()) {
    std::printf("\nno finding at warning or above:\n");
    for (const auto& l : nothing) std::printf("  %s\n", l.c_str());
  }
  const int need = held.n - context_rows;
  const double warn_frac = need > 0 ? double(held.specific + held.catchall) / need : 1.0;
  const double spec_frac = need > 0 ? double(held.specific) / need : 1.0;
  std::printf(
      "\n%d catalog lines (%d NOWARN probes printed as INFO reported apart, %d context rows): "
      "%.1f%% at least a warning, %.1f%% specific (%d), %.1f%% only the catch-all (%d), %d nothing\n",
      held.n, info.n, context_rows, 100 * warn_frac, 100 * spec_frac, held.specific,
      need > 0 ? 100.0 * held.catchall / need : 0.0, held.catchall, static_cast<int>(nothing.size()));
  int failed = 0;
  if (warn_frac + 1e-9 < min_warning) {
    std::printf("FAIL: at least a warning for %.1f%% of the lines, floor %.1f%%\n", 100 * warn_frac, 100 * min_warning);
    ++failed;
  }
  if (spec_frac + 1e-9 < min_specific) {
    std::printf("FAIL: specific for %.1f%% of the lines, floor %.1f%%\n", 100 * spec_frac, 100 * min_specific);
    ++failed;
  }
  std::printf("%d passed, %d failed\n", 2 - failed, failed);
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace ncclscan

int main(int argc, char** argv) { return ncclscan::Main(argc, argv); }
