// ncclscan: command-line flags and wiring only; all logic lives in engine/.
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_internal.h"
#include "cli/help_text.h"  // generated from cli/help.txt
#include "engine/corpus/corpus_runner.h"
#include "engine/reports/explain.h"
#include "engine/reports/report.h"
#include "parsers/text_util.h"
#include "rules/rule_loader.h"

namespace po = boost::program_options;
using namespace ncclscan;
using namespace ncclscan::cli;

namespace {

// Text from rule files (titles, explanations, examples, ids in diagnostics)
// as it may reach a terminal: line by line, each escaped as the reports
// escape input text (no ESC / OSC sequences: a site rule file is input too).
std::string SafeLines(std::string_view text) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    size_t end = nl == std::string_view::npos ? text.size() : nl;
    out += SanitizeForTerminal(text.substr(start, end - start));
    if (nl == std::string_view::npos) break;
    out += '\n';
    start = nl + 1;
  }
  return out;
}

// The errno of the first failed write of a report to standard output (0: none).
int g_stdout_errno = 0;

}  // namespace

// Shared with the scan commands (cli/cli_internal.h).
namespace ncclscan::cli {

// Every --help prints cli/help.txt, the text the man page is generated from.
int Help() {
  std::cout << kHelpText;
  return kExitOk;
}

// Messages name files found by walking directories: their names reach the
// terminal escaped like any input text.
void Error(const std::string& msg) { std::cerr << "ncclscan: error: " << SanitizeForTerminal(msg) << "\n"; }

// Writes a report to standard output; a failure (a full disk, a closed pipe)
// is remembered and turned into exit status 2 by CheckedExit.
void WriteReport(const std::string& s) {
  std::cout.flush();
  errno = 0;
  if ((std::fwrite(s.data(), 1, s.size(), stdout) != s.size() || std::fflush(stdout) != 0) && !g_stdout_errno) {
    g_stdout_errno = errno ? errno : EIO;
  }
}

// Columns to wrap the text report to: the terminal's width (COLUMNS when set,
// else TIOCGWINSZ); 0 (no wrapping) when standard output is not a terminal.
int TerminalWidth(int fd) {
  if (!isatty(fd)) return 0;
  if (const char* c = getenv("COLUMNS")) {
    int n = std::atoi(c);
    if (n > 0) return n;
  }
  struct winsize ws {};
  if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 80;
}

bool UseColor(const std::string& mode, int fd) {
  if (mode == "always") return true;
  if (mode == "never") return false;
  const char* term = getenv("TERM");
  // NO_COLOR counts when set and not empty (no-color.org).
  const char* no_color = getenv("NO_COLOR");
  return isatty(fd) && !(no_color && *no_color) && !(term && std::string(term) == "dumb");
}

// Each site directory is a layer of its own under the --rules ones, as a
// --rules directory is (rules/rule_loader.h): a later one replaces a rule of
// an earlier one with the same id.
std::unique_ptr<RuleSet> Rules(const RuleSources& src, std::vector<SiteRuleDir>* site_read) {
  std::vector<SiteRuleDir> site;
  if (src.site && !SiteRuleDirs(&site)) return nullptr;
  std::vector<std::string> dirs;
  for (const auto& d : site) dirs.push_back(d.path);
  dirs.insert(dirs.end(), src.dirs.begin(), src.dirs.end());
  if (site_read) *site_read = site;
  std::string errors;
  int n = 0;
  auto rules = LoadRules(dirs, &errors, &n, src.disable, src.examples);
  if (!rules) {
    std::cerr << SafeLines(errors);
    Error(std::to_string(n) + " problem" + (n == 1 ? "" : "s") + " in the rules; nothing was scanned");
  }
  return rules;
}

}  // namespace ncclscan::cli

namespace {

// Whether standard output is a pipe whose reader has gone (`ncclscan ... | head`):
// for a write that failed without leaving its errno behind (std::cout).
bool StdoutReaderGone() {
  struct stat st;
  if (fstat(1, &st) != 0 || !S_ISFIFO(st.st_mode)) return false;
  pollfd p{1, 0, 0};
  return poll(&p, 1, 0) == 1 && (p.revents & POLLERR);
}

// The exit status once everything is written: output that silently went
// missing must not pass for a result, so a failed write to stdout is reported
// on stderr and exits 2, and so does a failed write to stderr (unreported).
// A reader that stopped reading (EPIPE: `ncclscan ... | head -1`) is the
// exception: it took what it wanted, and the status earned stands, whatever
// the size of the output (a small report fits in the pipe and never fails).
int CheckedExit(int rc) {
  errno = 0;
  std::cout.flush();
  bool out_ok = !std::cout.fail() && std::fflush(stdout) == 0 && !std::ferror(stdout);
  if (!out_ok && !g_stdout_errno) g_stdout_errno = errno ? errno : EIO;
  if (g_stdout_errno && g_stdout_errno != EPIPE && StdoutReaderGone()) g_stdout_errno = EPIPE;
  if (g_stdout_errno == EPIPE) g_stdout_errno = 0;
  if (g_stdout_errno) {
    Error(std::string("cannot write output: ") + std::strerror(g_stdout_errno));
    rc = kExitError;
  }
  std::cerr.flush();
  if (std::cerr.fail() || std::fflush(stderr) != 0 || std::ferror(stderr)) rc = kExitError;
  return rc;
}

// The rules a scan would use: the site's, the config file's --rules and
// --disable (unless --no-config), then the command line's `dirs` and `disable`.
// For rules and explain.
bool ScanRuleSources(const po::variables_map& vm, const std::vector<std::string>& dirs,
                     const std::vector<std::string>& disable, RuleSources* src) {
  if (!vm.count("no-config") && !ConfigRuleFlags(&src->dirs, &src->disable)) return false;
  src->dirs.insert(src->dirs.end(), dirs.begin(), dirs.end());
  src->disable.insert(src->disable.end(), disable.begin(), disable.end());
  return true;
}

int CmdRules(const std::vector<std::string>& args) {
  po::options_description desc;
  bool check = false, list = false;
  std::vector<std::string> dirs, extra, disable;
  std::string format = "text";
  desc.add_options()("help,h", "")("check", po::bool_switch(&check), "")("list", po::bool_switch(&list), "")(
      "format,f", po::value(&format), "")("rules", po::value(&dirs), "")("disable", po::value(&disable), "")(
      "dir", po::value(&extra), "")("no-config", "");
  po::positional_options_description pos;
  pos.add("dir", -1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(desc).positional(pos).run(), vm);
  po::notify(vm);
  if (vm.count("help")) return Help();
  if (!check && !list) {
    Error("rules needs --check or --list (see 'ncclscan --help')");
    return kExitError;
  }
  if (format != "text" && format != "json") {
    Error("unknown --format '" + format + "' for rules (use text or json)");
    return kExitError;
  }
  dirs.insert(dirs.end(), extra.begin(), extra.end());
  RuleSources src;
  if (!ScanRuleSources(vm, dirs, disable, &src)) return kExitError;
  std::vector<SiteRuleDir> site;
  auto rules = Rules(src, &site);
  if (!rules) return kExitError;
  if (check) {
    size_t samples = 0;
    for (const auto& r : rules->rules()) samples += r.spec.match.size() + r.spec.no_match.size();
    for (const auto& r : rules->disabled_rules()) samples += r.spec.match.size() + r.spec.no_match.size();
    size_t off = rules->disabled_rules().size() + rules->disabled_correlations().size();
    std::cout << "ok: " << rules->rules().size() << " line rules, " << rules->correlations().size() << " correlations"
              << (off ? " (" + std::to_string(off) + " more disabled)" : "") << ", " << rules->facts().size()
              << " facts; " << samples << " sample lines checked\n";
    // Which site directories were read: a site rule that does not show may be
    // in a directory this binary does not look in.
    for (const auto& d : site) std::cout << "site rules: " << SafeLines(d.path) << " (" << d.from << ")\n";
  }
  if (list) std::cout << SafeLines(RenderRuleList(*rules, format == "json"));
  return kExitOk;
}

int CmdExplain(const std::vector<std::string>& args) {
  po::options_description desc;
  std::vector<std::string> dirs, ids;
  desc.add_options()("help,h", "")("rules", po::value(&dirs), "")("id", po::value(&ids), "")("no-config", "");
  po::positional_options_description pos;
  pos.add("id", -1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(desc).positional(pos).run(), vm);
  po::notify(vm);
  if (vm.count("help")) return Help();
  if (ids.empty()) {
    Error("explain needs a RULE-ID (see 'ncclscan rules --list')");
    return kExitError;
  }
  RuleSources src;
  if (!ScanRuleSources(vm, dirs, {}, &src)) return kExitError;
  auto rules = Rules(src);
  if (!rules) return kExitError;
  int rc = kExitOk;
  std::string out;  // rule text, escaped before it is printed (SafeLines)
  for (const auto& id : ids) {
    if (!RenderExplain(*rules, id, &out)) {
      Error("no rule with id '" + id + "' (see 'ncclscan rules --list')");
      rc = kExitError;
    }
  }
  std::cout << SafeLines(out);
  return rc;
}

int CmdTest(const std::vector<std::string>& args) {
  po::options_description desc;
  std::vector<std::string> dirs, roots, only, disable;
  bool update = false, update_golden = false;
  int jobs = 0;
  std::string color = "auto", judge_json;
  // -v / --verbose as a scan takes it: for test, the judge's miss lines.
  desc.add_options()("judge-misses", "")("verbose,v", "")("judge-json", po::value(&judge_json), "");
  desc.add_options()("help,h", "")("update", po::bool_switch(&update), "")(
      "update-golden", po::bool_switch(&update_golden), "")("case", po::value(&only), "")(
      "rules", po::value(&dirs), "")("disable", po::value(&disable), "")("jobs,j", po::value(&jobs), "")(
      "color", po::value(&color), "")("root", po::value(&roots), "");
  po::positional_options_description pos;
  pos.add("root", -1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(desc).positional(pos).run(), vm);
  po::notify(vm);
  if (vm.count("help")) return Help();
  if (roots.empty()) roots.push_back("corpus");
  // The corpus' expectations are the built-in rules': no site rules, no
  // config file, unless given with --rules.
  RuleSources src;
  src.site = false;
  src.dirs = dirs;
  src.disable = disable;
  auto rules = Rules(src);
  if (!rules) return kExitError;
  CorpusOptions opts;
  opts.update = update;
  opts.update_golden = update_golden;
  opts.only = only;
  opts.scan.jobs = jobs;
  opts.color = UseColor(color, 1);
  opts.judge_misses = vm.count("judge-misses") > 0 || vm.count("verbose") > 0;
  opts.judge_json = judge_json;
  std::string out, err;
  CorpusResult r = RunCorpus(*rules, roots, opts, &out, &err);
  std::cout << out;
  std::cerr << err;
  if (r.errors) return kExitError;
  return r.failed ? kExitFindings : kExitOk;
}

}  // namespace

namespace ncclscan::cli {

std::string NearestOption(const std::string& typed) {
  static const char* const kOptions[] = {
      "--help",    "--version", "--jobs",          "--format",   "--color",        "--fail-on",    "--rules",
      "--disable", "--verbose", "--job-id",        "--glob",     "--hidden",       "--ranks",      "--quiet",
      "--output",  "--update",  "--update-golden", "--case",     "--judge-misses", "--judge-json", "--check",
      "--list",    "--id",      "--no-config",     "--progress", "--no-progress",  "--files",      "--rank",
      "--host",    "--context"};
  std::string t = typed;
  if (t.rfind("--", 0) != 0) t = (t.rfind('-', 0) == 0 ? "-" : "--") + t;
  std::string best;
  size_t best_d = 3;
  for (const char* o : kOptions) {
    const std::string c = o;
    std::vector<size_t> prev(c.size() + 1), cur(c.size() + 1);
    for (size_t j = 0; j <= c.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= t.size(); ++i) {
      cur[0] = i;
      for (size_t j = 1; j <= c.size(); ++j) {
        cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (t[i - 1] == c[j - 1] ? 0 : 1)});
      }
      std::swap(prev, cur);
    }
    if (prev[c.size()] < best_d) {
      best_d = prev[c.size()];
      best = c;
    }
  }
  return best;
}

}  // namespace ncclscan::cli

static int Dispatch(int argc, char** argv) {
  try {
    if (argc >= 2) {
      std::string cmd = argv[1];
      std::vector<std::string> rest(argv + 2, argv + argc);
      int rc = -1;
      if (cmd == "rules")
        rc = CmdRules(rest);
      else if (cmd == "explain")
        rc = CmdExplain(rest);
      else if (cmd == "test")
        rc = CmdTest(rest);
      else if (cmd == "scan")
        rc = CmdScan(argc - 1, argv + 1);
      else if (cmd == "partial")
        rc = CmdScan(argc - 1, argv + 1, ScanMode::kPartial);
      else if (cmd == "merge")
        rc = CmdScan(argc - 1, argv + 1, ScanMode::kMerge);
      else if (cmd == "redact")
        rc = CmdRedact(rest);
      if (rc < 0) return CmdScan(argc, argv);
      // A command's name alone that is also a path here ("ncclscan test"
      // beside a test/ directory) runs the command; when it fails, say how to
      // scan the path.
      struct stat st;
      if (rc == kExitError && argc == 2 && cmd != "scan" && stat(cmd.c_str(), &st) == 0) {
        std::cerr << "ncclscan: note: '" << cmd << "' is a command; to scan the "
                  << (S_ISDIR(st.st_mode) ? "directory" : "file") << " named " << cmd << ", run 'ncclscan ./" << cmd
                  << "'\n";
      }
      return rc;
    }
    return CmdScan(argc, argv);
  } catch (const po::unknown_option& e) {
    Error(e.what());
    const std::string near = NearestOption(e.get_option_name());
    if (!near.empty()) std::cerr << "did you mean '" << near << "'?\n";
    std::cerr << "try 'ncclscan --help'\n";
    return kExitError;
  } catch (const po::error& e) {
    Error(e.what());
    std::cerr << "try 'ncclscan --help'\n";
    return kExitError;
  } catch (const std::exception& e) {
    Error(std::string("internal error: ") + e.what());
    return kExitError;
  }
}

int main(int argc, char** argv) {
  // A reader that went away (ncclscan ... | head) makes writes fail with EPIPE,
  // which CheckedExit takes quietly, instead of killing the process (exit 141)
  // before it can return the status it earned.
  std::signal(SIGPIPE, SIG_IGN);
  return CheckedExit(Dispatch(argc, argv));
}
