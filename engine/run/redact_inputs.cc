// RedactInputs (engine/run/redact.h): the inputs read twice, to learn the
// names to hide and to write their redacted copies, each input on a thread.
#include <fcntl.h>
#include <oneapi/tbb/enumerable_thread_specific.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "engine/io/replace_file.h"
#include "engine/io/source.h"
#include "engine/run/analyze.h"
#include "engine/run/redact.h"
#include "parsers/text_util.h"

namespace ncclscan {

namespace {

// Where input `name` ("a/b.log", "job.tar.gz:rank3.log", a compressed file)
// goes under `dir`: its path without a leading '/' or '..', a member under a
// ".d" directory named after its archive, compression suffixes dropped (the
// copy is plain text), and every name in it redacted too (nccl.gpu-a17.48213).
std::string OutputPath(const std::string& dir, std::string name, Redactor* r) {
  const size_t colon = name.find(':');
  if (colon != std::string::npos && colon > 0) name = name.substr(0, colon) + ".d/" + name.substr(colon + 1);
  for (const char* ext : {".gz", ".zst", ".bz2", ".xz"}) {
    if (EndsWith(name, ext)) name.resize(name.size() - std::strlen(ext));
  }
  std::string clean;
  std::string_view p = name;
  while (!p.empty()) {
    const size_t slash = p.find('/');
    const std::string_view part = p.substr(0, slash);
    if (!part.empty() && part != "." && part != "..") clean += (clean.empty() ? "" : "/") + r->RedactPath(part);
    if (slash == std::string_view::npos) break;
    p.remove_prefix(slash + 1);
  }
  if (clean.empty() || name == "-") clean = "stdin.log";
  return dir + "/" + clean;
}

// Creates the directories above `path` below `dir` (`dir` itself must exist).
// A name there that already is something other than a real directory — a
// symbolic link planted in the output directory, a file — is refused, so a
// copy is never written outside `dir`.
bool MakeParents(const std::string& dir, const std::string& path, std::string* err) {
  for (size_t i = path.find('/', dir.size() + 1); i != std::string::npos; i = path.find('/', i + 1)) {
    const std::string d = path.substr(0, i);
    if (::mkdir(d.c_str(), 0755) != 0 && errno != EEXIST) {
      *err = d + ": " + std::strerror(errno);
      return false;
    }
    struct stat st;
    if (::lstat(d.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      *err = d + ": not a directory (a symbolic link or a file is in the way); nothing written under it";
      return false;
    }
  }
  return true;
}

// Opens `path` for the copy, never through a symbolic link at its name.
int OpenCopy(const std::string& path, std::string* err) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    *err = path + ": " +
           (errno == ELOOP ? std::string("is a symbolic link; not written through it") : std::strerror(errno));
  }
  return fd;
}

}  // namespace

namespace {

// Reads the current member of `reader` in blocks of whole lines (a value is
// never cut between two) and gives each to `use`; returns Read's last result.
template <typename Use>
ssize_t EachBlock(InputReader* reader, size_t block, uint64_t* bytes, std::string* err, Use&& use) {
  // Read straight into the buffer's free tail (no copy from a block buffer,
  // no zero-filling): buf[from, size) is read and not used yet.
  size_t cap = 2 * block, size = 0, from = 0;
  std::unique_ptr<char[]> buf(new char[cap]);
  ssize_t n;
  while (true) {
    if (from > 0) {  // the unused tail (a line not ended yet) to the front
      std::memmove(buf.get(), buf.get() + from, size - from);
      size -= from;
      from = 0;
    }
    if (cap - size < block) {  // a line longer than the buffer: grow it
      cap = 2 * (size + block);
      std::unique_ptr<char[]> bigger(new char[cap]);
      std::memcpy(bigger.get(), buf.get(), size);
      buf = std::move(bigger);
    }
    n = reader->Read(buf.get() + size, block, err);
    if (n <= 0) break;
    const std::string_view got(buf.get() + size, static_cast<size_t>(n));
    size += static_cast<size_t>(n);
    *bytes += static_cast<uint64_t>(n);
    const size_t nl = got.rfind('\n');
    if (nl == std::string_view::npos) continue;
    const size_t end = static_cast<size_t>(got.data() - buf.get()) + nl + 1;
    use(std::string_view(buf.get(), end));
    from = end;
  }
  use(std::string_view(buf.get() + from, size - from));
  return n;
}

// A member whose bytes are no text (a Flight Recorder pickle, NULs).
bool LooksBinary(std::string_view head) {
  return head.find('\0') != std::string_view::npos || (!head.empty() && head[0] == '\x80');
}

// What one input gave: its copies, its problems, what was replaced.
struct InputOut {
  std::vector<std::string> written, errors;
  uint64_t bytes = 0, replaced = 0;
};

}  // namespace

RedactResult RedactInputs(const RuleSet& rules, const std::vector<std::string>& paths, const RedactOptions& opts) {
  RedactResult res;
  // The names to hide: what a scan of the same inputs learned, and what only
  // some lines say outright (a prompt's host, a home directory's user, a job
  // id), hidden in every line: learned from the scan's own chunks as it reads
  // them, one learner a thread (names are sets: the order they join in does
  // not matter). The inputs are read once to learn and once to copy; the scan
  // reads a pickle whole, not as chunks (its bytes say nothing of prompts or jobs).
  oneapi::tbb::enumerable_thread_specific<Redactor> learners([&] { return Redactor(opts.key); });
  ScanOptions scan = opts.scan;
  scan.on_text = [&](std::string_view text) { learners.local().Learn(text); };
  Analysis a = Analyze(rules, paths, scan);
  Redactor names(opts.key);
  names.AddHostsOf(*a.state);
  for (const Redactor& l : learners) names.Absorb(l);
  learners.clear();
  std::vector<std::string> walk_errors;
  const ExpandedInputs inputs = ExpandInputs(paths, opts.scan.globs, &walk_errors);
  for (const auto& e : walk_errors) res.errors.push_back(e);
  const std::vector<InputPath>& files = inputs.files;
  oneapi::tbb::task_arena arena(opts.scan.jobs > 0 ? opts.scan.jobs : oneapi::tbb::task_arena::automatic);
  // The copies, each input by a redactor of its own (pseudonyms are a
  // function of the key and the value: every redactor gives the same).
  std::vector<InputOut> outs(files.size());
  std::vector<Redactor> workers;
  workers.reserve(files.size());
  for (size_t i = 0; i < files.size(); ++i) workers.push_back(names.Fork());
  arena.execute([&] {
    oneapi::tbb::parallel_for(size_t{0}, files.size(), [&](size_t i) {
      InputOut& o = outs[i];
      Redactor& r = workers[i];
      std::string err;
      std::unique_ptr<InputReader> reader = InputReader::Open(files[i], &opts.scan.globs, &err);
      if (!reader) {
        o.errors.push_back(err);
        return;
      }
      std::string name;
      while (reader->NextMember(&name, &err)) {
        const std::string out_path = OutputPath(opts.out_dir, name, &r);
        std::string open_err;
        if (!MakeParents(opts.out_dir, out_path, &open_err)) {
          o.errors.push_back(open_err);
          continue;
        }
        const int fd = OpenCopy(out_path, &open_err);
        if (fd < 0) {
          o.errors.push_back(open_err);
          continue;
        }
        const std::string_view head = reader->Head();
        r.set_same_length(LooksBinary(head));
        std::string redacted;
        bool wrote = true;
        const ssize_t n = EachBlock(reader.get(), size_t{1} << 16, &o.bytes, &err, [&](std::string_view b) {
          redacted.clear();
          r.Redact(b, &redacted);
          wrote = WriteAll(fd, redacted) && wrote;
        });
        if (n < 0) o.errors.push_back(name + ": " + err);
        if (::close(fd) != 0 || !wrote) o.errors.push_back(out_path + ": write failed");
        o.written.push_back(out_path);
      }
      if (!err.empty()) o.errors.push_back(err);
      o.replaced = r.replaced();
    });
  });
  for (size_t i = 0; i < files.size(); ++i) {
    const InputOut& o = outs[i];
    res.written.insert(res.written.end(), o.written.begin(), o.written.end());
    res.errors.insert(res.errors.end(), o.errors.begin(), o.errors.end());
    res.bytes += o.bytes;
    res.replaced += o.replaced;
    res.mapping.insert(workers[i].mapping().begin(), workers[i].mapping().end());
    res.kinds.insert(workers[i].kinds().begin(), workers[i].kinds().end());
  }
  return res;
}

}  // namespace ncclscan
