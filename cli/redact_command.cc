// ncclscan redact: writes a copy of logs safe to share (engine/run/redact.h).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cerrno>
#include <cstring>
#include <iostream>

#include "cli/cli_internal.h"
#include "engine/io/replace_file.h"
#include "engine/run/redact.h"

namespace po = boost::program_options;

namespace ncclscan::cli {

int CmdRedact(const std::vector<std::string>& args) {
  po::options_description desc;
  std::string out_dir, key, map_file;
  std::vector<std::string> paths, globs;
  int jobs = 0;
  desc.add_options()("help,h", "")("output,o", po::value(&out_dir), "")("key", po::value(&key), "")(
      "map", po::value(&map_file), "")("jobs,j", po::value(&jobs), "")("glob,g", po::value(&globs), "")("hidden", "")(
      "quiet,q", "")("no-config", "")("path", po::value(&paths), "");
  po::positional_options_description pos;
  pos.add("path", -1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(desc).positional(pos).run(), vm);
  po::notify(vm);
  if (vm.count("help")) return Help();
  if (out_dir.empty()) {
    Error("redact needs -o DIR: where the redacted copies go");
    return kExitError;
  }
  if (paths.empty() || std::count(paths.begin(), paths.end(), "-")) {
    Error("redact reads files and directories, not standard input (save it to a file first)");
    return kExitError;
  }
  struct stat st;
  if (::stat(out_dir.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) {
    Error(out_dir + " is not a directory");
    return kExitError;
  }
  ::mkdir(out_dir.c_str(), 0755);
  RuleSources src;
  src.examples = false;
  auto rules = Rules(src);
  if (!rules) return kExitError;
  RedactOptions opts;
  opts.key = key;
  opts.out_dir = out_dir;
  opts.scan.jobs = jobs;
  for (const auto& g : globs) {
    std::string err;
    if (!opts.scan.globs.Add(g, &err)) {
      Error("-g " + g + ": " + err);
      return kExitError;
    }
  }
  opts.scan.globs.set_hidden(vm.count("hidden") > 0);
  const RedactResult res = RedactInputs(*rules, paths, opts);
  for (const auto& e : res.errors) Error(e);
  if (!map_file.empty()) {
    // The way back: whoever has it can undo the redaction, so only its owner may
    // read it, from the moment it exists (not chmod after the write), and never
    // through a symbolic link planted at its name.
    std::string text = "# ncclscan redact: original value <TAB> pseudonym <TAB> kind. Do not share this file.\n";
    for (const auto& [orig, pseudo] : res.mapping) {
      auto k = res.kinds.find(orig);
      text += orig + '\t' + pseudo + '\t' + (k == res.kinds.end() ? "" : k->second) + '\n';
    }
    const int fd = ::open(map_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    bool ok = fd >= 0 && ::fchmod(fd, 0600) == 0 && WriteAll(fd, text);
    if (fd >= 0) ok = ::close(fd) == 0 && ok;
    if (!ok) {
      Error(map_file + ": could not write the map: " + std::strerror(errno));
      return kExitError;
    }
  }
  if (!vm.count("quiet")) {
    std::cerr << "ncclscan: redacted " << res.written.size() << " file" << (res.written.size() == 1 ? "" : "s") << " ("
              << res.bytes << " bytes, " << res.mapping.size() << " distinct values, " << res.replaced
              << " replacements) into " << out_dir << "\n";
  }
  if (res.written.empty() && res.errors.empty()) {
    Error("nothing to redact: no log was read");
    return kExitError;
  }
  return res.errors.empty() ? kExitOk : kExitError;
}

}  // namespace ncclscan::cli
