// A Flight Recorder dump's value tree (from the pickle or the JSON form,
// flight_recorder.cc) mapped to FrDump: process groups, their status and the
// entries, with what is copied charged to a budget.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>

#include "parsers/flight_recorder_internal.h"
#include "parsers/text_util.h"

namespace ncclscan {

namespace {

// Text copied out of a dump is short in real dumps (names, dtypes, file
// names); a longer value is cut so one hostile string costs little.
constexpr size_t kMaxFieldText = 1024;
// Container items and key comparisons the mapping may visit. A real dump
// visits each value about once (a 2000-entry dump: a few million); a hostile
// DAG could make a tiny file visit a huge list once per reference.
constexpr size_t kMaxWork = size_t{1} << 26;

// Maps the value tree of a dump to FrDump, charging what it copies to a
// budget: the tree is a DAG (the memo lets one entry be listed a million
// times), so the output is bounded on its own.
class Mapper {
 public:
  Mapper(const PyTree& t, FrDump* out) : t_(t), out_(out) {}

  bool Map(std::string* err) {
    uint32_t root = t_.root();
    if (root == PyTree::kNoValue || t_.kind(root) != PyKind::kDict) {
      *err = "not a Flight Recorder dump: the top-level value is " + KindName(root) + ", not a dict";
      return false;
    }
    uint32_t entries = Get(root, "entries");
    uint32_t pg_config = Get(root, "pg_config");
    uint32_t pg_status = Get(root, "pg_status");
    if (entries == PyTree::kNoValue && pg_config == PyTree::kNoValue && pg_status == PyTree::kNoValue) {
      *err = "not a Flight Recorder dump: no 'entries', 'pg_config' or 'pg_status'";
      return false;
    }
    Text(Get(root, "version"), &out_->version);
    if (!Text(Get(root, "comm_lib_version"), &out_->nccl_version)) {
      Text(Get(root, "nccl_version"), &out_->nccl_version);
    }
    if (pg_config != PyTree::kNoValue && !MapPgConfig(pg_config, err)) return false;
    if (pg_status != PyTree::kNoValue && !MapPgStatus(pg_status, err)) return false;
    if (entries != PyTree::kNoValue && !MapEntries(entries, err)) return false;
    return !OverWork(err);
  }

 private:
  bool MapPgConfig(uint32_t d, std::string* err) {
    if (t_.kind(d) != PyKind::kDict) return NotA("'pg_config'", "dict", err);
    const auto& it = Items(d);
    for (size_t i = 0; i + 1 < it.size(); i += 2) {
      if (OverWork(err)) return false;
      std::string key;
      if (!Text(it[i], &key)) continue;
      FrProcessGroup pg;
      uint32_t v = it[i + 1];
      Text(Get(v, "name"), &pg.name);
      Text(Get(v, "desc"), &pg.desc);
      // "[0, 1, 2, 3]" as PyTorch writes it, or a list (a re-encoded dump).
      uint32_t ranks = Get(v, "ranks");
      if (t_.kind(ranks) == PyKind::kStr) {
        std::string_view s = t_.str(ranks);
        work_ += s.size();
        for (size_t k = 0; k < s.size();) {
          if (!IsDigit(s[k])) {
            ++k;
            continue;
          }
          std::string_view rest = s.substr(k);
          int64_t r;
          size_t before = rest.size();
          if (!ConsumeInt(&rest, &r) || r > INT32_MAX) return Bad("'pg_config' ranks", err);
          if (!Charge(sizeof(int), err)) return false;
          pg.ranks.push_back(static_cast<int>(r));
          k += before - rest.size();
        }
      } else {
        for (uint32_t r : Items(ranks)) {
          int64_t n;
          if (!Int(r, &n) || n < 0 || n > INT32_MAX) continue;
          if (!Charge(sizeof(int), err)) return false;
          pg.ranks.push_back(static_cast<int>(n));
        }
      }
      if (!Charge(sizeof(FrProcessGroup) + key.size() + 64, err)) return false;
      out_->pg_config[key] = std::move(pg);
    }
    return true;
  }

  bool MapPgStatus(uint32_t d, std::string* err) {
    if (t_.kind(d) != PyKind::kDict) return NotA("'pg_status'", "dict", err);
    const auto& it = Items(d);
    for (size_t i = 0; i + 1 < it.size(); i += 2) {
      if (OverWork(err)) return false;
      std::string key;
      if (!Text(it[i], &key)) continue;
      FrPgStatus st;
      uint32_t v = it[i + 1];
      Int(Get(v, "last_enqueued_collective"), &st.last_enqueued);
      Int(Get(v, "last_started_collective"), &st.last_started);
      Int(Get(v, "last_completed_collective"), &st.last_completed);
      if (!Charge(sizeof(FrPgStatus) + key.size() + 64, err)) return false;
      out_->pg_status[key] = st;
    }
    return true;
  }

  // The keys of an entry that are read, and their values in one entry.
  enum class EntryKey {
    kRecordId,
    kPgId,
    kProcessGroup,
    kCollectiveSeqId,
    kSeqId,
    kP2pSeqId,
    kOpId,
    kProfilingName,
    kState,
    kIsP2p,
    kRetired,
    kTimeCreated,
    kTimeStarted,
    kTimeCompleted,
    kDurationMs,
    kTimeoutMs,
    kInputSizes,
    kOutputSizes,
    kInputDtypes,
    kOutputDtypes,
    kFrames,
    kCount
  };
  struct EntryFields {
    uint32_t value[static_cast<int>(EntryKey::kCount)];
  };
  // One pass over an entry's items, charged once (as Items does), instead of
  // a lookup per key that each scans the whole dict: a genuine dump of 100k
  // entries visits a few million values, not the ~90 million that used to be
  // charged (and refused as "shared values"). Later keys win, as in Python.
  EntryFields Fields(uint32_t e) {
    static constexpr std::string_view kKeys[] = {"record_id",
                                                 "pg_id",
                                                 "process_group",
                                                 "collective_seq_id",
                                                 "seq_id",
                                                 "p2p_seq_id",
                                                 "op_id",
                                                 "profiling_name",
                                                 "state",
                                                 "is_p2p",
                                                 "retired",
                                                 "time_created_ns",
                                                 "time_discovered_started_ns",
                                                 "time_discovered_completed_ns",
                                                 "duration_ms",
                                                 "timeout_ms",
                                                 "input_sizes",
                                                 "output_sizes",
                                                 "input_dtypes",
                                                 "output_dtypes",
                                                 "frames"};
    static_assert(std::size(kKeys) == static_cast<size_t>(EntryKey::kCount));
    EntryFields f;
    std::fill(std::begin(f.value), std::end(f.value), PyTree::kNoValue);
    const auto& it = Items(e);
    for (size_t i = 0; i + 1 < it.size(); i += 2) {
      if (t_.kind(it[i]) != PyKind::kStr) continue;
      std::string_view key = t_.str(it[i]);
      for (size_t k = 0; k < std::size(kKeys); ++k) {
        if (key == kKeys[k]) f.value[k] = it[i + 1];
      }
    }
    return f;
  }

  bool MapEntries(uint32_t l, std::string* err) {
    PyKind k = t_.kind(l);
    if (k != PyKind::kList && k != PyKind::kTuple) return NotA("'entries'", "list", err);
    const auto& it = Items(l);
    // The newest entries only (the list is oldest first).
    const size_t first = it.size() > kMaxFrEntriesPerDump ? it.size() - kMaxFrEntriesPerDump : 0;
    out_->entries_dropped = first;
    out_->entries.reserve(std::min<size_t>(it.size() - first, 4096));
    for (size_t i = first; i < it.size(); ++i) {
      if (OverWork(err)) return false;
      uint32_t e = it[i];
      if (t_.kind(e) != PyKind::kDict) return NotA("entry " + std::to_string(i), "dict", err);
      if (!Charge(sizeof(FrEntry), err)) return false;
      FrEntry fe;
      EntryFields f = Fields(e);
      auto get = [&](EntryKey key) { return f.value[static_cast<int>(key)]; };
      Int(get(EntryKey::kRecordId), &fe.record_id);
      Text(get(EntryKey::kPgId), &fe.pg_id);
      uint32_t pg = get(EntryKey::kProcessGroup);
      if (pg != PyTree::kNoValue) {
        const auto& names = Items(pg);
        if (t_.kind(pg) != PyKind::kDict && names.size() >= 1) Text(names[0], &fe.pg_name);
        if (t_.kind(pg) != PyKind::kDict && names.size() >= 2) Text(names[1], &fe.pg_desc);
      }
      // Versions before 2.2 called the collective sequence "seq_id".
      if (!Int(get(EntryKey::kCollectiveSeqId), &fe.collective_seq_id)) {
        Int(get(EntryKey::kSeqId), &fe.collective_seq_id);
      }
      Int(get(EntryKey::kP2pSeqId), &fe.p2p_seq_id);
      Int(get(EntryKey::kOpId), &fe.op_id);
      Text(get(EntryKey::kProfilingName), &fe.profiling_name);
      Text(get(EntryKey::kState), &fe.state);
      Bool(get(EntryKey::kIsP2p), &fe.is_p2p);
      Bool(get(EntryKey::kRetired), &fe.retired);
      Real(get(EntryKey::kTimeCreated), &fe.time_created_ns);
      Real(get(EntryKey::kTimeStarted), &fe.time_started_ns);
      Real(get(EntryKey::kTimeCompleted), &fe.time_completed_ns);
      Real(get(EntryKey::kDurationMs), &fe.duration_ms);
      Int(get(EntryKey::kTimeoutMs), &fe.timeout_ms);
      if (!Sizes(get(EntryKey::kInputSizes), &fe.input_sizes, err) ||
          !Sizes(get(EntryKey::kOutputSizes), &fe.output_sizes, err) ||
          !Texts(get(EntryKey::kInputDtypes), &fe.input_dtypes, err) ||
          !Texts(get(EntryKey::kOutputDtypes), &fe.output_dtypes, err)) {
        return false;
      }
      const auto& frames = Items(get(EntryKey::kFrames));
      if (!frames.empty()) {
        std::string name, file, line;
        Text(Get(frames[0], "name"), &name);
        Text(Get(frames[0], "filename"), &file);
        Text(Get(frames[0], "line"), &line);
        fe.top_frame = name + " (" + file + (line.empty() ? "" : ":" + line) + ")";
      }
      size_t text = fe.pg_id.size() + fe.pg_name.size() + fe.pg_desc.size() + fe.profiling_name.size() +
                    fe.state.size() + fe.top_frame.size();
      if (!Charge(text, err)) return false;
      out_->entries.push_back(std::move(fe));
    }
    return true;
  }

  // A list of shapes: [[2, 3], [4]].
  bool Sizes(uint32_t l, std::vector<std::vector<int64_t>>* out, std::string* err) {
    if (l == PyTree::kNoValue) return true;
    for (uint32_t shape : Items(l)) {
      if (!Charge(sizeof(std::vector<int64_t>), err)) return false;
      std::vector<int64_t> dims;
      for (uint32_t d : Items(shape)) {
        int64_t n;
        if (!Int(d, &n)) continue;
        if (!Charge(sizeof(int64_t), err)) return false;
        dims.push_back(n);
      }
      out->push_back(std::move(dims));
    }
    return true;
  }

  bool Texts(uint32_t l, std::vector<std::string>* out, std::string* err) {
    if (l == PyTree::kNoValue) return true;
    for (uint32_t v : Items(l)) {
      std::string s;
      Text(v, &s);
      if (!Charge(sizeof(std::string) + s.size(), err)) return false;
      out->push_back(std::move(s));
    }
    return true;
  }

  // The tree's own accessors, with the work they do counted; past kMaxWork
  // they find nothing, so loops end, and OverWork reports it.
  uint32_t Get(uint32_t d, std::string_view key) {
    if (work_ > kMaxWork) return PyTree::kNoValue;
    work_ += t_.items(d).size();
    return t_.Get(d, key);
  }
  const std::vector<uint32_t>& Items(uint32_t v) {
    static const std::vector<uint32_t> kNone;
    if (work_ > kMaxWork) return kNone;
    work_ += t_.items(v).size();
    return t_.items(v);
  }
  bool OverWork(std::string* err) const {
    if (work_ <= kMaxWork) return false;
    *err = "Flight Recorder dump too large: more than " + std::to_string(kMaxWork) +
           " values visited (shared values referenced many times)";
    return true;
  }

  // Lenient scalar readers: the JSON form writes some numbers as strings;
  // None and missing keys leave the default.
  bool Int(uint32_t v, int64_t* out) const {
    if (v == PyTree::kNoValue) return false;
    switch (t_.kind(v)) {
      case PyKind::kInt:
      case PyKind::kBool:
        *out = t_.integer(v);
        return true;
      case PyKind::kFloat: {
        double d = t_.real(v);
        if (!std::isfinite(d) || d < -9.2e18 || d > 9.2e18) return false;
        *out = static_cast<int64_t>(d);
        return true;
      }
      case PyKind::kStr: {
        std::string_view s = TrimSpace(t_.str(v));
        bool neg = ConsumePrefix(&s, "-");
        int64_t n;
        if (!ConsumeInt(&s, &n) || !s.empty()) return false;
        *out = neg ? -n : n;
        return true;
      }
      default:
        return false;
    }
  }

  bool Real(uint32_t v, double* out) const {
    if (v == PyTree::kNoValue) return false;
    if (t_.kind(v) == PyKind::kFloat) {
      *out = t_.real(v);
      return true;
    }
    if (t_.kind(v) == PyKind::kStr) {
      long double d;
      if (!ParseNumber(TrimSpace(t_.str(v)), false, &d)) return false;
      *out = static_cast<double>(d);
      return true;
    }
    int64_t i;
    if (!Int(v, &i)) return false;
    *out = static_cast<double>(i);
    return true;
  }

  bool Bool(uint32_t v, bool* out) const {
    if (v == PyTree::kNoValue) return false;
    if (t_.kind(v) == PyKind::kStr) {
      std::string_view s = t_.str(v);
      if (s != "true" && s != "false" && s != "True" && s != "False") return false;
      *out = s[0] == 't' || s[0] == 'T';
      return true;
    }
    int64_t i;
    if (!Int(v, &i)) return false;
    *out = i != 0;
    return true;
  }

  bool Text(uint32_t v, std::string* out) const {
    if (v == PyTree::kNoValue) return false;
    switch (t_.kind(v)) {
      case PyKind::kStr: {
        std::string_view s = CutUtf8(t_.str(v), kMaxFieldText);
        out->assign(s.data(), s.size());
        return true;
      }
      case PyKind::kInt:
        *out = std::to_string(t_.integer(v));
        return true;
      case PyKind::kFloat: {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%g", t_.real(v));
        *out = buf;
        return true;
      }
      default:
        return false;
    }
  }

  std::string KindName(uint32_t v) const {
    if (v == PyTree::kNoValue) return "missing";
    switch (t_.kind(v)) {
      case PyKind::kNone:
        return "None";
      case PyKind::kBool:
        return "a bool";
      case PyKind::kInt:
        return "an int";
      case PyKind::kFloat:
        return "a float";
      case PyKind::kStr:
        return "a string";
      case PyKind::kList:
        return "a list";
      case PyKind::kTuple:
        return "a tuple";
      case PyKind::kDict:
        return "a dict";
      case PyKind::kCallable:
        return "a global";
    }
    return "?";
  }

  bool NotA(const std::string& what, const char* kind, std::string* err) const {
    *err = "not a Flight Recorder dump: " + what + " is not a " + kind;
    return false;
  }
  bool Bad(const std::string& what, std::string* err) const {
    *err = "malformed Flight Recorder dump: " + what;
    return false;
  }
  bool Charge(size_t n, std::string* err) {
    if (n > kMaxFlightRecorderBytes - used_) {
      *err = "Flight Recorder dump too large: it would take more than " +
             std::to_string(kMaxFlightRecorderBytes >> 20) + " MiB in memory";
      return false;
    }
    used_ += n;
    return true;
  }

  const PyTree& t_;
  FrDump* out_;
  size_t used_ = 0;  // bytes charged to the output
  size_t work_ = 0;  // items visited
};

}  // namespace

bool MapFlightRecorder(const PyTree& tree, FrDump* out, std::string* err) { return Mapper(tree, out).Map(err); }

}  // namespace ncclscan
