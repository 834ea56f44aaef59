#include "engine/run/partial.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>

#include "engine/io/replace_file.h"
#include "engine/io/source.h"
#include "engine/reports/report.h"

namespace ncclscan {

namespace {

constexpr std::string_view kMagic = "ncclscan-partial\n";

}  // namespace

// ---- partial files ----

namespace {

// A 64-bit FNV-1a: enough to tell rule sets, or the data of two inputs, apart.
uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ull;
  return h;
}

}  // namespace

std::string RulesSignature(const RuleSet& rules) {
  std::string s = rules.content_hash();
  for (const auto& r : rules.rules()) s += "\nR " + r.spec.id.value;
  for (const auto& f : rules.facts()) s += "\nF " + f.name.value;
  for (const auto& c : rules.correlations()) s += "\nC " + c.spec.id.value;
  // Its hash: short in the file.
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(Fnv1a(s)));
  return buf;
}

namespace {

struct Segment {
  std::string key;    // the input's path, NUL, what the input is (InputIdentity)
  std::string state;  // JobState::Encode
  std::string from;   // the partial file it was read from
};

// The two halves of a segment key.
std::string_view KeyPath(std::string_view key) { return key.substr(0, key.find('\0')); }
std::string_view KeyIdentity(std::string_view key) {
  size_t nul = key.find('\0');
  return nul == std::string_view::npos ? std::string_view() : key.substr(nul + 1);
}

// What an input is, beyond its path (the same path names different files on
// two nodes; one file has many spellings): a regular file is its host, device
// and inode ("file gpu-a 2049 1234"); anything else (stdin, a pipe) its data,
// a hash of its scanned state ("data 1f2e..."): two stdin partials differ
// unless they read the same bytes. Deterministic: the same input on the same
// machine gives the same partial.
std::string InputIdentity(const std::string& path, std::string_view state) {
  struct stat st;
  if (path != "-" && stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
    return fmt::format("file {} {} {}", host, static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino));
  }
  return fmt::format("data {:016x}", Fnv1a(state));
}

struct PartialFile {
  std::vector<std::string> errors;
  std::vector<Segment> segments;
};

bool WriteFile(const std::string& path, const std::string& bytes, std::string* err) {
  if (path == "-") {
    if (std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size() || std::fflush(stdout) != 0) {
      *err = std::string("cannot write the partial to standard output: ") + std::strerror(errno);
      return false;
    }
    return true;
  }
  // Written beside and renamed (ReplaceFile): a reader on shared storage never
  // sees half a file, and a link planted beside it in a shared directory is
  // never written through.
  return ReplaceFile(path, bytes, err);
}

bool WritePartialFile(const RuleSet& rules, const PartialFile& p, const std::string& path, std::string* err) {
  WireWriter body;
  body.S(RulesSignature(rules));
  body.S(ToolVersion());
  PutStrings(&body, p.errors);
  body.U(p.segments.size());
  for (const Segment& s : p.segments) {
    body.S(s.key);
    body.S(s.state);
  }
  std::unique_ptr<ZSTD_CCtx, size_t (*)(ZSTD_CCtx*)> cctx(ZSTD_createCCtx(), ZSTD_freeCCtx);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel, 3);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_checksumFlag, 1);
  std::string frame(ZSTD_compressBound(body.bytes().size()), '\0');
  size_t n = ZSTD_compress2(cctx.get(), frame.data(), frame.size(), body.bytes().data(), body.bytes().size());
  if (ZSTD_isError(n)) {
    *err = std::string("cannot compress the partial: ") + ZSTD_getErrorName(n);
    return false;
  }
  frame.resize(n);
  WireWriter out;
  out.bytes().append(kMagic);
  out.U(kPartialVersion);
  out.bytes() += frame;
  return WriteFile(path, out.bytes(), err);
}

// Partials hold state, not logs: far smaller than what they summarise. The
// bound stops a corrupt or hostile frame from asking for unbounded memory.
constexpr size_t kMaxPartialBody = size_t{16} << 30;

// What each field of a body may hold: a rules signature is 16 hex digits, a
// writer's version a short string (it is echoed in an error message), a key
// a path and an identity; only a segment's state is large.
constexpr size_t kMaxSignature = 64;
constexpr size_t kSignatureSize = 16;  // RulesSignature: 16 hex digits
constexpr size_t kMaxWriter = 256;
constexpr size_t kMaxError = size_t{64} << 10;
constexpr size_t kMaxKey = size_t{64} << 10;

// A partial's body as a WireReader gives it (bodies in memory: the fuzzer).
class BodyInMemory {
 public:
  explicit BodyInMemory(std::string_view body) : r_(body) {}
  uint64_t U() { return r_.U(); }
  std::string S(size_t max) {
    std::string s = r_.S();
    if (s.size() > max) r_.Fail();
    return s;
  }
  bool ok() const { return r_.ok(); }
  bool AtEnd() { return r_.done(); }
  bool Intact() { return true; }
  std::string Problem() const { return "corrupt partial (its data does not decode)"; }

 private:
  WireReader r_;
};

// A partial file's body, decompressed as it is parsed: a hostile frame
// (gigabytes of zeros in a few KB) fails at the first field that does not
// fit, instead of being inflated whole first. Memory is what the fields hold.
class BodyFromFile {
 public:
  explicit BodyFromFile(std::FILE* f) : f_(f), dctx_(ZSTD_createDCtx(), ZSTD_freeDCtx), in_(1 << 17) {}
  uint64_t U() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (!Fill(1)) {
        ok_ = false;
        return 0;
      }
      unsigned char c = static_cast<unsigned char>(buf_[pos_++]);
      v |= static_cast<uint64_t>(c & 0x7f) << shift;
      if (!(c & 0x80)) return v;
    }
    ok_ = false;
    return 0;
  }
  // Longer than max: corrupt. The bytes are taken as they come, so a length
  // the data does not have costs nothing.
  std::string S(size_t max) {
    uint64_t n = U();
    std::string s;
    if (!ok_ || n > max) {
      ok_ = false;
      return s;
    }
    while (s.size() < n && Fill(1)) {
      size_t k = std::min<uint64_t>(n - s.size(), buf_.size() - pos_);
      s.append(buf_, pos_, k);
      pos_ += k;
    }
    if (s.size() < n) ok_ = false;
    return s;
  }
  bool ok() const { return ok_; }
  // The body ends here: the frame ends and nothing follows it in the file.
  bool AtEnd() { return ok_ && !Fill(1) && frame_done_ && problem_.empty(); }
  // Reads to the end, keeping nothing: false when the frame is damaged (its
  // checksum, a cut), which then explains what was read better than its content.
  bool Intact() {
    while (Fill(1)) pos_ = buf_.size();
    return problem_.empty();
  }
  std::string Problem() const { return problem_.empty() ? "corrupt partial (its data does not decode)" : problem_; }

 private:
  // At least n bytes past pos_ (false at the end of the body or on an error).
  bool Fill(size_t n) {
    while (buf_.size() - pos_ < n) {
      if (!problem_.empty() || (frame_done_ && zin_.pos == zin_.size && file_done_)) return false;
      if (zin_.pos == zin_.size) {
        size_t got = std::fread(in_.data(), 1, in_.size(), f_);
        if (got == 0) {
          file_done_ = true;
          if (std::ferror(f_)) {
            problem_ = std::string("cannot read: ") + std::strerror(errno);
          } else if (!frame_done_) {
            problem_ = "truncated partial (the file ends inside its data; was it copied whole?)";
          }
          continue;
        }
        if (frame_done_) {
          problem_ = "corrupt partial (bytes after its end)";
          continue;
        }
        zin_ = ZSTD_inBuffer{in_.data(), got, 0};
      }
      buf_.erase(0, pos_);
      pos_ = 0;
      size_t have = buf_.size();
      buf_.resize(have + ZSTD_DStreamOutSize());
      ZSTD_outBuffer zout{buf_.data() + have, buf_.size() - have, 0};
      size_t ret = ZSTD_decompressStream(dctx_.get(), &zout, &zin_);
      buf_.resize(have + zout.pos);
      if (ZSTD_isError(ret)) {
        problem_ = std::string("corrupt partial (") + ZSTD_getErrorName(ret) + ")";
        continue;
      }
      total_ += zout.pos;
      if (total_ > kMaxPartialBody) {
        problem_ = "corrupt partial (state over " + std::to_string(kMaxPartialBody >> 30) + " GiB)";
        continue;
      }
      if (ret == 0) {
        frame_done_ = true;
        if (zin_.pos < zin_.size) problem_ = "corrupt partial (bytes after its end)";
      }
    }
    return true;
  }

  std::FILE* f_;
  std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> dctx_;
  std::vector<char> in_;
  ZSTD_inBuffer zin_{nullptr, 0, 0};
  std::string buf_;  // decompressed, not yet parsed from pos_
  size_t pos_ = 0;
  uint64_t total_ = 0;
  bool ok_ = true, frame_done_ = false, file_done_ = false;
  std::string problem_;
};

template <class Body>
bool ParseBody(const RuleSet& rules, Body* r, const std::string& path, PartialFile* out, std::string* err) {
  auto fail = [&] {
    *err = path + ": " + r->Problem();
    return false;
  };
  const std::string signature = r->S(kMaxSignature);
  const std::string writer = r->S(kMaxWriter);
  if (!r->ok() || signature.size() != kSignatureSize) return fail();
  if (signature != RulesSignature(rules)) {
    if (!r->Intact()) return fail();  // damage, not other rules
    *err = path + ": made with other rules (ncclscan " + writer +
           "); merge with the same ncclscan release, --rules and --disable as the partials";
    return false;
  }
  // Counts are not trusted for sizes: each element is read before it is kept.
  uint64_t n = r->U();
  for (uint64_t i = 0; i < n && r->ok(); ++i) out->errors.push_back(r->S(kMaxError));
  n = r->U();
  for (uint64_t i = 0; i < n && r->ok(); ++i) {
    Segment& s = out->segments.emplace_back();
    s.key = r->S(kMaxKey);
    s.state = r->S(kMaxPartialBody);
    s.from = path;
  }
  if (!r->ok() || !r->AtEnd()) return fail();
  return true;
}

bool ReadPartialFile(const RuleSet& rules, const std::string& path, PartialFile* out, std::string* err) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!f) {
    *err = path + ": cannot read: " + std::strerror(errno);
    return false;
  }
  // The magic first: a log (or /dev/zero) given by mistake is not read whole.
  std::string head(kMagic.size(), '\0');
  size_t got = std::fread(head.data(), 1, head.size(), f.get());
  if (got < head.size() && std::ferror(f.get())) {
    *err = path + ": cannot read: " + std::strerror(errno);
    return false;
  }
  if (got != head.size() || head != kMagic) {
    *err = path + ": not an ncclscan partial (made by 'ncclscan partial -o FILE')";
    return false;
  }
  uint64_t version = 0;
  bool version_ok = false;
  for (int shift = 0; shift < 64; shift += 7) {
    int c = std::fgetc(f.get());
    if (c == EOF) break;
    version |= static_cast<uint64_t>(c & 0x7f) << shift;
    if (!(c & 0x80)) {
      version_ok = true;
      break;
    }
  }
  if (!version_ok || version != kPartialVersion) {
    *err = path + ": partial format version " + std::to_string(version) + ", this ncclscan reads version " +
           std::to_string(kPartialVersion) + "; write the partials and merge them with the same release";
    return false;
  }
  BodyFromFile body(f.get());
  return ParseBody(rules, &body, path, out, err);
}

// Puts the segments in the order one scan reads their inputs (by path, then
// by what the input is). One input in several segments (one file under two
// spellings, a partial merged twice) is kept once, as a scan keeps each real
// file once: the spelling a scan prefers, the others counted in *duplicates.
bool SortSegments(PartialFile* all, std::vector<std::string>* duplicates, std::string* err) {
  auto& segs = all->segments;
  // Each identity's preferred segment first: "a.log" before "./a.log".
  std::vector<size_t> by_identity(segs.size());
  for (size_t i = 0; i < segs.size(); ++i) by_identity[i] = i;
  std::stable_sort(by_identity.begin(), by_identity.end(), [&](size_t x, size_t y) {
    const std::string_view ix = KeyIdentity(segs[x].key), iy = KeyIdentity(segs[y].key);
    if (ix != iy) return ix < iy;
    const std::string px(KeyPath(segs[x].key)), py(KeyPath(segs[y].key));
    const std::string dx = WithoutDotSegments(px), dy = WithoutDotSegments(py);
    if (dx != dy) return dx < dy;
    if (px.size() != py.size()) return px.size() < py.size();
    return segs[x].state < segs[y].state;
  });
  std::vector<bool> drop(segs.size(), false);
  for (size_t k = 1; k < by_identity.size(); ++k) {
    const Segment& kept = segs[by_identity[k - 1]];
    const Segment& s = segs[by_identity[k]];
    const std::string_view id = KeyIdentity(s.key);
    if (id.empty() || id != KeyIdentity(kept.key)) continue;
    drop[by_identity[k]] = true;
    duplicates->emplace_back(KeyPath(s.key));
    by_identity[k] = by_identity[k - 1];  // compare the next one with the kept one
  }
  std::vector<Segment> kept;
  for (size_t i = 0; i < segs.size(); ++i) {
    if (!drop[i]) kept.push_back(std::move(segs[i]));
  }
  segs = std::move(kept);
  std::stable_sort(segs.begin(), segs.end(), [](const Segment& a, const Segment& b) {
    if (KeyPath(a.key) != KeyPath(b.key)) return KeyPath(a.key) < KeyPath(b.key);
    return KeyIdentity(a.key) < KeyIdentity(b.key);
  });
  for (size_t i = 1; i < segs.size(); ++i) {
    const Segment& a = segs[i - 1];
    const Segment& b = segs[i];
    // A partial without identities (an older writer) names inputs by path alone.
    if (!a.key.empty() && a.key == b.key && KeyIdentity(a.key).empty()) {
      *err = "input " + std::string(KeyPath(a.key)) + " is in two partials (" + a.from + ", " + b.from +
             "); give each input to one 'ncclscan partial' only";
      return false;
    }
  }
  std::sort(all->errors.begin(), all->errors.end());
  return true;
}

void Append(PartialFile&& p, PartialFile* all) {
  all->errors.insert(all->errors.end(), p.errors.begin(), p.errors.end());
  for (auto& s : p.segments) all->segments.push_back(std::move(s));
}

// Every segment of every file, sorted, each input once.
bool ReadAll(const RuleSet& rules, const std::vector<std::string>& files, PartialFile* all,
             std::vector<std::string>* duplicates, std::string* err) {
  for (const auto& path : files) {
    PartialFile p;
    if (!ReadPartialFile(rules, path, &p, err)) return false;
    Append(std::move(p), all);
  }
  return SortSegments(all, duplicates, err);
}

// A segment's state, or false with *err naming the partial it came from.
bool DecodeSegment(const Segment& s, JobState* st, std::string* err) {
  WireReader r(s.state);
  if (st->Decode(&r)) return true;
  *err = s.from + ": corrupt partial (the state of " + (s.key.empty() ? "its walk" : s.key) + " does not decode)";
  return false;
}

// Decodes each segment in turn (its bytes freed once decoded) and folds it in.
bool MergeSegments(const RuleSet& rules, PartialFile* all, const std::vector<std::string>& duplicates, Analysis* out,
                   std::string* err) {
  out->state = std::make_unique<JobState>(&rules);
  out->errors = std::move(all->errors);
  for (Segment& s : all->segments) {
    JobState seg(&rules);
    if (!DecodeSegment(s, &seg, err)) return false;
    std::string().swap(s.state);
    out->state->Absorb(std::move(seg));
  }
  for (const auto& d : duplicates) out->state->skipped().Add(kSkipDuplicate, d);
  out->inputs = out->state->ReadableFiles();
  out->state->Finalize();
  out->diagnosis = Diagnose(*out->state);
  return true;
}

}  // namespace

bool WritePartialScan(const RuleSet& rules, const std::vector<std::string>& paths, const ScanOptions& opts,
                      const std::string& out_path, std::vector<std::string>* errors, size_t* inputs, std::string* err) {
  std::vector<std::string> args = paths.empty() ? std::vector<std::string>{"-"} : paths;
  const size_t first_error = errors->size();
  ExpandedInputs in = ExpandInputs(args, opts.globs, errors);
  PartialFile p;
  // What the walk skipped belongs to no input: a segment of its own, with no files.
  {
    JobState walk(&rules);
    walk.skipped() = in.skipped;
    WireWriter w;
    walk.Encode(&w);
    p.segments.push_back({"", std::move(w.bytes()), ""});
  }
  Scanner scanner(&rules, opts);
  *inputs = 0;
  for (const InputPath& input : in.files) {
    JobState st(&rules);
    scanner.Scan(std::vector<InputPath>{input}, &st, [&](const std::string& msg) { errors->push_back(msg); });
    *inputs += st.ReadableFiles();
    WireWriter w;
    st.Encode(&w);
    std::string key = input.path + '\0' + InputIdentity(input.path, w.bytes());
    p.segments.push_back({std::move(key), std::move(w.bytes()), ""});
  }
  p.errors.assign(errors->begin() + static_cast<std::ptrdiff_t>(first_error), errors->end());
  return WritePartialFile(rules, p, out_path, err);
}

bool MergePartials(const RuleSet& rules, const std::vector<std::string>& files, Analysis* out, std::string* err) {
  PartialFile all;
  std::vector<std::string> duplicates;
  return ReadAll(rules, files, &all, &duplicates, err) && MergeSegments(rules, &all, duplicates, out, err);
}

bool MergePartialBodies(const RuleSet& rules, const std::vector<std::string_view>& bodies, Analysis* out,
                        std::string* err) {
  PartialFile all;
  for (size_t i = 0; i < bodies.size(); ++i) {
    PartialFile p;
    BodyInMemory body(bodies[i]);
    if (!ParseBody(rules, &body, "body " + std::to_string(i), &p, err)) return false;
    Append(std::move(p), &all);
  }
  std::vector<std::string> duplicates;
  return SortSegments(&all, &duplicates, err) && MergeSegments(rules, &all, duplicates, out, err);
}

bool CombinePartials(const RuleSet& rules, const std::vector<std::string>& files, const std::string& out_path,
                     std::string* err) {
  PartialFile all;
  std::vector<std::string> duplicates;
  if (!ReadAll(rules, files, &all, &duplicates, err)) return false;
  for (const Segment& s : all.segments) {  // a combined partial holds only states that decode
    JobState seg(&rules);
    if (!DecodeSegment(s, &seg, err)) return false;
  }
  // The duplicates left out are counted in a segment of their own, as a walk's skips are.
  if (!duplicates.empty()) {
    JobState dup(&rules);
    for (const auto& d : duplicates) dup.skipped().Add(kSkipDuplicate, d);
    WireWriter w;
    dup.Encode(&w);
    all.segments.insert(all.segments.begin(), Segment{"", std::move(w.bytes()), ""});
  }
  return WritePartialFile(rules, all, out_path, err);
}

}  // namespace ncclscan
