// Internal to cli/: what main.cc (dispatch, exit status, the rules, explain
// and test commands) and scan_command.cc (scan, partial, merge) share.
//
// Thread-safety: the main thread's only.
#ifndef NCCLSCAN_CLI_CLI_INTERNAL_H_
#define NCCLSCAN_CLI_CLI_INTERNAL_H_

#include <memory>
#include <string>
#include <vector>

#include "cli/site_config.h"
#include "rules/rule_set.h"

namespace ncclscan::cli {

inline constexpr int kExitOk = 0, kExitFindings = 1, kExitError = 2;

// Prints cli/help.txt; returns kExitOk.
int Help();
// "ncclscan: error: MSG" on stderr, MSG escaped for the terminal.
void Error(const std::string& msg);
// A report to standard output; a failed write turns into exit status 2 at the end.
void WriteReport(const std::string& s);
// The text report's width for `fd` (0: no wrapping) and whether it gets color (--color).
int TerminalWidth(int fd);
bool UseColor(const std::string& mode, int fd);
// The long option nearest to a mistyped one (edit distance at most 2), "" if none.
std::string NearestOption(const std::string& typed);

// Where a command's rules come from (cli/site_config.h has the precedence).
struct RuleSources {
  // The site's rule directories (the system one, NCCLSCAN_RULES) under `dirs`:
  // every command but test, whose expectations are the built-in rules'.
  bool site = true;
  std::vector<std::string> dirs;     // --rules: the config file's, then the command line's
  std::vector<std::string> disable;  // --disable
  // Check the built-in rules' examples too (rules --check, explain, test); a
  // scan skips them unless rule files are read (rules/rule_loader.h).
  bool examples = true;
};
// The rules; null, with the problems said on stderr, when they do not load.
// *site_read (optional): the site's directories that were read.
std::unique_ptr<RuleSet> Rules(const RuleSources& src, std::vector<SiteRuleDir>* site_read = nullptr);

// The config file's --rules and --disable, for rules and explain (which show
// the rules a scan uses but take none of its other flags); nothing when there
// is no config file. False, said on stderr, when it cannot be read or holds a
// flag a scan does not take.
bool ConfigRuleFlags(std::vector<std::string>* dirs, std::vector<std::string>* disable);

// scan: diagnose the inputs; partial: write their scan state to -o FILE;
// merge: diagnose (or with -o, combine) partials.
enum class ScanMode { kScan, kPartial, kMerge };
int CmdScan(int argc, char** argv, ScanMode mode = ScanMode::kScan);
// redact: a copy of the inputs with names and addresses replaced (redact_command.cc).
int CmdRedact(const std::vector<std::string>& args);

}  // namespace ncclscan::cli

#endif  // NCCLSCAN_CLI_CLI_INTERNAL_H_
