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

// ---- wire encoding ----

void WireWriter::U(uint64_t v) {
  while (v >= 0x80) {
    out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out_.push_back(static_cast<char>(v));
}

void WireWriter::S(std::string_view s) {
  U(s.size());
  out_.append(s.data(), s.size());
}

void WireWriter::D(double d) {
  uint64_t bits;
  std::memcpy(&bits, &d, sizeof bits);
  for (int i = 0; i < 8; ++i) out_.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
}

uint64_t WireReader::U() {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (in_.empty()) break;
    const auto byte = static_cast<unsigned char>(in_[0]);
    in_.remove_prefix(1);
    v |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if (!(byte & 0x80)) return v;
  }
  ok_ = false;
  in_ = {};
  return 0;
}

std::string WireReader::S() {
  uint64_t n = U();
  if (n > in_.size()) {
    ok_ = false;
    in_ = {};
    return {};
  }
  std::string s(in_.substr(0, n));
  in_.remove_prefix(n);
  return s;
}

double WireReader::D() {
  if (in_.size() < 8) {
    ok_ = false;
    in_ = {};
    return 0;
  }
  uint64_t bits = 0;
  for (int i = 0; i < 8; ++i) bits |= static_cast<uint64_t>(static_cast<unsigned char>(in_[i])) << (8 * i);
  in_.remove_prefix(8);
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

size_t WireReader::Count() {
  uint64_t n = U();
  if (n > in_.size()) {
    ok_ = false;
    in_ = {};
    return 0;
  }
  return static_cast<size_t>(n);
}

int WireReader::Index(int64_t lo, size_t n) {
  int64_t v = I();
  if (v < lo || v >= static_cast<int64_t>(n)) {
    ok_ = false;
    return lo < 0 ? -1 : 0;
  }
  return static_cast<int>(v);
}

// ---- JobState <-> bytes ----

namespace {

void Put(WireWriter* w, const Seen& s) {
  w->D(s.time);
  w->I(s.file);
  w->I(s.line);
}

void Put(WireWriter* w, const Evidence& e) {
  w->I(e.file);
  w->I(e.line);
  w->S(e.text);
  w->D(e.time);
  w->I(e.origin);
  w->I(e.origin_line);
}

void Put(WireWriter* w, const FactValue& v) {
  w->S(v.value);
  w->U(v.values.size());
  for (const auto& s : v.values) w->S(s);
  w->I(v.count);
  Put(w, v.evidence);
  Put(w, v.seen);
}

void PutSizes(WireWriter* w, const std::vector<std::vector<int64_t>>& v) {
  w->U(v.size());
  for (const auto& inner : v) {
    w->U(inner.size());
    for (int64_t x : inner) w->I(x);
  }
}

void PutStrings(WireWriter* w, const std::vector<std::string>& v) {
  w->U(v.size());
  for (const auto& s : v) w->S(s);
}

// Maps (or vectors of pairs) of strings and integers, by their types.
void PutValue(WireWriter* w, const std::string& v) { w->S(v); }
void PutValue(WireWriter* w, int64_t v) { w->I(v); }
void GetValue(WireReader* r, std::string* v) { *v = r->S(); }
template <typename Int>
void GetValue(WireReader* r, Int* v) {
  *v = static_cast<Int>(r->I());
}

template <typename K, typename V, typename C>
void PutValue(WireWriter* w, const std::map<K, V, C>& m);
template <typename K, typename V, typename C>
void GetValue(WireReader* r, std::map<K, V, C>* m);

template <typename Pairs>
void PutPairs(WireWriter* w, const Pairs& m) {
  w->U(m.size());
  for (const auto& kv : m) {
    PutValue(w, kv.first);
    PutValue(w, kv.second);
  }
}

template <typename Map>
void GetMap(WireReader* r, Map* m) {
  size_t n = r->Count();
  for (size_t i = 0; i < n && r->ok(); ++i) {
    typename Map::key_type k;
    GetValue(r, &k);
    GetValue(r, &(*m)[k]);
  }
}

template <typename K, typename V, typename C>
void PutValue(WireWriter* w, const std::map<K, V, C>& m) {
  PutPairs(w, m);
}
template <typename K, typename V, typename C>
void GetValue(WireReader* r, std::map<K, V, C>* m) {
  GetMap(r, m);
}

// Indices are checked against the sizes the state has by then: files and
// origins come first, so evidence can be checked as it is read.
struct Limits {
  size_t files = 0;
  size_t origins = 0;
  size_t subjects = 0;
};

// Values a scan never makes are corrupt, not passed on to a report (a count
// of -5 or a line of -7 is JSON the schema rejects): a line is 1-based in
// its file (0 without one), a time finite (-1 without one), a count >= 0.
void CheckLine(WireReader* r, int file, int64_t line) {
  if (line < 0 || (file >= 0 && line < 1)) r->Fail();
}
void CheckTime(WireReader* r, double t) {
  if (!std::isfinite(t)) r->Fail();
}
void CheckCount(WireReader* r, int64_t count) {
  if (count < 0) r->Fail();
}

void Get(WireReader* r, Seen* s, const Limits& l) {
  s->time = r->D();
  s->file = r->Index(-1, l.files);
  s->line = r->I();
  CheckTime(r, s->time);
  CheckLine(r, s->file, s->line);
}

void Get(WireReader* r, Evidence* e, const Limits& l) {
  e->file = r->Index(-1, l.files);
  e->line = r->I();
  e->text = r->S();
  e->time = r->D();
  e->origin = r->Index(-1, l.origins);
  e->origin_line = r->I();
  CheckLine(r, e->file, e->line);
  CheckTime(r, e->time);
  if (e->origin_line < -1) r->Fail();
}

void Get(WireReader* r, FactValue* v, const Limits& l) {
  v->value = r->S();
  size_t n = r->Count();
  for (size_t i = 0; i < n && r->ok(); ++i) v->values.push_back(r->S());
  v->count = r->I();
  CheckCount(r, v->count);
  Get(r, &v->evidence, l);
  Get(r, &v->seen, l);
}

void GetSizes(WireReader* r, std::vector<std::vector<int64_t>>* v) {
  size_t n = r->Count();
  for (size_t i = 0; i < n && r->ok(); ++i) {
    v->emplace_back();
    size_t k = r->Count();
    for (size_t j = 0; j < k && r->ok(); ++j) v->back().push_back(r->I());
  }
}

void GetStrings(WireReader* r, std::vector<std::string>* v) {
  size_t n = r->Count();
  for (size_t i = 0; i < n && r->ok(); ++i) v->push_back(r->S());
}

void Put(WireWriter* w, const FrFile& f) {
  w->S(f.path);
  w->I(f.rank);
  const FrDump& d = f.dump;
  w->S(d.version);
  w->S(d.nccl_version);
  w->U(d.pg_config.size());
  for (const auto& kv : d.pg_config) {
    w->S(kv.first);
    w->S(kv.second.name);
    w->S(kv.second.desc);
    w->U(kv.second.ranks.size());
    for (int rk : kv.second.ranks) w->I(rk);
  }
  w->U(d.pg_status.size());
  for (const auto& kv : d.pg_status) {
    w->S(kv.first);
    w->I(kv.second.last_enqueued);
    w->I(kv.second.last_started);
    w->I(kv.second.last_completed);
  }
  w->U(d.entries.size());
  for (const FrEntry& e : d.entries) {
    w->I(e.record_id);
    w->S(e.pg_id);
    w->S(e.pg_name);
    w->S(e.pg_desc);
    w->I(e.collective_seq_id);
    w->I(e.p2p_seq_id);
    w->I(e.op_id);
    w->S(e.profiling_name);
    w->S(e.state);
    w->U(e.is_p2p);
    w->U(e.retired);
    w->D(e.time_created_ns);
    w->D(e.time_started_ns);
    w->D(e.time_completed_ns);
    w->D(e.duration_ms);
    w->I(e.timeout_ms);
    PutSizes(w, e.input_sizes);
    PutSizes(w, e.output_sizes);
    PutStrings(w, e.input_dtypes);
    PutStrings(w, e.output_dtypes);
    w->S(e.top_frame);
  }
}

void Get(WireReader* r, FrFile* f) {
  f->path = r->S();
  f->rank = static_cast<int>(r->I());
  FrDump& d = f->dump;
  d.version = r->S();
  d.nccl_version = r->S();
  size_t n = r->Count();
  for (size_t i = 0; i < n && r->ok(); ++i) {
    FrProcessGroup& pg = d.pg_config[r->S()];
    pg.name = r->S();
    pg.desc = r->S();
    size_t k = r->Count();
    for (size_t j = 0; j < k && r->ok(); ++j) pg.ranks.push_back(static_cast<int>(r->I()));
  }
  n = r->Count();
  for (size_t i = 0; i < n && r->ok(); ++i) {
    FrPgStatus& st = d.pg_status[r->S()];
    st.last_enqueued = r->I();
    st.last_started = r->I();
    st.last_completed = r->I();
  }
  n = r->Count();
  if (n > kMaxFrEntriesPerDump) r->Fail();  // more than a scan keeps
  for (size_t i = 0; i < n && r->ok(); ++i) {
    FrEntry& e = d.entries.emplace_back();
    e.record_id = r->I();
    e.pg_id = r->S();
    e.pg_name = r->S();
    e.pg_desc = r->S();
    e.collective_seq_id = r->I();
    e.p2p_seq_id = r->I();
    e.op_id = r->I();
    e.profiling_name = r->S();
    e.state = r->S();
    e.is_p2p = r->U() != 0;
    e.retired = r->U() != 0;
    e.time_created_ns = r->D();
    e.time_started_ns = r->D();
    e.time_completed_ns = r->D();
    e.duration_ms = r->D();
    e.timeout_ms = r->I();
    GetSizes(r, &e.input_sizes);
    GetSizes(r, &e.output_sizes);
    GetStrings(r, &e.input_dtypes);
    GetStrings(r, &e.output_dtypes);
    e.top_frame = r->S();
  }
}

}  // namespace

void JobState::Encode(WireWriter* w) const {
  w->U(files_.size());
  for (const FileInfo& f : files_) {
    w->S(f.path);
    w->U(f.bytes);
    w->U(f.lines);
    w->S(f.error);
    w->I(f.path_rank);
    w->I(f.path_local_rank);
    w->S(f.path_host);
    w->I(f.path_pid);
  }
  w->U(skipped_.count.size());
  for (const auto& kv : skipped_.count) {
    w->S(kv.first);
    w->U(kv.second);
  }
  PutPairs(w, skipped_.paths);
  w->U(skipped_.walk_errors);
  PutStrings(w, origins_);

  // Subjects: facts sparsely, by fact index (most subjects carry few).
  w->U(subjects_.size());
  for (const Subject& s : subjects_) {
    w->S(s.host);
    w->I(s.pid);
    w->I(s.rank);
    w->S(s.label);
    w->U(s.files.size());
    for (int f : s.files) w->I(f);
    w->U(s.devices);
    PutPairs(w, s.rank_hints);
    PutPairs(w, s.label_hints);
    w->U(s.host_from_hint);
    w->U(s.over_cap);
    w->U(s.facts.slots().size());
    for (const auto& [f, v] : s.facts.slots()) {
      w->I(f);
      Put(w, v);
    }
    w->U(s.keyed.slots().size());
    for (const auto& [f, m] : s.keyed.slots()) {
      w->I(f);
      w->U(m.size());
      for (const auto& kv : m) {
        w->S(kv.first);
        Put(w, kv.second);
      }
    }
  }
  w->U(subject_index_.size());
  for (const auto& kv : subject_index_) {
    w->S(kv.first);
    w->I(kv.second);
  }
  w->U(comms_.size());
  for (const auto& kv : comms_) {
    const CommInfo& c = kv.second;
    w->S(kv.first);
    w->S(c.id);
    w->I(c.nranks);
    for (const std::set<int>* set : {&c.ranks_started, &c.ranks_completed, &c.ranks_aborted, &c.subjects}) {
      w->U(set->size());
      for (int x : *set) w->I(x);
    }
  }
  w->U(comm_ptr_.size());
  for (const auto& m : comm_ptr_) PutPairs(w, m);
  PutPairs(w, comm_rank_);
  PutPairs(w, subject_global_rank_);
  PutPairs(w, address_owner_);
  w->U(line_findings_.size());
  for (const auto& kv : line_findings_) {
    const LineFindingAcc& a = kv.second;
    w->S(kv.first);
    w->I(a.rule);
    w->S(a.group);
    PutPairs(w, a.vars);
    w->U(a.subjects.size());
    for (int s : a.subjects) w->I(s);
    w->U(a.evidence.size());
    for (const auto& e : a.evidence) Put(w, e);
    w->I(a.count);
    Put(w, a.first);
    Put(w, a.last);
    w->S(a.result);
  }
  PutPairs(w, hint_hosts_);
  PutStrings(w, subject_address_);
  PutStrings(w, identity_conflicts_);
  w->U(flight_recorders_.size());
  for (const auto& f : flight_recorders_) Put(w, f);
  w->U(labels_not_ranks_.size());
  for (int f : labels_not_ranks_) w->I(f);
  PutStrings(w, open_warn_);
  Counters::Each(counters_, [&](uint64_t v) { w->U(v); });
}

bool JobState::Decode(WireReader* r) {
  Limits l;
  size_t n = r->Count();
  for (size_t i = 0; i < n && r->ok(); ++i) {
    FileInfo& f = files_.emplace_back();
    f.path = r->S();
    f.bytes = r->U();
    f.lines = r->U();
    f.error = r->S();
    f.path_rank = static_cast<int>(r->I());
    f.path_local_rank = static_cast<int>(r->I());
    f.path_host = r->S();
    f.path_pid = r->I();
  }
  previous_subject_.assign(files_.size(), -1);
  l.files = files_.size();
  n = r->Count();
  for (size_t i = 0; i < n && r->ok(); ++i) {
    std::string k = r->S();
    skipped_.count[k] = r->U();
  }
  n = r->Count();
  for (size_t i = 0; i < n && r->ok(); ++i) {
    std::string reason = r->S();
    skipped_.paths.emplace_back(std::move(reason), r->S());
  }
  skipped_.walk_errors = r->U();
  GetStrings(r, &origins_);
  for (size_t i = 0; i < origins_.size(); ++i) origin_index_.emplace(origins_[i], static_cast<int>(i));
  l.origins = origins_.size();

  const size_t nfacts = rules_->facts().size();
  // The scan's caps hold for a decoded state too: a crafted partial of a few
  // KB naming ten million empty subjects is corrupt, not gigabytes of them.
  n = r->Count();
  if (n > kMaxSubjects + 1) r->Fail();  // + the one past the cap
  for (size_t i = 0; i < n && r->ok(); ++i) {
    Subject& s = subjects_.emplace_back();
    s.host = r->S();
    s.pid = r->I();
    s.rank = static_cast<int>(r->I());
    s.label = r->S();
    size_t k = r->Count();
    for (size_t j = 0; j < k && r->ok(); ++j) s.files.push_back(r->Index(0, l.files));
    s.devices = r->U();
    GetMap(r, &s.rank_hints);
    GetMap(r, &s.label_hints);
    s.host_from_hint = r->U() != 0;
    s.over_cap = r->U() != 0;
    s.facts = FactSlots<FactValue>(nfacts);
    s.keyed = KeyedSlots(nfacts);
    // Slots come in fact order; one out of order or twice is corrupt.
    k = r->Count();
    for (size_t j = 0, last = 0; j < k && r->ok(); ++j) {
      int f = r->Index(0, nfacts);
      if (j > 0 && static_cast<size_t>(f) <= last) r->Fail();
      last = static_cast<size_t>(f);
      if (!r->ok()) break;
      Get(r, &s.facts.At(f), l);
    }
    k = r->Count();
    for (size_t j = 0, last = 0; j < k && r->ok(); ++j) {
      int f = r->Index(0, nfacts);
      if (j > 0 && static_cast<size_t>(f) <= last) r->Fail();
      last = static_cast<size_t>(f);
      if (!r->ok()) break;
      KeyedValues& m = s.keyed.At(f);
      size_t keys = r->Count();
      for (size_t q = 0; q < keys && r->ok(); ++q) {
        std::string key = r->S();
        Get(r, &m[key], l);
      }
    }
  }
  // Ranks are below 2^24 wherever a scan makes them (ConsumeIntBelow): a
  // decoded one past that could size a per-rank table in the correlations.
  auto rank_ok = [](int64_t v) { return v >= -1 && v < kMaxRanks; };
  for (const Subject& s : subjects_) {
    if (!rank_ok(s.rank)) r->Fail();
    for (const auto* hints : {&s.rank_hints, &s.label_hints}) {
      for (const auto& kv : *hints) {
        if (!rank_ok(kv.first) || kv.second < 0) r->Fail();
      }
    }
  }
  l.subjects = subjects_.size();
  n = r->Count();
  for (size_t i = 0; i < n && r->ok(); ++i) {
    std::string key = r->S();
    subject_index_[key] = r->Index(0, l.subjects);
  }
  n = r->Count();
  if (n > kMaxComms) r->Fail();
  for (size_t i = 0; i < n && r->ok(); ++i) {
    CommInfo& c = comms_[r->S()];
    c.id = r->S();
    c.nranks = static_cast<int>(r->I());
    for (std::set<int>* set : {&c.ranks_started, &c.ranks_completed, &c.ranks_aborted}) {
      size_t k = r->Count();
      for (size_t j = 0; j < k && r->ok(); ++j) set->insert(static_cast<int>(r->I()));
    }
    size_t k = r->Count();
    for (size_t j = 0; j < k && r->ok(); ++j) c.subjects.insert(r->Index(0, l.subjects));
  }
  n = r->Count();
  if (n > l.subjects) r->Fail();
  for (size_t i = 0; i < n && r->ok(); ++i) GetMap(r, &comm_ptr_.emplace_back());
  for (const auto& kv : comms_) {
    const CommInfo& c = kv.second;
    if (!rank_ok(c.nranks)) r->Fail();
    for (const std::set<int>* set : {&c.ranks_started, &c.ranks_completed, &c.ranks_aborted}) {
      if (!set->empty() && (!rank_ok(*set->begin()) || !rank_ok(*set->rbegin()))) r->Fail();
    }
  }
  GetMap(r, &comm_rank_);
  GetMap(r, &subject_global_rank_);
  for (const auto& kv : comm_rank_) {
    for (const auto& cr : kv.second) {
      if (!rank_ok(cr.second)) r->Fail();
    }
  }
  for (const auto& kv : subject_global_rank_) {
    if (!rank_ok(kv.second)) r->Fail();
  }
  // Their keys are subject indices.
  auto subject_keys = [&](const auto& m) {
    if (!m.empty() && (m.begin()->first < 0 || static_cast<size_t>(m.rbegin()->first) >= l.subjects)) r->Fail();
  };
  subject_keys(comm_rank_);
  subject_keys(subject_global_rank_);
  GetMap(r, &address_owner_);
  const size_t nrules = rules_->rules().size();
  n = r->Count();
  for (size_t i = 0; i < n && r->ok(); ++i) {
    LineFindingAcc& a = line_findings_[r->S()];
    a.rule = r->Index(0, nrules);
    a.group = r->S();
    GetMap(r, &a.vars);
    size_t k = r->Count();
    for (size_t j = 0; j < k && r->ok(); ++j) a.subjects.insert(r->Index(0, l.subjects));
    k = r->Count();
    if (k > kMaxEvidencePerFinding) r->Fail();
    for (size_t j = 0; j < k && r->ok(); ++j) Get(r, &a.evidence.emplace_back(), l);
    a.count = r->I();
    CheckCount(r, a.count);
    Get(r, &a.first, l);
    Get(r, &a.last, l);
    a.result = r->S();
  }
  GetMap(r, &hint_hosts_);
  GetStrings(r, &subject_address_);
  GetStrings(r, &identity_conflicts_);
  n = r->Count();
  for (size_t i = 0; i < n && r->ok(); ++i) {
    FrFile f;
    Get(r, &f);
    // A dump's ranks are ints (the Flight Recorder reader takes up to INT32_MAX).
    if (f.rank < -1) r->Fail();
    for (const auto& pg : f.dump.pg_config) {
      for (int rk : pg.second.ranks) {
        if (rk < 0) r->Fail();
      }
    }
    // Held as a scan holds them; entries past the bound are more than a scan keeps.
    if (r->ok() && HoldFlightRecorder(&flight_recorders_, &fr_entries_held_, std::move(f)) != 0) r->Fail();
  }
  n = r->Count();
  for (size_t i = 0; i < n && r->ok(); ++i) labels_not_ranks_.insert(r->Index(0, l.files));
  GetStrings(r, &open_warn_);
  Counters::Each(counters_, [&](uint64_t& v) { v = r->U(); });
  if (subject_address_.size() > l.subjects || open_warn_.size() > l.subjects) r->Fail();
  return r->ok() && r->done();
}

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
