// What a site and a user set once instead of on every command line (cli/help.txt:
// ENVIRONMENT and FILES): the system rule directory, NCCLSCAN_RULES and the
// config file of default flags. Where they are and what they hold; what the
// flags mean is the commands' business (scan_command.cc, main.cc).
//
// Rules, lowest precedence first (a later layer replaces a rule of the same id):
// built-in < system directory < NCCLSCAN_RULES < config file's --rules <
// command line's --rules. Flags: config file < command line.
//
// Thread-safety: reads the environment; call from the main thread.
#ifndef NCCLSCAN_CLI_SITE_CONFIG_H_
#define NCCLSCAN_CLI_SITE_CONFIG_H_

#include <string>
#include <vector>

namespace ncclscan::cli {

// A rule directory a site put in place, and what put it there.
struct SiteRuleDir {
  std::string path;
  const char* from;  // "system" or "NCCLSCAN_RULES"
};

// The system rule directory: NCCLSCAN_SYSTEM_RULES when set (empty: none),
// else SYSCONFDIR/ncclscan/rules.d, SYSCONFDIR being that of the prefix the
// running binary is installed under (/etc for /usr/bin/ncclscan, PREFIX/etc for
// PREFIX/bin/ncclscan), or the build's (CMAKE_INSTALL_FULL_SYSCONFDIR) for a
// binary that is not in a bin/ directory (the build tree).
std::string SystemRulesDir();

// The site's rule directories, lowest precedence first: the system directory
// when it exists (its absence is no error: most machines have none), then each
// entry of NCCLSCAN_RULES (':'-separated, empty entries skipped). False, the
// problem said on stderr, when NCCLSCAN_RULES names something that does not
// exist: a typo there would otherwise silently drop the site's rules.
bool SiteRuleDirs(std::vector<SiteRuleDir>* dirs);

// The config file's arguments, one per line ripgrep-style: blanks around each
// trimmed, blank lines and lines starting with '#' skipped.
struct ConfigFile {
  std::string path;               // "" when there is none to read
  std::vector<std::string> args;  // in file order
  std::vector<int> lines;         // the line of each argument
  // "PATH:LINE" of the argument `arg` (the first with that text, or starting
  // with it and '='), or PATH when none matches: for error messages.
  std::string Where(const std::string& arg) const;
};

// Finds and reads the config file: NCCLSCAN_CONFIG_PATH when set (empty: no
// file), else $XDG_CONFIG_HOME/ncclscan/config ($XDG_CONFIG_HOME absolute),
// else $HOME/.config/ncclscan/config. A default path that does not exist is no
// config file; a named one that does not exist, one that cannot be read, is
// not a regular file or is over 1 MiB is an error: false, said on stderr.
bool ReadConfigFile(ConfigFile* cfg);

// Whether `args` (a command line, without the program and command names) hold
// --no-config before a "--".
bool HasNoConfig(const std::vector<std::string>& args);

}  // namespace ncclscan::cli

#endif  // NCCLSCAN_CLI_SITE_CONFIG_H_
