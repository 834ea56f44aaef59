// The scan commands: scan (diagnose the inputs), partial (their scan state
// to a file) and merge (partials diagnosed or combined): their flags checked,
// the progress line, the report written and the exit status.
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/program_options.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cli/cli_internal.h"
#include "engine/io/source.h"
#include "engine/reports/report.h"
#include "engine/reports/trace_report.h"
#include "engine/run/analyze.h"
#include "engine/run/partial.h"
#include "rules/rule_loader.h"

namespace po = boost::program_options;

namespace ncclscan::cli {

namespace {

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

// scan's, partial's and merge's command line, described in cli/help.txt
// (printed by --help, and the man page).
struct ScanFlags {
  std::string output;  // -o: partial and merge only
  int jobs = 0;
  std::string format = "text", color = "auto", fail_on = "error";
  std::vector<std::string> rule_dirs, paths, disable;
  std::string job_id;
  std::vector<std::string> globs;
  int only_rank = -1, context = 0;  // --rank, -C
  std::string only_host;            // --host
  po::variables_map vm;             // for the switches (--ranks, --quiet, --progress…)
};

// What --fail-on makes of the findings.
struct FailPolicy {
  Severity threshold = Severity::kError;
  bool never = false;
  // "unknown": errors, and any verdict that is not evidence of health either
  // (nothing recognised, a run that did not finish, unreadable input): for CI gates.
  bool unknown = false;
};

// scan's flags (partial's and merge's: with -o), bound to *f, and the operands
// ("path"), all in *all.
void DescribeScanFlags(ScanMode mode, ScanFlags* f, po::options_description* all) {
  po::options_description desc;
  if (mode != ScanMode::kScan) desc.add_options()("output,o", po::value(&f->output), "");
  desc.add_options()("job-id", po::value(&f->job_id), "");
  desc.add_options()("ranks", "");                         // text and markdown: the per-rank table
  desc.add_options()("glob,g", po::value(&f->globs), "");  // ripgrep's -g: include/exclude files (repeatable)
  desc.add_options()("hidden", "");                        // ripgrep's --hidden: walks read dot-files too
  desc.add_options()("quiet,q", "");                       // grep's -q: no report, the exit status only
  desc.add_options()("progress", "")("no-progress", "");   // default: on a terminal, past ~1 s
  desc.add_options()("no-config", "");                     // ripgrep's: no config file of default flags
  desc.add_options()("files", "");                         // ripgrep's --files: what would be read, and each skip
  desc.add_options()("rank", po::value(&f->only_rank), "")("host", po::value(&f->only_host), "");
  desc.add_options()("context,C", po::value(&f->context), "");  // grep's -C N around each evidence line
  desc.add_options()("help,h", "")("version,V", "")("jobs,j", po::value(&f->jobs), "")(
      "format,f", po::value(&f->format), "")("color", po::value(&f->color), "")("fail-on", po::value(&f->fail_on), "")(
      "rules", po::value(&f->rule_dirs), "")("disable", po::value(&f->disable), "")("verbose,v", "");
  po::options_description hidden;
  hidden.add_options()("path", po::value(&f->paths));
  all->add(desc).add(hidden);
}

bool Has(const po::parsed_options& p, const std::string& key) {
  for (const auto& o : p.options) {
    if (o.string_key == key) return true;
  }
  return false;
}

// The config file's arguments as scan's flags, in *parsed. False, said on
// stderr with the file and line, for one scan does not take and for a path:
// the file holds defaults for every scan, never what to scan.
bool ParseConfigFlags(const ConfigFile& cfg, ScanFlags* scratch, po::parsed_options* parsed) {
  po::options_description all;
  DescribeScanFlags(ScanMode::kScan, scratch, &all);
  po::positional_options_description pos;
  pos.add("path", -1);
  try {
    *parsed = po::command_line_parser(cfg.args).options(all).positional(pos).run();
  } catch (const po::error_with_option_name& e) {
    const std::string name = e.get_option_name();
    Error(cfg.Where(name) + ": " + e.what() + " (in the config file; --no-config ignores it)");
    const std::string near = NearestOption(name.substr(0, name.find('=')));
    if (name.find(' ') != std::string::npos) {  // "--format json" on one line
      std::cerr << "help: one argument per line: --flag=value, or the flag and its value on two lines\n";
    } else if (!near.empty()) {
      std::cerr << "did you mean '" << near << "'?\n";
    }
    return false;
  } catch (const po::error& e) {
    Error(cfg.path + ": " + e.what() + " (in the config file; --no-config ignores it)");
    return false;
  }
  for (const auto& o : parsed->options) {
    if (o.string_key == "path") {
      const std::string arg = o.value.empty() ? "" : o.value[0];
      Error(cfg.Where(arg) + ": '" + arg + "' is not a flag: the config file holds default flags, never paths");
      return false;
    }
  }
  return true;
}

// Whether the command line's `cmd` gives again what the config file's option
// `o` sets, which it then replaces (ripgrep: the later flag wins). Repeatable
// flags add up instead, the config file's first.
bool ReplacedBy(const po::option& o, const po::parsed_options& cmd) {
  const std::string& k = o.string_key;
  if (k == "rules" || k == "disable" || k == "glob") return false;
  if (k == "progress" || k == "no-progress") return Has(cmd, "progress") || Has(cmd, "no-progress");
  return Has(cmd, k);
}

// Throws, as program_options does, on an unknown or malformed option of the
// command line. The config file's flags (cli/site_config.h) go first, less
// those the command line replaces; false, said on stderr, when it cannot be
// read or holds a flag scan does not take.
bool ParseScanFlags(int argc, char** argv, ScanMode mode, ScanFlags* f) {
  po::options_description all;
  DescribeScanFlags(mode, f, &all);
  po::positional_options_description pos;
  pos.add("path", -1);
  const po::parsed_options cmd = po::command_line_parser(argc, argv).options(all).positional(pos).run();
  po::parsed_options merged(&all);
  // --help and --version answer whatever the config file says.
  const bool config = !Has(cmd, "no-config") && !Has(cmd, "help") && !Has(cmd, "version");
  ConfigFile cfg;
  if (config && !ReadConfigFile(&cfg)) return false;
  if (!cfg.args.empty()) {
    ScanFlags scratch;
    po::parsed_options conf(nullptr);
    if (!ParseConfigFlags(cfg, &scratch, &conf)) return false;
    for (const auto& o : conf.options) {
      if (!ReplacedBy(o, cmd)) merged.options.push_back(o);
    }
  }
  merged.options.insert(merged.options.end(), cmd.options.begin(), cmd.options.end());
  try {
    po::store(merged, f->vm);
  } catch (const po::multiple_occurrences& e) {
    // Twice on the command line is the command line's error, as without a
    // config file; else the config file gives it twice.
    std::string key = e.get_option_name();
    key.erase(0, key.find_first_not_of('-'));
    size_t on_cmd = 0;
    for (const auto& o : cmd.options) on_cmd += o.string_key == key;
    if (on_cmd > 1 || cfg.args.empty()) throw;
    Error(cfg.Where("--" + key) + ": " + e.what() + " (in the config file; --no-config ignores it)");
    return false;
  }
  po::notify(f->vm);
  return true;
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
  if (f.vm.count("rank") && f.only_rank < 0) {
    Error("--rank must be a rank number, 0 or more");
    return false;
  }
  if (f.context < 0 || f.context > 1000) {
    Error("-C must be 0 to 1000 lines");
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

// -C N: the lines around each evidence line, read again from the files they
// came from (plain or compressed; not stdin, not an archive member, whose
// bytes are gone), each file once.
class ContextLines {
 public:
  ContextLines(const JobState& st, const Diagnosis& d, int n) : n_(n) {
    std::map<int, std::set<int64_t>> want;  // file -> its evidence lines
    for (const Finding& f : d.findings) {
      for (const Evidence& e : f.evidence) {
        if (e.file >= 0 && e.line > 0) want[e.file].insert(e.line);
      }
    }
    for (const auto& [file, lines] : want) Read(st.files()[file].path, lines, &by_file_[file]);
  }
  std::vector<std::pair<int64_t, std::string>> Around(const Evidence& e) const {
    std::vector<std::pair<int64_t, std::string>> out;
    auto f = by_file_.find(e.file);
    if (f == by_file_.end()) return out;
    for (auto it = f->second.lower_bound(e.line - n_); it != f->second.end() && it->first <= e.line + n_; ++it) {
      out.push_back(*it);
    }
    return out;
  }

 private:
  void Read(const std::string& path, const std::set<int64_t>& lines, std::map<int64_t, std::string>* out) {
    struct stat sb;
    if (path == "-" || path == "<stdin>" || stat(path.c_str(), &sb) != 0 || !S_ISREG(sb.st_mode)) return;
    InputPath in;
    in.path = path;
    std::string err, name;
    auto reader = InputReader::Open(in, nullptr, &err);
    if (!reader || !reader->NextMember(&name, &err)) return;
    std::string pending;
    int64_t no = 1;
    char buf[1 << 16];
    auto keep = [&](std::string line) {
      auto it = lines.lower_bound(no - n_);
      if (it != lines.end() && *it <= no + n_) {
        if (line.size() > 512) line.resize(512);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        (*out)[no] = std::move(line);
      }
      ++no;
    };
    for (;;) {
      const ssize_t got = reader->Read(buf, sizeof buf, &err);
      if (got <= 0) break;
      size_t start = 0;
      for (size_t i = 0; i < static_cast<size_t>(got); ++i) {
        if (buf[i] != '\n') continue;
        pending.append(buf + start, i - start);
        keep(std::move(pending));
        pending.clear();
        start = i + 1;
      }
      if (pending.size() < 4096) pending.append(buf + start, std::min<size_t>(static_cast<size_t>(got) - start, 4096));
      if (no > *lines.rbegin() + n_) break;
    }
    if (!pending.empty()) keep(std::move(pending));
  }

  int n_;
  std::map<int, std::map<int64_t, std::string>> by_file_;
};

void WriteScanReport(const Analysis& a, const ScanFlags& f) {
  ReportOptions ro;
  ro.ranks = f.vm.count("ranks") > 0;
  ro.only_rank = f.only_rank;
  ro.only_host = f.only_host;
  ro.context = f.context;
  std::unique_ptr<ContextLines> around;
  if (f.context > 0 && f.format == "text" && !f.vm.count("quiet")) {
    around = std::make_unique<ContextLines>(*a.state, a.diagnosis, f.context);
    ro.context_lines = [&around](const Evidence& e) { return around->Around(e); };
  }
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

// --files: every file (and archive member) a scan would read, then every one
// it would leave out and why, one per line; nothing is scanned. Exit 0 when
// something would be read, 2 when nothing would.
int ListFiles(const std::vector<std::string>& paths, const GlobFilter& globs) {
  static const std::map<std::string, std::string> kWhy = {
      {kSkipNotALog, "not a log: prose or a JSON document; -g GLOB reads it"},
      {kSkipBinary, "binary"},
      {kSkipDuplicate, "the same file as another path"},
      {kSkipHidden, "hidden; --hidden reads it"}};
  std::vector<std::string> errors;
  std::vector<std::pair<std::string, std::string>> skips;
  const std::vector<std::string> args = paths.empty() ? std::vector<std::string>{"-"} : paths;
  const ExpandedInputs in = ExpandInputs(args, globs, &errors, &skips);
  std::string out;
  size_t read = 0;
  for (const InputPath& p : in.files) {
    std::string err;
    auto reader = InputReader::Open(p, &globs, &err);
    if (!reader) {
      errors.push_back(DisplayPath(p.path) + ": " + err);
      continue;
    }
    reader->ListSkipsInto(&skips);
    std::string name;
    while (reader->NextMember(&name, &err)) {
      out += "read  " + SanitizeForTerminal(name, 4096) + "\n";
      ++read;
    }
    if (!err.empty()) errors.push_back(DisplayPath(p.path) + ": " + err);
  }
  std::stable_sort(skips.begin(), skips.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  for (const auto& [why, path] : skips) {
    auto it = kWhy.find(why);
    out += "skip  " + SanitizeForTerminal(path, 4096) + " (" + (it == kWhy.end() ? why : it->second) + ")\n";
  }
  WriteReport(out);
  for (const auto& e : errors) Error(e);
  if (read == 0) {
    Error("no readable input");
    return kExitError;
  }
  return kExitOk;
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

}  // namespace

bool ConfigRuleFlags(std::vector<std::string>* dirs, std::vector<std::string>* disable) {
  ConfigFile cfg;
  if (!ReadConfigFile(&cfg)) return false;
  if (cfg.args.empty()) return true;
  ScanFlags f;
  po::parsed_options conf(nullptr);
  if (!ParseConfigFlags(cfg, &f, &conf)) return false;
  for (const auto& o : conf.options) {
    if (o.string_key == "rules") dirs->insert(dirs->end(), o.value.begin(), o.value.end());
    if (o.string_key == "disable") disable->insert(disable->end(), o.value.begin(), o.value.end());
  }
  return true;
}

int CmdScan(int argc, char** argv, ScanMode mode) {
  ScanFlags f;
  if (!ParseScanFlags(argc, argv, mode, &f)) return kExitError;
  if (f.vm.count("help")) return Help();
  if (f.vm.count("version")) {
    std::cout << "ncclscan " << ToolVersion() << "\n";
    return kExitOk;
  }
  FailPolicy fail;
  if (!CheckScanFlags(f, mode, &fail)) return kExitError;
  RuleSources src;
  src.dirs = f.rule_dirs;
  src.disable = f.disable;
  src.examples = false;
  auto rules = Rules(src);
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
  if (f.vm.count("files")) return ListFiles(f.paths, opts.globs);
  if (mode == ScanMode::kPartial) return WritePartial(*rules, f, opts);
  Analysis a;
  if (!AnalyzeInputs(*rules, f, mode, &opts, &a)) return kExitError;
  a.diagnosis.job_id = f.job_id;
  for (const auto& e : a.errors) Error(e);
  WriteScanReport(a, f);
  return ScanExitStatus(a, fail);
}

}  // namespace ncclscan::cli
