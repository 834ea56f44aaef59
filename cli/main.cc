// ncclscan: command-line flags and wiring only; all logic lives in engine/.
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "engine/analyze.h"
#include "engine/corpus_runner.h"
#include "engine/report.h"
#include "rules/rule_loader.h"

namespace po = boost::program_options;
using namespace ncclscan;

namespace {

constexpr int kExitOk = 0, kExitFindings = 1, kExitError = 2;

const char* kUsage =
    "usage: ncclscan [OPTIONS] [PATH...]\n"
    "       ncclscan rules (--check [DIR...] | --list) [--rules DIR]\n"
    "       ncclscan explain RULE-ID [--rules DIR]\n"
    "       ncclscan test [CORPUS_DIR...] [--update] [--case NAME]\n"
    "\n"
    "Diagnoses failed or hung distributed GPU jobs from NCCL / PyTorch / torchrun logs.\n"
    "PATHs are files or directories (walked recursively); .gz and .zst are read\n"
    "transparently; no PATH or '-' reads standard input.\n";

const char* kExamples =
    "\nexamples:\n"
    "  ncclscan logs/                          report on every log under logs/\n"
    "  grep -r NCCL logs/ | ncclscan           diagnose grep output from stdin\n"
    "  ncclscan --format json job/ > d.json    JSON diagnosis for a ticketing bot\n"
    "  ncclscan --format markdown job/         a report to paste into a ticket\n"
    "  ncclscan --fail-on warning logs/        exit 1 on warnings too\n"
    "  ncclscan rules --check my-rules/        validate rule files without scanning\n"
    "  ncclscan explain DIVERGENT-RANK         what a rule detects and why\n"
    "  ncclscan test corpus/                   run the regression corpus\n"
    "\nexit status: 0 nothing at or above --fail-on, 1 findings at or above it,\n"
    "2 usage error, bad rules, or no readable input.\n";

void Error(const std::string& msg) { std::cerr << "ncclscan: error: " << msg << "\n"; }

bool UseColor(const std::string& mode, int fd) {
  if (mode == "always") return true;
  if (mode == "never") return false;
  const char* term = getenv("TERM");
  return isatty(fd) && !getenv("NO_COLOR") && !(term && std::string(term) == "dumb");
}

std::unique_ptr<RuleSet> Rules(const std::vector<std::string>& dirs) {
  std::string errors;
  int n = 0;
  auto rules = LoadRules(dirs, &errors, &n);
  if (!rules) {
    std::cerr << errors;
    Error(std::to_string(n) + " problem" + (n == 1 ? "" : "s") + " in rule files; nothing was scanned");
  }
  return rules;
}

int CmdRules(const std::vector<std::string>& args) {
  po::options_description desc("rules options");
  bool check = false, list = false;
  std::vector<std::string> dirs, extra;
  desc.add_options()("help,h", "show help")("check", po::bool_switch(&check), "validate rule files (built-in + DIRs)")(
      "list", po::bool_switch(&list), "list rules")("rules", po::value(&dirs), "extra rule directory (repeatable)")(
      "dir", po::value(&extra), "rule directory");
  po::positional_options_description pos;
  pos.add("dir", -1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(desc).positional(pos).run(), vm);
  po::notify(vm);
  if (vm.count("help") || (!check && !list)) {
    std::cout << "usage: ncclscan rules --check [DIR...] | --list [--rules DIR]\n" << desc;
    return vm.count("help") ? kExitOk : kExitError;
  }
  dirs.insert(dirs.end(), extra.begin(), extra.end());
  auto rules = Rules(dirs);
  if (!rules) return kExitError;
  if (check) {
    size_t samples = 0;
    for (const auto& r : rules->rules()) samples += r.spec.match.size() + r.spec.no_match.size();
    std::cout << "ok: " << rules->rules().size() << " line rules, " << rules->correlations().size()
              << " correlations, " << rules->facts().size() << " facts; " << samples << " sample lines checked\n";
  }
  if (list) {
    for (const auto& r : rules->rules()) {
      std::string sev = r.spec.finding.present ? SeverityName(r.spec.finding.severity) : "facts";
      std::printf("%-32s %-8s %-8s %-11s %s\n", r.spec.id.value.c_str(), "line", sev.c_str(), r.spec.category.c_str(),
                  r.spec.title.c_str());
    }
    for (const auto& c : rules->correlations()) {
      std::printf("%-32s %-8s %-8s %-11s %s\n", c.spec.id.value.c_str(), c.spec.kind.value.c_str(),
                  SeverityName(c.spec.finding.severity), c.spec.category.c_str(), c.spec.title.c_str());
    }
  }
  return kExitOk;
}

int CmdExplain(const std::vector<std::string>& args) {
  po::options_description desc("explain options");
  std::vector<std::string> dirs, ids;
  desc.add_options()("help,h", "show help")("rules", po::value(&dirs), "extra rule directory")("id", po::value(&ids),
                                                                                               "rule id");
  po::positional_options_description pos;
  pos.add("id", -1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(desc).positional(pos).run(), vm);
  po::notify(vm);
  if (vm.count("help") || ids.empty()) {
    std::cout << "usage: ncclscan explain RULE-ID [--rules DIR]\n";
    return vm.count("help") ? kExitOk : kExitError;
  }
  auto rules = Rules(dirs);
  if (!rules) return kExitError;
  int rc = kExitOk;
  for (const auto& id : ids) {
    if (const CompiledRule* r = rules->FindRule(id)) {
      const LineRule& s = r->spec;
      std::cout << s.id.value << ": " << s.title << "\n";
      std::cout << "  kind:      line rule (family " << s.family_name.value << "), category " << s.category << "\n";
      std::cout << "  defined:   " << s.id.pos.file << ":" << s.id.pos.line << "\n";
      if (s.fields.empty()) std::cout << "  pattern:   " << s.pattern.value << "\n";
      for (const auto& f : s.fields) {
        std::cout << "  field:     " << f.name << " = token " << (f.before ? "before" : "after") << " '"
                  << f.anchor.value << "'\n";
      }
      std::cout << "  prefilter:";
      for (const auto& a : r->key_atoms) std::cout << " '" << a << "'";
      std::cout << "\n";
      for (const auto& f : s.facts) {
        std::cout << "  sets fact: " << f.fact.value << (f.key.value.empty() ? "" : "[" + f.key.value + "]") << " = "
                  << f.value.value << "\n";
      }
      if (s.finding.present) {
        std::cout << "  finding:   " << SeverityName(s.finding.severity) << ", " << RoleName(s.finding.role)
                  << ", confidence " << s.finding.confidence << "\n";
        std::cout << "  why:       " << s.finding.explanation.value << "\n";
        if (!s.finding.remediation.value.empty()) std::cout << "  fix:       " << s.finding.remediation.value << "\n";
        for (const auto& e : s.finding.explains) std::cout << "  explains:  " << e.value << "\n";
      }
      for (const auto& ex : s.match) std::cout << "  matches:   " << ex.line.value << "\n";
      for (const auto& ex : s.no_match) std::cout << "  not:       " << ex.line.value << "\n";
      for (const auto& ref : s.references) std::cout << "  see:       " << ref << "\n";
    } else if (const CompiledCorrelation* c = rules->FindCorrelation(id)) {
      const CorrelationRule& s = c->spec;
      std::cout << s.id.value << ": " << s.title << "\n";
      std::cout << "  kind:      correlation (" << s.kind.value << "), category " << s.category << "\n";
      std::cout << "  defined:   " << s.id.pos.file << ":" << s.id.pos.line << "\n";
      if (!s.fact.value.empty()) std::cout << "  fact:      " << s.fact.value << " over " << s.over << "\n";
      std::cout << "  finding:   " << SeverityName(s.finding.severity) << ", " << RoleName(s.finding.role)
                << ", confidence " << s.finding.confidence << "\n";
      std::cout << "  why:       " << s.finding.explanation.value << "\n";
      if (!s.finding.remediation.value.empty()) std::cout << "  fix:       " << s.finding.remediation.value << "\n";
      for (const auto& e : s.finding.explains) std::cout << "  explains:  " << e.value << "\n";
      for (const auto& ref : s.references) std::cout << "  see:       " << ref << "\n";
    } else {
      Error("no rule with id '" + id + "' (see 'ncclscan rules --list')");
      rc = kExitError;
    }
  }
  return rc;
}

int CmdTest(const std::vector<std::string>& args) {
  po::options_description desc("test options");
  std::vector<std::string> dirs, roots, only;
  bool update = false;
  int jobs = 0;
  std::string color = "auto";
  desc.add_options()("help,h", "show help")("update", po::bool_switch(&update),
                                            "write the current diagnosis as the new expectation")(
      "case", po::value(&only), "only this case (name or path; repeatable)")("rules", po::value(&dirs),
                                                                             "extra rule directory")(
      "jobs,j", po::value(&jobs), "threads")("color", po::value(&color), "auto|always|never")("root", po::value(&roots),
                                                                                            "corpus directory");
  po::positional_options_description pos;
  pos.add("root", -1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(desc).positional(pos).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << "usage: ncclscan test [CORPUS_DIR...] [--update [--case NAME]...]\n" << desc;
    return kExitOk;
  }
  if (roots.empty()) roots.push_back("corpus");
  auto rules = Rules(dirs);
  if (!rules) return kExitError;
  CorpusOptions opts;
  opts.update = update;
  opts.only = only;
  opts.scan.jobs = jobs;
  opts.color = UseColor(color, 1);
  std::string out, err;
  CorpusResult r = RunCorpus(*rules, roots, opts, &out, &err);
  std::cout << out;
  std::cerr << err;
  if (r.errors) return kExitError;
  return r.failed ? kExitFindings : kExitOk;
}

int CmdScan(int argc, char** argv) {
  po::options_description desc("options");
  int jobs = 0;
  std::string format = "text", color = "auto", fail_on = "error";
  std::vector<std::string> rule_dirs, paths;
  desc.add_options()("help,h", "show this help")("version", "print the version")(
      "jobs,j", po::value(&jobs), "threads to use (default: all cores)")(
      "format,f", po::value(&format), "text | json | markdown (default text)")(
      "color", po::value(&color), "auto | always | never (default auto)")(
      "fail-on", po::value(&fail_on), "info | warning | error | critical | never (default error)")(
      "rules", po::value(&rule_dirs), "add or override rules from DIR (repeatable)")(
      "verbose,v", "text: show info findings in full");
  po::options_description hidden;
  hidden.add_options()("path", po::value(&paths));
  po::options_description all;
  all.add(desc).add(hidden);
  po::positional_options_description pos;
  pos.add("path", -1);
  po::variables_map vm;
  po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << kUsage << "\n" << desc << kExamples;
    return kExitOk;
  }
  if (vm.count("version")) {
    std::cout << "ncclscan " << ToolVersion() << "\n";
    return kExitOk;
  }
  if (format != "text" && format != "json" && format != "markdown") {
    Error("unknown --format '" + format + "' (use text, json or markdown)");
    return kExitError;
  }
  if (color != "auto" && color != "always" && color != "never") {
    Error("unknown --color '" + color + "' (use auto, always or never)");
    return kExitError;
  }
  Severity threshold = Severity::kError;
  bool never = fail_on == "never";
  if (!never && !ParseSeverity(fail_on, &threshold)) {
    Error("unknown --fail-on '" + fail_on + "' (use info, warning, error, critical or never)");
    return kExitError;
  }
  if (jobs < 0) {
    Error("--jobs must be 0 or more");
    return kExitError;
  }
  if (paths.empty() && isatty(0)) {
    // Like grep: reading a terminal would just wait; say what to do instead.
    Error("no input: give log files or directories, or pipe logs on standard input (see --help)");
    return kExitError;
  }
  auto rules = Rules(rule_dirs);
  if (!rules) return kExitError;
  ScanOptions opts;
  opts.jobs = jobs;
  Analysis a = Analyze(*rules, paths, opts);
  for (const auto& e : a.errors) Error(e);
  if (format == "json") {
    std::cout << RenderJson(*a.state, a.diagnosis);
  } else if (format == "markdown") {
    std::cout << RenderMarkdown(*a.state, a.diagnosis);
  } else {
    ReportOptions ro;
    ro.color = UseColor(color, 1);
    ro.verbose = vm.count("verbose") > 0;
    std::cout << RenderText(*a.state, a.diagnosis, ro);
  }
  std::cout.flush();
  if (a.inputs == 0) {
    Error("no readable input");
    return kExitError;
  }
  if (never) return kExitOk;
  for (const auto& f : a.diagnosis.findings) {
    if (f.severity >= threshold) return kExitFindings;
  }
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc >= 2) {
      std::string cmd = argv[1];
      std::vector<std::string> rest(argv + 2, argv + argc);
      if (cmd == "rules") return CmdRules(rest);
      if (cmd == "explain") return CmdExplain(rest);
      if (cmd == "test") return CmdTest(rest);
      if (cmd == "scan") return CmdScan(argc - 1, argv + 1);
    }
    return CmdScan(argc, argv);
  } catch (const po::error& e) {
    Error(e.what());
    std::cerr << "try 'ncclscan --help'\n";
    return kExitError;
  } catch (const std::exception& e) {
    Error(std::string("internal error: ") + e.what());
    return kExitError;
  }
}
