// ncclscan: command-line flags and wiring only; all logic lives in engine/.
#include <fmt/format.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/program_options.hpp>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/help_text.h"  // generated from cli/help.txt
#include "engine/corpus/corpus_runner.h"
#include "engine/reports/explain.h"
#include "engine/reports/report.h"
#include "engine/reports/trace_report.h"
#include "engine/run/analyze.h"
#include "engine/run/partial.h"
#include "parsers/text_util.h"
#include "rules/rule_loader.h"

namespace po = boost::program_options;
using namespace ncclscan;

namespace {

constexpr int kExitOk = 0, kExitFindings = 1, kExitError = 2;

// Every --help prints cli/help.txt, the text the man page is generated from.
int Help() {
  std::cout << kHelpText;
  return kExitOk;
}

// Messages name files found by walking directories: their names reach the
// terminal escaped like any input text.
void Error(const std::string& msg) { std::cerr << "ncclscan: error: " << SanitizeForTerminal(msg) << "\n"; }

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

// Writes a report to standard output; a failure (a full disk, a closed pipe)
// is remembered and turned into exit status 2 by CheckedExit.
void WriteReport(const std::string& s) {
  std::cout.flush();
  errno = 0;
  if ((std::fwrite(s.data(), 1, s.size(), stdout) != s.size() || std::fflush(stdout) != 0) && !g_stdout_errno) {
    g_stdout_errno = errno ? errno : EIO;
  }
}

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

// `examples`: check the built-in rules' examples too (rules --check, explain);
// a scan or a corpus run skips them (they are checked whenever user rule
// files are loaded, and by `rules --check` and the tests of this binary).
std::unique_ptr<RuleSet> Rules(const std::vector<std::string>& dirs, const std::vector<std::string>& disable = {},
                               bool examples = true) {
  std::string errors;
  int n = 0;
  auto rules = LoadRules(dirs, &errors, &n, disable, examples);
  if (!rules) {
    std::cerr << SafeLines(errors);
    Error(std::to_string(n) + " problem" + (n == 1 ? "" : "s") + " in the rules; nothing was scanned");
  }
  return rules;
}

int CmdRules(const std::vector<std::string>& args) {
  po::options_description desc;
  bool check = false, list = false;
  std::vector<std::string> dirs, extra, disable;
  std::string format = "text";
  desc.add_options()("help,h", "")("check", po::bool_switch(&check), "")("list", po::bool_switch(&list), "")(
      "format,f", po::value(&format), "")("rules", po::value(&dirs), "")("disable", po::value(&disable), "")(
      "dir", po::value(&extra), "");
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
  auto rules = Rules(dirs, disable);
  if (!rules) return kExitError;
  if (check) {
    size_t samples = 0;
    for (const auto& r : rules->rules()) samples += r.spec.match.size() + r.spec.no_match.size();
    for (const auto& r : rules->disabled_rules()) samples += r.spec.match.size() + r.spec.no_match.size();
    size_t off = rules->disabled_rules().size() + rules->disabled_correlations().size();
    std::cout << "ok: " << rules->rules().size() << " line rules, " << rules->correlations().size() << " correlations"
              << (off ? " (" + std::to_string(off) + " more disabled)" : "") << ", " << rules->facts().size()
              << " facts; " << samples << " sample lines checked\n";
  }
  if (list) std::cout << SafeLines(RenderRuleList(*rules, format == "json"));
  return kExitOk;
}

int CmdExplain(const std::vector<std::string>& args) {
  po::options_description desc;
  std::vector<std::string> dirs, ids;
  desc.add_options()("help,h", "")("rules", po::value(&dirs), "")("id", po::value(&ids), "");
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
  auto rules = Rules(dirs);
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
  auto rules = Rules(dirs, disable);
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

// NCCLSCAN_PROGRESS_AFTER_MS: how long a scan runs before progress shows on
// a terminal (default 1000; tests set it lower).
int ProgressDelayMs() {
  const char* v = getenv("NCCLSCAN_PROGRESS_AFTER_MS");
  return v && *v ? std::max(0, atoi(v)) : 1000;
}

// Bytes (and the share of the inputs' size) read, throughput and time left,
// redrawn on one stderr line four times a second while the scan runs, and
// erased at the end. Nothing when `on` is false.
class ProgressLine {
 public:
  ProgressLine(bool on, int delay_ms, const std::atomic<uint64_t>* read, const std::atomic<uint64_t>* total)
      : read_(read), total_(total) {
    if (!on) return;
    thread_ = std::thread([this, delay_ms] { Run(delay_ms); });
  }
  ~ProgressLine() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> l(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
    if (shown_) std::cerr << "\r\x1b[K" << std::flush;
  }

 private:
  void Run(int delay_ms) {
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    std::unique_lock<std::mutex> l(mu_);
    if (!cv_.wait_for(l, std::chrono::milliseconds(delay_ms), [this] { return done_; })) {
      do {
        Draw(start);
        // Until the inputs' size is known, look again soon.
      } while (!cv_.wait_for(l, std::chrono::milliseconds(shown_ ? 250 : 10), [this] { return done_; }));
    }
    // Forced on (no delay): at least once, even for a scan shorter than a redraw.
    if (delay_ms == 0 && !shown_) Draw(start);
  }

  // One redraw, once the inputs' size is known (Analyze sets it before reading).
  void Draw(std::chrono::steady_clock::time_point start) {
    const uint64_t t = total_->load(std::memory_order_relaxed);
    if (t == kProgressTotalUnknown) return;
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const uint64_t r = read_->load(std::memory_order_relaxed);
    const double rate = secs > 0 ? r / secs : 0;
    std::string s = fmt::format("\rncclscan: {:.1f} MB read", r / 1e6);
    if (t > 0 && r <= t) {
      s += fmt::format(" of {:.1f} MB ({:.0f}%)", t / 1e6, 100.0 * r / t);
    }
    s += fmt::format(", {:.0f} MB/s", rate / 1e6);
    if (t > 0 && r <= t && rate > 0) s += fmt::format(", about {:.0f} s left", (t - r) / rate);
    std::cerr << s << "\x1b[K" << std::flush;
    shown_ = true;
  }

  const std::atomic<uint64_t>* read_;
  const std::atomic<uint64_t>* total_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  bool shown_ = false;
};

// scan: diagnose the inputs; partial: write their scan state to -o FILE;
// merge: diagnose (or with -o, combine) partials.
enum class ScanMode { kScan, kPartial, kMerge };

// scan's, partial's and merge's command line, described in cli/help.txt
// (printed by --help, and the man page).
struct ScanFlags {
  std::string output;  // -o: partial and merge only
  int jobs = 0;
  std::string format = "text", color = "auto", fail_on = "error";
  std::vector<std::string> rule_dirs, paths, disable;
  std::string job_id;
  std::vector<std::string> globs;
  po::variables_map vm;  // for the switches (--ranks, --quiet, --progress…)
};

// What --fail-on makes of the findings.
struct FailPolicy {
  Severity threshold = Severity::kError;
  bool never = false;
  // "unknown": errors, and any verdict that is not evidence of health either
  // (nothing recognised, a run that did not finish, unreadable input): for CI gates.
  bool unknown = false;
};

// Throws, as program_options does, on an unknown or malformed option.
void ParseScanFlags(int argc, char** argv, ScanMode mode, ScanFlags* f) {
  po::options_description desc;
  if (mode != ScanMode::kScan) desc.add_options()("output,o", po::value(&f->output), "");
  desc.add_options()("job-id", po::value(&f->job_id), "");
  desc.add_options()("ranks", "");                         // text and markdown: the per-rank table
  desc.add_options()("glob,g", po::value(&f->globs), "");  // ripgrep's -g: include/exclude files (repeatable)
  desc.add_options()("hidden", "");                        // ripgrep's --hidden: walks read dot-files too
  desc.add_options()("quiet,q", "");                       // grep's -q: no report, the exit status only
  desc.add_options()("progress", "")("no-progress", "");   // default: on a terminal, past ~1 s
  desc.add_options()("help,h", "")("version,V", "")("jobs,j", po::value(&f->jobs), "")(
      "format,f", po::value(&f->format), "")("color", po::value(&f->color), "")("fail-on", po::value(&f->fail_on), "")(
      "rules", po::value(&f->rule_dirs), "")("disable", po::value(&f->disable), "")("verbose,v", "");
  po::options_description hidden;
  hidden.add_options()("path", po::value(&f->paths));
  po::options_description all;
  all.add(desc).add(hidden);
  po::positional_options_description pos;
  pos.add("path", -1);
  po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), f->vm);
  po::notify(f->vm);
}

// The flags' values checked, each problem said on stderr; *fail from --fail-on.
bool CheckScanFlags(const ScanFlags& f, ScanMode mode, FailPolicy* fail) {
  if (f.format != "text" && f.format != "json" && f.format != "markdown" && f.format != "trace") {
    Error("unknown --format '" + f.format + "' (use text, json, markdown or trace)");
    return false;
  }
  if (f.color != "auto" && f.color != "always" && f.color != "never") {
    Error("unknown --color '" + f.color + "' (use auto, always or never)");
    return false;
  }
  fail->never = f.fail_on == "never";
  fail->unknown = f.fail_on == "unknown";
  if (!fail->never && !fail->unknown && !ParseSeverity(f.fail_on, &fail->threshold)) {
    Error("unknown --fail-on '" + f.fail_on + "' (use info, warning, error, critical, unknown or never)");
    return false;
  }
  if (f.jobs < 0) {
    Error("--jobs must be 0 or more");
    return false;
  }
  if (mode == ScanMode::kPartial && f.output.empty()) {
    Error("partial needs -o FILE, the partial to write (see --help)");
    return false;
  }
  if (mode == ScanMode::kMerge && f.paths.empty()) {
    Error("merge needs the partial files to merge (see --help)");
    return false;
  }
  if (mode != ScanMode::kMerge && f.paths.empty() && isatty(0)) {
    // Like grep: reading a terminal would just wait; say what to do instead.
    Error("no input: give log files or directories, or pipe logs on standard input (see --help)");
    return false;
  }
  return true;
}

// `partial -o FILE`: the inputs' scan state written, no report.
int WritePartial(const RuleSet& rules, const ScanFlags& f, const ScanOptions& opts) {
  std::vector<std::string> errors;
  size_t inputs = 0;
  std::string err;
  bool written = WritePartialScan(rules, f.paths, opts, f.output, &errors, &inputs, &err);
  for (const auto& e : errors) Error(e);
  if (!written) {
    Error(err);
    return kExitError;
  }
  // A share with no files is no error (an uneven split leaves some empty);
  // one whose files could not be read is, as for a scan.
  if (inputs == 0 && !errors.empty()) {
    Error("no readable input");
    return kExitError;
  }
  return kExitOk;
}

// The diagnosis: of the partials (merge) or of the inputs scanned here.
bool AnalyzeInputs(const RuleSet& rules, const ScanFlags& f, ScanMode mode, ScanOptions* opts, Analysis* a) {
  if (mode == ScanMode::kMerge) {
    std::string err;
    if (!MergePartials(rules, f.paths, a, &err)) {
      Error(err);
      return false;
    }
    return true;
  }
  // Progress on stderr: by default only when it is a terminal and the scan
  // runs past about a second; never in the output streams.
  const bool progress = !f.vm.count("no-progress") && (f.vm.count("progress") || isatty(2));
  std::atomic<uint64_t> read{0}, total{kProgressTotalUnknown};
  if (progress) {
    opts->progress_bytes = &read;
    opts->progress_total = &total;
  }
  ProgressLine line(progress, f.vm.count("progress") ? 0 : ProgressDelayMs(), &read, &total);
  *a = Analyze(rules, f.paths, *opts);
  return true;
}

void WriteScanReport(const Analysis& a, const ScanFlags& f) {
  ReportOptions ro;
  ro.ranks = f.vm.count("ranks") > 0;
  if (f.vm.count("quiet")) {
    // No report; errors still go to stderr and the exit status is the same.
  } else if (f.format == "json") {
    WriteReport(RenderJson(*a.state, a.diagnosis));
  } else if (f.format == "markdown") {
    WriteReport(RenderMarkdown(*a.state, a.diagnosis, ro));
  } else if (f.format == "trace") {
    WriteReport(RenderTrace(*a.state, a.diagnosis));
  } else {
    ro.color = UseColor(f.color, 1);
    ro.verbose = f.vm.count("verbose") > 0;
    ro.width = TerminalWidth(1);
    WriteReport(RenderText(*a.state, a.diagnosis, ro));
  }
}

int ScanExitStatus(const Analysis& a, const FailPolicy& fail) {
  if (a.inputs == 0) {
    Error("no readable input");
    return kExitError;
  }
  if (fail.never) return kExitOk;
  if (fail.unknown && IsUndecided(a.diagnosis.status)) return kExitFindings;
  for (const auto& finding : a.diagnosis.findings) {
    if (finding.severity >= fail.threshold) return kExitFindings;
  }
  return kExitOk;
}

int CmdScan(int argc, char** argv, ScanMode mode = ScanMode::kScan) {
  ScanFlags f;
  ParseScanFlags(argc, argv, mode, &f);
  if (f.vm.count("help")) return Help();
  if (f.vm.count("version")) {
    std::cout << "ncclscan " << ToolVersion() << "\n";
    return kExitOk;
  }
  FailPolicy fail;
  if (!CheckScanFlags(f, mode, &fail)) return kExitError;
  auto rules = Rules(f.rule_dirs, f.disable, /*examples=*/false);
  if (!rules) return kExitError;
  if (mode == ScanMode::kMerge && !f.output.empty()) {
    std::string err;
    if (!CombinePartials(*rules, f.paths, f.output, &err)) {
      Error(err);
      return kExitError;
    }
    return kExitOk;
  }
  ScanOptions opts;
  opts.jobs = f.jobs;
  opts.globs.set_hidden(f.vm.count("hidden") > 0);
  for (const auto& g : f.globs) {
    std::string err;
    if (!opts.globs.Add(g, &err)) {
      Error(err);
      return kExitError;
    }
  }
  if (mode == ScanMode::kPartial) return WritePartial(*rules, f, opts);
  Analysis a;
  if (!AnalyzeInputs(*rules, f, mode, &opts, &a)) return kExitError;
  a.diagnosis.job_id = f.job_id;
  for (const auto& e : a.errors) Error(e);
  WriteScanReport(a, f);
  return ScanExitStatus(a, fail);
}

}  // namespace

// The long option nearest to a mistyped one (edit distance at most 2), "" if none.
static std::string NearestOption(const std::string& typed) {
  static const char* const kOptions[] = {
      "--help",          "--version", "--jobs",         "--format",     "--color", "--fail-on", "--rules",  "--disable",
      "--verbose",       "--job-id",  "--glob",         "--hidden",     "--ranks", "--quiet",   "--output", "--update",
      "--update-golden", "--case",    "--judge-misses", "--judge-json", "--check", "--list",    "--id"};
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
