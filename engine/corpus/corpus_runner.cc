#include "engine/corpus/corpus_runner.h"

#include <dirent.h>
#include <fmt/format.h>
#include <re2/re2.h>
#include <simdjson.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <set>
#include <sstream>

#include "engine/corpus/corpus_runner_internal.h"
#include "engine/corpus/judge.h"
#include "engine/io/replace_file.h"
#include "engine/io/source.h"
#include "engine/reports/report.h"
#include "engine/run/analyze.h"
#include "parsers/text_util.h"

namespace ncclscan {

namespace {

bool IsFile(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}
bool IsDir(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Whether the real path `p` is `root` or below it (both resolved).
bool IsInside(std::string_view p, std::string_view root) {
  if (root == "/") return true;
  return p == root || (p.size() > root.size() && p.compare(0, root.size(), root) == 0 && p[root.size()] == '/');
}

// Directories holding one of `markers` under dir, depth first in name order; a
// case's subdirectories are not searched. Each real directory is visited once
// (a link back up, to '.', is a loop, not more cases: k such links used to
// make k^8 walks), and a symbolic link is followed only where it stays inside
// the root: `test --update` writes into what is found here.
void FindCasesRec(const std::string& dir, const std::vector<const char*>& markers, const std::string& root_real,
                  std::set<std::pair<dev_t, ino_t>>* seen, std::vector<std::string>* out, int depth) {
  struct stat st;
  if (depth > 8 || stat(dir.c_str(), &st) != 0 || !seen->insert({st.st_dev, st.st_ino}).second) return;
  for (const char* m : markers) {
    if (IsFile(dir + "/" + m)) {
      out->push_back(dir);
      return;
    }
  }
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') names.push_back(e->d_name);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  for (const auto& n : names) {
    std::string p = dir + "/" + n;
    struct stat lst;
    if (lstat(p.c_str(), &lst) != 0) continue;
    if (S_ISLNK(lst.st_mode)) {
      std::unique_ptr<char, decltype(&std::free)> real(realpath(p.c_str(), nullptr), &std::free);
      if (!real || !IsInside(real.get(), root_real)) continue;
    }
    if (IsDir(p)) FindCasesRec(p, markers, root_real, seen, out, depth + 1);
  }
}

std::string Basename(const std::string& p) {
  size_t s = p.find_last_of('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}

std::vector<std::string> FindMarked(const std::string& root, const std::vector<const char*>& markers) {
  std::vector<std::string> out;
  std::string r = root;
  while (r.size() > 1 && r.back() == '/') r.pop_back();
  std::unique_ptr<char, decltype(&std::free)> real(realpath(r.c_str(), nullptr), &std::free);
  if (!real) return out;
  std::set<std::pair<dev_t, ino_t>> seen;
  FindCasesRec(r, markers, real.get(), &seen, &out, 0);
  return out;
}

// Files of a case that are not its logs.
bool IsCaseMetadata(const std::string& name) {
  return name == "expected.json" || name == "truth.json" || name == "SOURCE.md" || name == "README.md" ||
         name == "golden.json";
}

bool Selected(const CorpusOptions& opts, const std::string& dir) {
  if (opts.only.empty()) return true;
  return std::find(opts.only.begin(), opts.only.end(), Basename(dir)) != opts.only.end() ||
         std::find(opts.only.begin(), opts.only.end(), dir) != opts.only.end();
}

// Every case directory under the roots (expected.json, truth.json or both), in
// the order `ncclscan test` always ran them; *expected and *truth say which it holds.
bool CollectCases(const std::vector<std::string>& roots, const CorpusOptions& opts, std::vector<std::string>* cases,
                  std::set<std::string>* expected, std::set<std::string>* truth, std::string* err) {
  bool ok = true;
  for (const auto& r : roots) {
    std::vector<std::string> here = FindMarked(r, {"expected.json", "truth.json"});
    if (here.empty()) {
      *err += "ncclscan: error: no test cases (directories with expected.json or truth.json) under " + r + "\n";
      ok = false;
    }
    for (const auto& dir : here) {
      if (IsFile(dir + "/expected.json")) expected->insert(dir);
      if (IsFile(dir + "/truth.json")) truth->insert(dir);
    }
    cases->insert(cases->end(), here.begin(), here.end());
  }
  for (const auto& want : opts.only) {
    bool known = false;
    for (const auto& dir : *cases) known |= Basename(dir) == want || dir == want;
    if (!known) {
      *err += "ncclscan: error: no test case named '" + want + "'\n";
      ok = false;
    }
  }
  return ok;
}

Analysis AnalyzeCase(const RuleSet& rules, const std::string& dir, const ScanOptions& scan) {
  std::vector<std::string> scan_errors;
  std::vector<std::string> logs;
  for (const auto& f : ExpandInputs({dir}, &scan_errors)) {
    if (!IsCaseMetadata(Basename(f))) logs.push_back(f);
  }
  return Analyze(rules, logs, scan);
}

using Paint = std::function<std::string(const char*, const std::string&)>;

// The golden form of a case's diagnosis: the whole JSON, one value per line
// (diffs read well), with the case directory cut from paths and the tool and
// rule set versions left out (they change with every release and rule edit;
// what they change is the rest).
std::string GoldenJson(const std::string& dir, const Analysis& a) {
  std::string j = RenderJson(*a.state, a.diagnosis);
  const std::string prefix = dir + "/";  // in paths, and in text that names a file
  for (size_t at = j.find(prefix); at != std::string::npos; at = j.find(prefix, at)) j.erase(at, prefix.size());
  // "tool":{…},"ruleset":{…}, (the rule set's object nests its changes).
  for (const char* key : {"\"tool\":", "\"ruleset\":"}) {
    const size_t at = j.find(key);
    if (at == std::string::npos) continue;
    size_t i = at + std::strlen(key);
    int depth = 0;
    bool in_string = false;
    for (; i < j.size(); ++i) {
      const char ch = j[i];
      if (in_string) {
        if (ch == '\\')
          ++i;
        else if (ch == '"')
          in_string = false;
      } else if (ch == '"') {
        in_string = true;
      } else if (ch == '{' || ch == '[') {
        ++depth;
      } else if ((ch == '}' || ch == ']') && --depth == 0) {
        break;
      }
    }
    if (i < j.size() && i + 1 < j.size() && j[i + 1] == ',') j.erase(at, i + 2 - at);
  }
  // Pretty: a newline and indent after { [ , and before } ] outside strings.
  std::string out;
  int depth = 0;
  bool in_string = false;
  auto newline = [&] { out += '\n' + std::string(2 * depth, ' '); };
  for (size_t i = 0; i < j.size(); ++i) {
    const char ch = j[i];
    if (in_string) {
      out += ch;
      if (ch == '\\' && i + 1 < j.size())
        out += j[++i];
      else if (ch == '"')
        in_string = false;
      continue;
    }
    switch (ch) {
      case '"':
        in_string = true;
        out += ch;
        break;
      case '{':
      case '[':
        out += ch;
        if (i + 1 < j.size() && (j[i + 1] == '}' || j[i + 1] == ']')) {
          out += j[++i];
        } else {
          ++depth;
          newline();
        }
        break;
      case '}':
      case ']':
        --depth;
        newline();
        out += ch;
        break;
      case ',':
        out += ch;
        newline();
        break;
      case '\n':
        break;
      default:
        out += ch;
    }
  }
  return out + "\n";
}

// --update-golden writes golden.json; otherwise a case that has one must give
// it byte for byte (a refactor proves itself; an intended change rewrites it).
// `counted`: the case's expected.json check already counted it (pass or fail).
void GoldenCase(const std::string& dir, const Analysis& a, const CorpusOptions& opts, const Paint& color, int counted,
                CorpusResult* res, std::string* out, std::string* err) {
  const std::string path = dir + "/golden.json";
  const std::string got = GoldenJson(dir, a);
  if (opts.update_golden) {
    std::string why;
    if (!ReplaceFile(path, got, &why)) {
      *err += "ncclscan: error: " + why + "\n";
      res->errors++;
      return;
    }
    res->updated++;
    return;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return;
  std::string want((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (want == got) return;
  size_t line = 1, i = 0;
  for (; i < want.size() && i < got.size() && want[i] == got[i]; ++i) line += want[i] == '\n';
  auto line_at = [](const std::string& s, size_t at) {
    size_t b = s.rfind('\n', at == 0 ? 0 : at - 1);
    b = b == std::string::npos ? 0 : b + 1;
    size_t e = s.find('\n', at);
    return s.substr(b, (e == std::string::npos ? s.size() : e) - b);
  };
  // One failure per case: a case that passed its expectations fails now.
  if (counted > 0) res->passed--;
  if (counted >= 0) res->failed++;
  *out += color("31;1", "FAIL") + " " + dir + ": the JSON differs from golden.json at line " + std::to_string(line) +
          " (run 'ncclscan test --update-golden' if the change is intended)\n" + "    want: " + line_at(want, i) +
          "\n    got:  " + line_at(got, i) + "\n";
}

// --update: the diagnosis becomes the case's expected.json (a known failure's is kept).
void UpdateCase(const std::string& dir, const Expectation& ex, const Analysis& a, const Paint& color, CorpusResult* res,
                std::string* out, std::string* err) {
  if (!ex.known_failure.empty()) {
    // Its expectation is the truth the tool does not reach yet: not rewritten.
    *out += color("33;1", "KEPT") + " " + dir + " (known failure)\n";
    return;
  }
  // Only a file this runner wrote is rewritten: a regular file (a link may
  // lead anywhere), every key one of an expectation's (the rest would be
  // lost). The new file replaces the entry, never writes through it.
  const std::string path = dir + "/expected.json";
  struct stat lst;
  std::string refuse;
  if (lstat(path.c_str(), &lst) != 0 || !S_ISREG(lst.st_mode)) {
    refuse = "it is not a regular file";
  } else if (!ex.unknown_keys.empty()) {
    refuse = "its keys " + JoinList(ex.unknown_keys) + " are not an expectation's";
  }
  if (!refuse.empty()) {
    *err += "ncclscan: error: not updated: " + path + ": " + refuse + "\n";
    res->errors++;
    return;
  }
  std::vector<std::string> notes;
  std::string text = WriteExpectation(ex, a, &notes);
  std::string why_not;
  if (!ReplaceFile(path, text, &why_not)) {
    *err += "ncclscan: error: " + why_not + "\n";
    res->errors++;
    return;
  }
  *out += color("33;1", "UPDATED") + " " + dir + "\n";
  for (const auto& n : notes) *out += "    - " + n + "\n";
  res->updated++;
}

// Compares the diagnosis with expected.json: PASS, FAIL, XFAIL or XPASS.
void CheckCase(const std::string& dir, const Expectation& ex, const Analysis& a, const Paint& color, CorpusResult* res,
               std::string* out) {
  std::vector<std::string> diffs = Compare(ex, a);
  if (!ex.known_failure.empty()) {
    if (diffs.empty()) {
      res->failed++;
      *out += color("31;1", "XPASS") + " " + dir + ": passes now; remove its \"known_failure\" note\n";
    } else {
      res->known_failures++;
      *out += color("33;1", "XFAIL") + " " + dir + ": " + ex.known_failure + "\n";
      for (const auto& dline : diffs) *out += "    - " + dline + "\n";
    }
    return;
  }
  if (diffs.empty()) {
    *out += color("32;1", "PASS") + " " + dir + "\n";
    res->passed++;
    return;
  }
  res->failed++;
  *out += color("31;1", "FAIL") + " " + dir + (ex.description.empty() ? "" : "  (" + ex.description + ")") + "\n";
  for (const auto& dline : diffs) *out += "    - " + dline + "\n";
  *out += "    findings were:\n";
  if (a.diagnosis.findings.empty()) *out += "      (none)\n";
  for (const auto& f : a.diagnosis.findings) *out += "      " + Describe(f) + "\n";
}

// Reads expected.json and runs the case; a malformed expectation is an error.
void RunExpectedCase(const std::string& dir, const Analysis& a, const CorpusOptions& opts, const Paint& color,
                     CorpusResult* res, std::string* out, std::string* err) {
  Expectation ex;
  std::string why;
  if (!ParseExpectation(dir + "/expected.json", &ex, &why)) {
    *err += "ncclscan: error: " + dir + ": " + why + "\n";
    *out += color("31;1", "ERROR") + " " + dir + ": " + why + "\n";
    res->errors++;
    res->failed++;
    return;
  }
  if (opts.update) return UpdateCase(dir, ex, a, color, res, out, err);
  CheckCase(dir, ex, a, color, res, out);
}

// Judges the diagnosis against truth.json; a malformed truth is an error, a
// miss is not (it is counted in the tables).
void JudgeCase(const std::string& dir, const Analysis& a, const Paint& color, std::vector<Judgement>* judgements,
               CorpusResult* res, std::string* out, std::string* err) {
  auto fail = [&](const std::string& why) {
    *err += "ncclscan: error: " + dir + "/truth.json: " + why + "\n";
    *out += color("31;1", "ERROR") + " " + dir + "/truth.json: " + why + "\n";
    res->errors++;
    res->failed++;
  };
  auto text = simdjson::padded_string::load(dir + "/truth.json");
  if (text.error()) return fail("cannot read");
  Truth truth;
  Claim claim;
  std::string why;
  if (!ParseTruth(std::string_view(text.value()), &truth, &why)) return fail(why);
  if (!ReadClaim(RenderJson(*a.state, a.diagnosis), &claim, &why)) return fail(why);
  judgements->push_back(Judge(Basename(dir), truth, claim));
}

// The tables after the closing line, the misses under -v, and --judge-json.
void ReportJudgements(const std::vector<Judgement>& judgements, const CorpusOptions& opts, CorpusResult* res,
                      std::string* out, std::string* err) {
  if (judgements.empty()) return;
  *out += "\n" + RenderJudgeTables(judgements);
  if (opts.judge_misses) *out += RenderJudgeMisses(judgements);
  if (opts.judge_json.empty()) return;
  std::ofstream o(opts.judge_json, std::ios::binary | std::ios::trunc);
  o << RenderJudgeJson(judgements);
  o.close();
  if (!o) {
    *err += "ncclscan: error: cannot write " + opts.judge_json + "\n";
    res->errors++;
  }
}

}  // namespace

std::vector<std::string> FindCases(const std::string& root) { return FindMarked(root, {"expected.json"}); }

std::vector<std::string> FindTruthCases(const std::string& root) { return FindMarked(root, {"truth.json"}); }

CorpusResult RunCorpus(const RuleSet& rules, const std::vector<std::string>& roots, const CorpusOptions& opts,
                       std::string* out, std::string* err) {
  CorpusResult res;
  Paint color = [&](const char* code, const std::string& s) {
    return opts.color ? fmt::format("\x1b[{}m{}\x1b[0m", code, s) : s;
  };
  std::vector<std::string> cases;
  std::set<std::string> expected, truth;
  if (!CollectCases(roots, opts, &cases, &expected, &truth, err)) {
    res.errors++;
    return res;
  }
  std::vector<Judgement> judgements;
  std::set<std::string> judged;  // a case under two roots is run twice, as always, but judged once
  for (const auto& dir : cases) {
    // --update rewrites expectations only; truths are never written from the tool.
    if (!Selected(opts, dir) || (opts.update && !expected.count(dir))) continue;
    Analysis a = AnalyzeCase(rules, dir, opts.scan);
    if (opts.update_golden) {
      GoldenCase(dir, a, opts, color, 0, &res, out, err);
      continue;
    }
    const int passed = res.passed, failed = res.failed;
    if (expected.count(dir)) RunExpectedCase(dir, a, opts, color, &res, out, err);
    // counted: 1 passed, -1 already failed, 0 not counted (a truth-only case).
    GoldenCase(dir, a, opts, color, res.passed > passed ? 1 : (res.failed > failed ? -1 : 0), &res, out, err);
    if (truth.count(dir) && !opts.update && judged.insert(dir).second) {
      JudgeCase(dir, a, color, &judgements, &res, out, err);
    }
  }
  if (res.known_failures) {
    *out += fmt::format("{} known failure{} (XFAIL above: expectations the tool does not meet yet)\n",
                        res.known_failures, res.known_failures == 1 ? "" : "s");
  }
  if (opts.update_golden) {
    *out += fmt::format("wrote {} golden.json\n", res.updated);
    return res;
  }
  *out += fmt::format("{} passed, {} failed\n", res.passed, res.failed);
  ReportJudgements(judgements, opts, &res, out, err);
  res.judged = static_cast<int>(judgements.size());
  return res;
}

}  // namespace ncclscan
