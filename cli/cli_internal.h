// Internal to cli/: what main.cc (dispatch, exit status, the rules, explain
// and test commands) and scan_command.cc (scan, partial, merge) share.
//
// Thread-safety: the main thread's only.
#ifndef NCCLSCAN_CLI_CLI_INTERNAL_H_
#define NCCLSCAN_CLI_CLI_INTERNAL_H_

#include <memory>
#include <string>
#include <vector>

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
// The built-in rules, `dirs`' and `disable`'s; null, with the problems said
// on stderr, when they do not load.
std::unique_ptr<RuleSet> Rules(const std::vector<std::string>& dirs, const std::vector<std::string>& disable = {},
                               bool examples = true);

// scan: diagnose the inputs; partial: write their scan state to -o FILE;
// merge: diagnose (or with -o, combine) partials.
enum class ScanMode { kScan, kPartial, kMerge };
int CmdScan(int argc, char** argv, ScanMode mode = ScanMode::kScan);

}  // namespace ncclscan::cli

#endif  // NCCLSCAN_CLI_CLI_INTERNAL_H_
